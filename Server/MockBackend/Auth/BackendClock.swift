import Foundation
import Synchronization

/// The backend's notion of "now": the system clock plus an offset the admin API can move,
/// so a 30-day rental or a 6-hour token can be tested in seconds. Every token check and
/// license decision reads this clock, never `Date()` directly.
public final class BackendClock: Sendable {
    private let offsetMilliseconds = Atomic<Int>(0)

    /// Creates a clock with no offset.
    public init() {}

    /// The current time as the backend sees it.
    public func now() -> Date { Date().addingTimeInterval(offset) }

    /// The offset from the system clock, in seconds.
    public var offset: TimeInterval {
        get { TimeInterval(offsetMilliseconds.load(ordering: .relaxed)) / 1000 }
        set { offsetMilliseconds.store(Int((newValue * 1000).rounded()), ordering: .relaxed) }
    }
}
