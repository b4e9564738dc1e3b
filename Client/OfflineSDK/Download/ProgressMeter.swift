import Foundation

/// Exact, throttled progress for one download and each of its tracks.
///
/// Percent is bytes on disk over bytes expected, where a segment not yet fetched counts with
/// its estimate (bandwidth x duration) and a fetched one with its real size. It reaches 100
/// only when every segment is on disk; before that it is held below 100.
struct ProgressMeter: Sendable {
    /// The least time between two reports of the same download.
    var interval: Duration = .milliseconds(100)
    private var lastReport: ContinuousClock.Instant?

    init(interval: Duration = .milliseconds(100)) { self.interval = interval }

    /// Whether a report may go out at `now` (at most one per `interval`); records it if so.
    mutating func shouldReport(at now: ContinuousClock.Instant) -> Bool {
        if let lastReport, now - lastReport < interval { return false }
        lastReport = now
        return true
    }

    /// 0...100 from bytes done and bytes still expected; 100 only when `complete`.
    static func percent(done: Int64, remainingEstimate: Int64, complete: Bool) -> Double {
        if complete { return 100 }
        let total = done + max(remainingEstimate, 0)
        guard total > 0 else { return 0 }
        return min(99.9, Double(done) * 100 / Double(total))
    }
}
