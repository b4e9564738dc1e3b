import Foundation

/// How one pass over a durable queue (license reports, analytics events) ended.
enum OutboxPassResult: Sendable, Equatable {
    /// Everything the network allowed went out (or was refused for good).
    case finished
    /// The network policy held something back: it goes when the network changes.
    case waitingForNetwork
    /// A server could not be reached (no answer, 5xx, 429): the pass runs again after a back-off.
    case unreachable
    /// A server asked to be asked later (`Retry-After`): the pass runs again after the back-off,
    /// or after this long when that is longer.
    case serverBusy(retryAfter: Duration)
}

/// The sending side of a durable queue the manager owns (its items are stored first and
/// removed once their server took them): one pass at a time (a pass asked for while one runs
/// makes that one run once more), callers that wait for a whole pass, and after a pass that
/// could not reach its server another one after a back-off (the first delay, doubled each
/// time, at most `maximumDelay`; reset by a pass that gets through). Passes also run when the
/// network changes and at start (the manager's watchers); `close()` ends it for good.
///
/// Owned by the manager actor and used only on it (`isolation`).
final class Outbox {
    private var running = false
    private var again = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var failures = 0
    private var retry: Task<Void, Never>?
    private var due = false
    /// Set by `close()`: a pass checks it before each item and stops there.
    private(set) var isClosed = false
    private let initialDelay: Duration
    private let maximumDelay: Duration
    /// What a pass started later (`passSoon`, a retry after the back-off) runs: a pass through the manager.
    var startPass: (@Sendable () async -> Void)?

    init(initialDelay: Duration, maximumDelay: Duration = .seconds(300)) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// Runs `pass`, again while more was asked for meanwhile; during a pass, only asks for one more.
    func run(isolation: isolated (any Actor) = #isolation, _ pass: () async -> OutboxPassResult) async {
        due = false
        guard !isClosed else { return }
        guard !running else {
            again = true
            return
        }
        running = true
        var result = OutboxPassResult.finished
        repeat {
            again = false
            result = await pass()
        } while again && !isClosed
        running = false
        for waiter in waiters { waiter.resume() }
        waiters = []
        switch result {
        case .unreachable, .serverBusy:
            failures += 1
            if case .serverBusy(let asked) = result { scheduleRetry(after: max(backOff, asked)) } else { scheduleRetry(after: backOff) }
        case .finished:
            failures = 0
            retry?.cancel()
            retry = nil
        case .waitingForNetwork:
            break
        }
    }

    /// Runs a pass and returns when it ended; during a pass, returns once that one has run again.
    func runAndWait(isolation: isolated (any Actor) = #isolation, _ pass: () async -> OutboxPassResult) async {
        guard !isClosed else { return }
        if running {
            again = true
            await withCheckedContinuation(isolation: isolation) { waiters.append($0) }
        } else {
            await run(pass)
        }
    }

    /// Starts a pass in a new task, unless one is due already: a queue that just got an item.
    func passSoon() {
        guard !due, !isClosed, let startPass else { return }
        due = true
        Task { await startPass() }
    }

    /// Whether a retry waits for its back-off.
    var retryWaiting: Bool { retry != nil }

    /// Ends the outbox for good: no pass starts from now on, a retry waiting for its back-off is
    /// dropped, and a pass under way is waited for: it stops before its next item (the one being
    /// sent is finished and recorded), so nothing writes the store once this returns.
    func close(isolation: isolated (any Actor) = #isolation) async {
        isClosed = true
        retry?.cancel()
        retry = nil
        if running { await withCheckedContinuation(isolation: isolation) { waiters.append($0) } }
    }

    /// The wait before the next retry: `initialDelay` after the first failure, doubled per failure since.
    var backOff: Duration {
        var delay = initialDelay
        for _ in 1..<max(1, min(failures, 30)) where delay < maximumDelay { delay *= 2 }
        return min(delay, maximumDelay)
    }

    private func scheduleRetry(after delay: Duration) {
        retry?.cancel()
        guard !isClosed, let startPass else { return }
        retry = Task {
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            await startPass()
        }
    }
}
