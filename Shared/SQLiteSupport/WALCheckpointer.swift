package import Foundation
import GRDB
import Locking

/// Checkpoints a WAL database from a connection and a thread of its own, so that the
/// connection that writes does not stop for it: a checkpoint copies the WAL's pages into the
/// database and syncs both files, which in the writer's commit (SQLite's automatic checkpoint)
/// held every commit behind it for tens of milliseconds. PASSIVE checkpoints run beside the
/// writer's commits and never block them; the writer's own automatic checkpoint stays as the
/// backstop that lets the WAL start over (it finds the pages already copied).
package final class WALCheckpointer: Sendable {
    private let state: State
    /// Lets go of its connection before the checkpointer is gone, so the database can be
    /// opened again at once (a restart in the same process).
    private let thread: JoinedThread

    /// Starts checkpointing the database at `path` every `interval` with a connection opened
    /// with `setup`'s pragmas and busy timeout. The thread is named `name`.
    package init(path: String, setup: SQLiteSetup, every interval: TimeInterval, name: String) throws {
        let state = State(queue: try DatabaseQueue(path: path, configuration: setup.configuration), interval: interval)
        self.state = state
        thread = JoinedThread(name: name, run: { state.run() }, stop: { state.stop() })
    }

    /// Rounds started so far.
    package var roundsStarted: Int { state.condition.withLock { state.rounds } }

    /// The last successful checkpoint: the round it ran in, the WAL's frames and how many of
    /// them are in the database; nil before the first one.
    package var lastCheckpoint: (round: Int, walFrames: Int, checkpointed: Int)? { state.condition.withLock { state.last } }

    /// Sendable without checking: every variable but `queue` is read and written with `condition`
    /// held; `queue` is used and then let go only by the checkpointer's own thread.
    private final class State: @unchecked Sendable {
        /// Let go (on the checkpointer's thread) once the loop ends.
        var queue: DatabaseQueue?
        let interval: TimeInterval
        let condition = NSCondition()
        // Guarded by `condition`.
        var stopping = false
        var rounds = 0
        var last: (round: Int, walFrames: Int, checkpointed: Int)?

        init(queue: DatabaseQueue, interval: TimeInterval) {
            self.queue = queue
            self.interval = interval
        }

        func stop() {
            condition.withLock {
                stopping = true
                condition.signal()
            }
        }

        func run() {
            while let round = nextRound() {
                // A busy or failing checkpoint is tried again next round; the writer's own
                // automatic checkpoint bounds the WAL meanwhile.
                if let outcome = try? queue?.writeWithoutTransaction({ db in try db.checkpoint(.passive) }) {
                    condition.withLock { last = (round, outcome.walFrameCount, outcome.checkpointedFrameCount) }
                }
            }
            queue = nil
        }

        /// Waits `interval`, then starts the next round; nil once stopping.
        private func nextRound() -> Int? {
            condition.withLock {
                let deadline = Date(timeIntervalSinceNow: interval)
                while !stopping && condition.wait(until: deadline) {}
                guard !stopping else { return nil }
                rounds += 1
                return rounds
            }
        }
    }
}
