#if canImport(CDispatch)
import CDispatch
#endif
import Dispatch
import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

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
/// Sendable without checking: its one stored property is a `DispatchQueue`, which is itself
/// thread-safe, and is never reassigned.
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
/// Sendable without checking: it stores only an immutable label; each job gets a queue of its own.
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

/// Records blocking calls made on the cooperative pool: every store statement and the SDK's
/// file reads and writes (`note`). Three ways to listen:
///
/// - a test sets an instance on the manager's configuration (`poolCheck`): its store's statements
///   on the pool are recorded there, for the test to read;
/// - a test that makes such a call on purpose runs it with a recorder bound
///   (`PoolCheck.$recorder.withValue(check) { … }`): the call is recorded there and nowhere else;
/// - with `OFFLINE_SDK_POOL_CHECK=trap` in the environment, any other such call stops the process,
///   naming the call (`list` only prints it; `make test` runs armed; docs/testing.md: The pool check).
final class PoolCheck: Sendable {
    private let seen = Locked<[String]>([])

    /// The calls made on the pool, in order.
    var violations: [String] { seen.withLock { $0 } }

    /// Where a call on the pool made on purpose is recorded (tests).
    @TaskLocal static var recorder: PoolCheck?

    /// Whether a call on the pool that no recorder expects stops the process.
    static let armed = ProcessInfoValue.poolCheck == "trap"
    /// With `OFFLINE_SDK_POOL_CHECK=list`, such a call is written to standard error instead (to
    /// find them all in one run).
    static let listing = ProcessInfoValue.poolCheck == "list"

    /// Notes `function` if it is called on the pool now: in `instance` (a configuration's), in the
    /// task's recorder, else, armed, by stopping the process.
    static func note(_ function: String = #function, file: String = #fileID, line: Int = #line, into instance: PoolCheck? = nil) {
        // Nothing listens (an app's run): no look at the thread, the store's hot path stays as it was.
        let recorder = Self.recorder
        guard instance != nil || recorder != nil || armed || listing, BlockingWork.onCooperativePool else { return }
        instance?.seen.withLock { $0.append(function) }
        if let recorder {
            recorder.seen.withLock { $0.append(function) }
            return
        }
        let message = "PoolCheck: \(function) (\(file):\(line)) blocked a thread of Swift's cooperative pool; run it through BlockingWork"
        if armed { fatalError(message) }
        if listing {
            let frames = Thread.callStackSymbols.dropFirst(2).prefix(8).joined(separator: "\n  ")
            _ = (message + "\n  " + frames + "\n").withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
    }

    /// Notes `function` if it is called on the pool now (the store's statements).
    func check(_ function: String = #function) {
        PoolCheck.note(function, into: self)
    }
}

/// The environment's setting of the pool check, read once.
private enum ProcessInfoValue {
    static let poolCheck: String? = getenv("OFFLINE_SDK_POOL_CHECK").map { String(cString: $0) }
}
