#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`: the one lock type of the project.
///
/// `Synchronization.Mutex` on Linux is built on a raw futex, which ThreadSanitizer does not
/// see, so every access under it looked racy and no real race could be told from a false one.
/// TSan intercepts pthread mutexes, so state guarded by `Locked` is checked for what it is
/// (`make test-tsan`). A class, so closures and other objects share it by reference.
///
/// ```swift
/// let counter = Locked(0)
/// counter.withLock { $0 += 1 }
/// ```
public final class Locked<Value>: @unchecked Sendable {
    // Sound: `value` is only read or written with `mutex` held, and the mutex lives at a
    // stable heap address for the life of the object.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")  // only fails without memory
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held. Never call `withLock` of the same object
    /// inside `body` (the mutex is not recursive).
    @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
