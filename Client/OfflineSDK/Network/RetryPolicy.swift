import CurlTransfer
import Foundation
import WireModels

/// When a failed request is tried again, and when the work it belongs to gives up. One rule for
/// every request the SDK makes (segments, playlists, keys, the Playback API, certificates,
/// licenses, license reports, analytics):
///
/// - What is retried: transport failures that may pass (no connection, a timeout, a cut
///   connection, a body that came short or wrong) and the statuses that say "later": 408, 429
///   and every 5xx.
/// - How long it waits: exponential back-off per item (segment or request) from `initialDelay`,
///   doubled per failure of that item up to `maxDelay`, with "equal jitter" (half fixed, half
///   random) so parallel transfers that failed together do not come back together; and never
///   less than a `Retry-After` the server sent.
/// - When it gives up: only after `failuresWithoutProgress` failures **and** `timeWithoutProgress`
///   with no progress (no byte received and kept, across all the work's transfers). Media3's
///   download manager has the same shape ("fail after N errors without progress"); the time
///   floor keeps a burst of simultaneous failures of parallel transfers from counting as a
///   long outage.
struct RetryPolicy: Sendable, Equatable {
    /// Failures without progress before the work fails (default 10).
    var failuresWithoutProgress = 10
    /// Time without progress before the work fails (default 30 s).
    var timeWithoutProgress: Duration = .seconds(30)
    /// The wait after an item's first failure (default 250 ms).
    var initialDelay: Duration = .milliseconds(250)
    /// The longest back-off (default 8 s); a server's `Retry-After` may ask for longer.
    var maxDelay: Duration = .seconds(8)

    /// One try, no retry: for work a durable queue tries again later (the license reports).
    static let singleAttempt = RetryPolicy(failuresWithoutProgress: 1, timeWithoutProgress: .zero)

    /// The wait before trying an item again after its `failures`-th failure in a row (1 or more):
    /// the back-off with `jitter` (0 ≤ jitter < 1) taking up to half of it away, or `retryAfter`
    /// when the server asked for longer.
    func delay(afterFailures failures: Int, jitter: Double, retryAfter: Duration? = nil) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        let backOff = min(initialDelay * (1 << exponent), maxDelay)
        let jittered = backOff / 2 + backOff / 2 * min(max(jitter, 0), 1)
        return max(jittered, retryAfter ?? .zero)
    }

    /// `delay(afterFailures:jitter:retryAfter:)` with a random jitter.
    func delay(afterFailures failures: Int, retryAfter: Duration? = nil) -> Duration {
        delay(afterFailures: failures, jitter: Double.random(in: 0..<1), retryAfter: retryAfter)
    }

    /// Whether an answer with this status may succeed later.
    static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (500...599).contains(status)
    }

    /// Whether a transfer that failed this way may succeed later.
    static func isRetryable(_ error: TransferError) -> Bool {
        if let status = error.code.httpStatus { return isRetryable(status: status) }
        return passing.contains(error.code)
    }

    /// Transport failures that may not happen again.
    private static let passing: Set<TransferError.Code> = [
        .couldNotResolveHost, .couldNotConnect, .timedOut, .connectionLost, .lengthMismatch, .contentMismatch,
    ]
}

/// Whether a piece of work (a download, a request) still makes progress, by the rule of
/// `RetryPolicy`: failures are counted since the last progress, with the items they hit and the
/// last cause, so a give-up says what happened. A value type with an injected clock.
struct ProgressWatch<Item: Hashable & Sendable>: Sendable {
    let policy: RetryPolicy
    /// When the work last made progress (or started).
    private(set) var lastProgress: ContinuousClock.Instant
    /// Failures since then.
    private(set) var failures = 0
    /// The items those failures hit.
    private(set) var failingItems: Set<Item> = []
    /// Failures in a row per item (for its back-off); an item that succeeds is forgotten.
    private var itemFailures: [Item: Int] = [:]
    /// The last failure's cause.
    private(set) var lastCause: String?

    init(policy: RetryPolicy, start: ContinuousClock.Instant) {
        self.policy = policy
        lastProgress = start
    }

    /// Bytes were received and kept, or an item finished: the count starts again.
    mutating func recordProgress(at now: ContinuousClock.Instant) {
        lastProgress = now
        failures = 0
        failingItems = []
    }

    /// An item finished, or brought bytes that are kept: its own back-off starts again too.
    mutating func recordProgress(of item: Item, at now: ContinuousClock.Instant) {
        itemFailures[item] = nil
        recordProgress(at: now)
    }

    /// A failure of `item`; returns the item's failures in a row (for its back-off).
    @discardableResult
    mutating func recordFailure(of item: Item, cause: String) -> Int {
        failures += 1
        failingItems.insert(item)
        lastCause = cause
        let count = itemFailures[item, default: 0] + 1
        itemFailures[item] = count
        return count
    }

    /// Whether the work must now give up: enough failures and enough time without progress.
    func shouldGiveUp(at now: ContinuousClock.Instant) -> Bool {
        failures >= max(1, policy.failuresWithoutProgress) && now - lastProgress >= policy.timeWithoutProgress
    }

    /// What happened, for the give-up's message: "12 failures on 7 segments over 31 s without
    /// progress; the last: HTTP 503".
    func summary(at now: ContinuousClock.Instant, noun: String) -> String {
        let seconds = Int((now - lastProgress).components.seconds)
        let items = failingItems.count == 1 ? "1 \(noun)" : "\(failingItems.count) \(noun)s"
        return "\(failures) failure\(failures == 1 ? "" : "s") on \(items) over \(seconds) s without progress; the last: \(lastCause ?? "unknown")"
    }
}

/// What one try of a request came to.
enum Attempt<Success, Failure: Error> {
    case done(Success)
    /// A failure that may pass: tried again after the back-off, or after `retryAfter` when the
    /// server asked for longer.
    case again(Failure, retryAfter: Duration?)
    /// A failure for good.
    case failed(Failure)
}

extension RetryPolicy {
    /// Runs `attempt` (given its number, from 1) until it is done or fails for good, or until the
    /// policy gives up on it (then its last failure is thrown). Cancelling the task ends the wait
    /// between tries with the last failure.
    func retrying<Success, Failure: Error>(_ attempt: (Int) async -> Attempt<Success, Failure>) async throws(Failure) -> Success {
        var watch = ProgressWatch<Int>(policy: self, start: .now)
        var number = 1
        while true {
            switch await attempt(number) {
            case .done(let value): return value
            case .failed(let failure): throw failure
            case .again(let failure, let retryAfter):
                let failures = watch.recordFailure(of: 0, cause: "\(failure)")
                if watch.shouldGiveUp(at: .now) { throw failure }
                do { try await Task.sleep(for: delay(afterFailures: failures, retryAfter: retryAfter)) } catch { throw failure }
                number += 1
            }
        }
    }

    /// The wait a `Retry-After` value asks for now, if it is one.
    static func retryAfter(_ value: String?) -> Duration? {
        value.flatMap { RetryAfter.delay(from: $0, now: Date()) }
    }
}
