#if canImport(CDispatch)
import CDispatch
#endif
import Dispatch
import Locking

/// Where the SDK's blocking work runs: never on Swift's cooperative pool (two threads on a
/// two-core machine; a store call waiting out another process's write lock would hold one of
/// them for up to the store's busy timeout). The store is synchronous SQLite, so:
///
/// - the manager actor runs on a serial dispatch queue of its own (`ActorQueue`), so its store
///   calls block that queue, not the pool;
/// - download tasks run with `executor` as their task executor, so the runner's store calls
///   (and its children's) block a dispatch thread;
/// - anything else that reaches the store from nonisolated async code goes through `run`.
///
/// One rule, checked by a test: `PoolCheck` records every store call made on the cooperative
/// pool, and a flow through every part of the SDK records none.
enum BlockingWork {
    /// The task executor of download tasks: dispatch threads, not the cooperative pool.
    static let executor = WorkExecutor(label: "OfflineSDK.blocking-work")

    /// Runs `body` on a dispatch thread and returns what it returns; the calling task waits
    /// suspended, holding no thread.
    static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            executor.submit { continuation.resume(returning: Result { () throws(E) in try body() }) }
        }
        return try result.get()
    }

    /// Whether the calling thread is one of Swift's cooperative pool (the queue the global
    /// concurrent executor runs jobs on).
    static var onCooperativePool: Bool {
        #if canImport(CDispatch)
        String(cString: dispatch_queue_get_label(nil)) == "Swift global concurrent queue"
        #else
        false
        #endif
    }
}

/// The serial executor an actor runs on: a dispatch queue of its own, so blocking calls made
/// while isolated to the actor never hold a thread of the cooperative pool.
final class ActorQueue: SerialExecutor, @unchecked Sendable {
    let queue: DispatchQueue

    init(label: String) { queue = DispatchQueue(label: label) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}

/// An actor that runs on the manager's `ActorQueue` beside the manager and its other parts
/// (`OfflineLicenses`): they share one serial queue, so one may call another synchronously
/// (`onSharedQueue`), the call taking no step of its own. A check in one part and what depends on
/// it in another (a license checked, then a play window started) stay one atomic step.
protocol SharesManagerQueue: Actor {
    /// The manager's queue: `unownedExecutor` is this queue's.
    nonisolated var actorQueue: ActorQueue { get }
}

extension SharesManagerQueue {
    /// Runs `body` isolated to this actor, now, on the calling thread: for a caller already
    /// running on the shared queue (the manager or another part, while isolated). Anywhere else
    /// it stops the process (the runtime's isolation check), as any misuse of the queue should.
    nonisolated func onSharedQueue<T, E: Error>(_ body: (isolated Self) throws(E) -> T) throws(E) -> T {
        // What the standard library's `assumeIsolated` does, with typed throws and any result:
        // once the runtime has checked that this actor's executor runs the caller, a function
        // isolated to the actor may be called as a plain one (the two have the same ABI).
        preconditionIsolated("not on the manager's queue")
        return try withoutActuallyEscaping(body) { (isolated: @escaping (isolated Self) throws(E) -> T) throws(E) -> T in
            try unsafeBitCast(isolated, to: ((Self) throws(E) -> T).self)(self)
        }
    }
}

/// A task executor on dispatch's overcommitting threads: the nonisolated code of a task that
/// prefers it (and of its child tasks) runs there, not on the cooperative pool. Each job goes to
/// a serial queue of its own, so a job that blocks makes dispatch start another thread rather
/// than hold up the rest (a concurrent queue of ours would get as many threads as cores, and
/// two jobs waiting on a lock would stop every download and store call in the process).
final class WorkExecutor: TaskExecutor, @unchecked Sendable {
    let label: String

    init(label: String) { self.label = label }

    /// Runs `work` on a dispatch thread.
    func submit(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue(label: label).async(execute: work)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        submit { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor { UnownedTaskExecutor(ordinary: self) }
}

/// Records store calls made on the cooperative pool (a test sets one on the manager's
/// configuration; `BlockingWork`).
final class PoolCheck: Sendable {
    private let seen = Locked<[String]>([])

    /// The store methods called on the pool, in order.
    var violations: [String] { seen.withLock { $0 } }

    /// Notes `function` if it is called on the pool now.
    func check(_ function: String = #function) {
        guard BlockingWork.onCooperativePool else { return }
        seen.withLock { $0.append(function) }
    }
}
