import Foundation
import LicenseProtocol
import Locking

/// Group commit for license decisions: requests that arrive together are decided and written
/// by one writer thread in one transaction of the store, and each caller gets its decision
/// only once that transaction has committed (so an answer is exactly as durable as before).
///
/// The callers are MHD threads: each enqueues its decision with what to do once it is taken
/// (`submit`; the license route hands its suspended connection's answer over then, so no MHD
/// thread waits for a commit). The crypto (opening the SPC, signing the CKC) stays on those
/// threads, before and after; the writer only runs SQL and hands the decisions over.
///
/// The decisions of a batch run one after the other inside the transaction, each seeing what
/// the ones before it wrote, so the rules hold as with one transaction each: a nonce is taken
/// once, a user's last device slot goes once. A refusal writes nothing but its nonce and does
/// not touch the others. A store failure rolls the whole transaction back and every request
/// of the batch gets that error: nothing of the batch is written.
final class LicenseBatchWriter: Sendable {
    /// One decision to take.
    struct Decision: Sendable {
        let request: LicenseRequest
        let accountID: String
        let now: Date
    }

    /// Commits one batch: the decisions in order, one transaction, a decision each (or throws,
    /// and nothing of the batch is kept). `pruneNonces`: forget expired nonces first.
    typealias Commit = @Sendable (_ batch: [Decision], _ pruneNonces: Bool) throws -> [LicenseDecision]

    /// The most decisions in one transaction.
    static let maximumBatch = 128

    private let state: State
    /// The writer: once stopped, it ends when the queue is empty, and lets go of what its commit
    /// holds (the store's database) before the store is gone.
    private let thread: JoinedThread

    /// Starts the writer thread, named `name`.
    init(name: String, commit: @escaping Commit) {
        let state = State(commit: commit)
        self.state = state
        thread = JoinedThread(name: name, run: { state.run() }, stop: { state.stop() })
    }

    /// What is done with a decision once its batch has committed, or with the store's error
    /// when the batch failed. Runs on the writer thread: keep it short.
    typealias Completion = @Sendable (Result<LicenseDecision, any Error>) -> Void

    /// Queues `request`; `completion` gets its decision once its batch has committed.
    func submit(_ request: LicenseRequest, accountID: String, now: Date, completion: @escaping Completion) {
        state.submit(Waiter(Decision(request: request, accountID: accountID, now: now), completion))
    }

    /// Decisions waiting for the writer (not those in the batch it is writing): for tests.
    var waiting: Int { state.waiting }

    /// Batches the writer has taken so far (written, or being written): for tests.
    var batchesTaken: Int { state.batchesTaken }

    private struct Waiter: Sendable {
        let decision: Decision
        let completion: Completion
        init(_ decision: Decision, _ completion: @escaping Completion) {
            self.decision = decision
            self.completion = completion
        }
    }

    /// The queue and the writer's loop; the thread holds this, not the writer, so dropping
    /// the writer (with its store) stops the thread.
    /// Sendable without checking: every variable but `commit` is read and written with
    /// `condition` held; `commit` is written once, by the writer thread, after its loop ends.
    private final class State: @unchecked Sendable {
        /// Let go (on the writer thread) once the loop ends.
        var commit: Commit?
        let condition = NSCondition()
        // Guarded by `condition`.
        var queue: [Waiter] = []
        var stopping = false
        var taken = 0
        var sincePrune = 0

        init(commit: @escaping Commit) { self.commit = commit }

        var waiting: Int { condition.withLock { queue.count } }
        var batchesTaken: Int { condition.withLock { taken } }

        func submit(_ waiter: Waiter) {
            condition.withLock {
                queue.append(waiter)
                condition.signal()
            }
        }

        func stop() {
            condition.withLock {
                stopping = true
                condition.signal()
            }
        }

        func run() {
            while let batch = next() {
                let prune = sincePrune >= LicenseTransaction.pruneEvery
                if prune { sincePrune = 0 }
                sincePrune += batch.count
                let result = Result { try commit!(batch.map(\.decision), prune) }
                for (index, waiter) in batch.enumerated() {
                    waiter.completion(result.map { $0[index] })
                }
            }
            commit = nil
        }

        /// The next batch, waiting for one; nil once stopping with nothing queued.
        private func next() -> [Waiter]? {
            condition.withLock {
                while queue.isEmpty && !stopping { condition.wait() }
                guard !queue.isEmpty else { return nil }
                let batch = Array(queue.prefix(LicenseBatchWriter.maximumBatch))
                queue.removeFirst(batch.count)
                taken += 1
                return batch
            }
        }
    }
}
