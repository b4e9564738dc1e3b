import Foundation

/// When a failing segment is tried again, and when a download gives up: only after
/// `maxConsecutiveFailures` errors in a row with no segment finishing in between.
struct RetryPolicy: Sendable, Equatable {
    /// Errors in a row, without progress, that fail the download.
    var maxConsecutiveFailures = 5
    /// The wait after the first error; doubled after each further one.
    var initialDelay: Duration = .milliseconds(250)
    /// The longest wait.
    var maxDelay: Duration = .seconds(8)

    /// The wait before the next try after `failures` errors in a row (1 or more).
    func delay(afterFailures failures: Int) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        let delay = initialDelay * (1 << exponent)
        return min(delay, maxDelay)
    }
}

/// Counts errors in a row for one download; any finished segment resets it.
struct FailureStreak: Sendable, Equatable {
    private(set) var consecutive = 0

    /// Records an error; true when the download must now fail.
    mutating func recordFailure(policy: RetryPolicy) -> Bool {
        consecutive += 1
        return consecutive >= policy.maxConsecutiveFailures
    }

    /// Records a finished segment.
    mutating func recordProgress() { consecutive = 0 }
}
