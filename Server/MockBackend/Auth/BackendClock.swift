public import Foundation
import Synchronization

/// The backend's notion of "now": the system clock (or a fixed instant) plus an offset the
/// admin API can move, so a 30-day rental or a 6-hour token can be tested in seconds. Every
/// token check and license decision reads this clock, never `Date()` directly.
public final class BackendClock: Sendable {
    private let offsetMilliseconds = Atomic<Int>(0)
    /// The instant time stands still at (seconds since 1970), or nil for the system clock.
    private let fixed: Double?

    /// A clock that runs with the system clock.
    public init() { fixed = nil }

    /// A clock that stands still at `instant` until moved (`offset`, `advance(by:)`): a test
    /// reads the same time whenever it asks. Clients that sign their own requests with a
    /// time (the SDK's license requests) must use this clock too.
    public init(fixedAt instant: Date) { fixed = instant.timeIntervalSince1970 }

    /// The current time as the backend sees it.
    public func now() -> Date {
        (fixed.map { Date(timeIntervalSince1970: $0) } ?? Date()).addingTimeInterval(offset)
    }

    /// The offset from the system clock (or from the fixed instant), in seconds.
    public var offset: TimeInterval {
        get { TimeInterval(offsetMilliseconds.load(ordering: .relaxed)) / 1000 }
        set { offsetMilliseconds.store(Int((newValue * 1000).rounded()), ordering: .relaxed) }
    }

    /// Moves the clock forward (or back, with a negative interval).
    public func advance(by interval: TimeInterval) {
        offsetMilliseconds.add(Int((interval * 1000).rounded()), ordering: .relaxed)
    }
}
