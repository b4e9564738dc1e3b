import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Locking

/// A few connections to one database, shared by the threads of a server: a caller takes one
/// for the length of a call or transaction and gives it back. Sized to the HTTP server's
/// thread pool, so every request thread can hold one; a caller that finds them all busy waits
/// up to `acquireTimeout`, then gets `.poolExhausted`. Connections are opened as needed and
/// a broken one (server restarted) is dropped instead of returned.
package final class PostgresPool: Sendable {
    /// Connections open at most.
    package let size: Int
    private let url: String
    private let acquireTimeout: Duration
    /// One permit per connection slot; a caller holds one while it holds a connection.
    private let slots: DispatchSemaphore
    // A connection sits in `idle` only while no thread uses it; taking it out under the lock
    // hands it to exactly one thread, which gives it back the same way (`PostgresConnection`
    // is not Sendable; this ownership discipline is what makes sharing it sound).
    private let state = Locked(State())

    private struct State {
        /// Connections nobody holds, with when they were given back.
        var idle: [(connection: PostgresConnection, since: ContinuousClock.Instant)] = []
        var waiting = 0
        var closed = false
    }

    /// A pool of at most `size` connections to `url`. Connects nowhere yet (see `checkConnection`).
    package init(url: String, size: Int, acquireTimeout: Duration = .seconds(10)) throws(PostgresError) {
        guard size > 0 else { throw PostgresError(.invalidArgument, "a connection pool needs at least one connection, not \(size)") }
        guard !url.isEmpty else { throw PostgresError(.invalidArgument, "the database URL is empty") }
        self.size = size
        self.url = url
        self.acquireTimeout = acquireTimeout
        slots = DispatchSemaphore(value: size)
    }

    /// The URL with its password hidden, for messages.
    package var redactedURL: String { PostgresConnection.redacted(url) }

    /// Callers waiting for a connection now (for tests and readiness).
    package var waitingCount: Int { state.withLock { $0.waiting } }

    /// Connects once (or takes an idle connection) and runs `SELECT 1`: whether the database answers now.
    /// Throws a `PostgresError`.
    package func checkConnection() throws {
        try withConnection { (connection: PostgresConnection) throws(PostgresError) in _ = try connection.query("SELECT 1") }
    }

    /// Runs `body` with a connection of its own, given back afterwards.
    package func withConnection<T, Failure: Error>(_ body: (PostgresConnection) throws(Failure) -> T) throws -> T {
        let connection = try acquire()
        defer { release(connection) }
        return try body(connection)
    }

    /// Runs `body` in a transaction on a connection of its own: committed when `body` returns,
    /// rolled back when it throws. A transaction that loses a race (serialization failure,
    /// deadlock) runs again from the start, up to `retries` times, so `body` must do nothing
    /// but database work it is fine to repeat. Between attempts it waits a random moment that
    /// grows with each attempt (up to ~32 ms), so the same racers do not collide again in step.
    package func transaction<T>(_ isolation: PostgresConnection.Isolation = .readCommitted, retries: Int = 30,
                                _ body: (PostgresConnection) throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try withConnection { (connection: PostgresConnection) throws -> T in
                    try connection.transaction(isolation, body)
                }
            } catch let error as PostgresError where error.code == .serializationFailure && attempt < retries {
                attempt += 1
                usleep(UInt32.random(in: 0...(1000 << min(attempt, 5))))
            }
        }
    }

    /// Closes the idle connections and refuses new calls; connections in use close when given back.
    package func close() {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        withExtendedLifetime(idle) {}
    }

    // MARK: Lending

    /// How long a connection sits idle before it is checked when taken again.
    private static let idleCheckAfter = Duration.seconds(5)

    private func acquire() throws(PostgresError) -> PostgresConnection {
        let closed = state.withLock { state in
            if !state.closed { state.waiting += 1 }
            return state.closed
        }
        guard !closed else { throw PostgresError(.poolClosed, "the database connection pool is closed") }
        let deadline = DispatchTime.now() + .nanoseconds(Int(acquireTimeout.components.seconds * 1_000_000_000
                                                            + acquireTimeout.components.attoseconds / 1_000_000_000))
        let granted = slots.wait(timeout: deadline) == .success
        state.withLock { $0.waiting -= 1 }
        guard granted else {
            throw PostgresError(.poolExhausted, "all \(size) database connections stayed busy for \(acquireTimeout)")
        }
        do throws(PostgresError) {
            if let (idle, since) = state.withLock({ $0.idle.popLast() }) {
                // One that sat idle a while may have died with a restarted server: an empty query
                // (one round trip) tells, and a dead one means the others are likely dead too.
                // Busy connections skip the check; one that broke since its last use fails its
                // call with `.connectionLost` and is dropped.
                guard ContinuousClock.now - since > Self.idleCheckAfter else { return idle }
                if idle.isUsable, (try? idle.execute("")) != nil { return idle }
                state.withLock { $0.idle = [] }
            }
            return try PostgresConnection(url: url)
        } catch {
            slots.signal()
            throw error
        }
    }

    private func release(_ connection: PostgresConnection) {
        if connection.isUsable && !connection.isIdle { try? connection.execute("ROLLBACK") }
        let keep = connection.isUsable && connection.isIdle
        let dropped: [PostgresConnection] = state.withLock { state in
            guard keep && !state.closed else {
                // A connection lost (the server restarted or went away) means the idle ones
                // are most likely lost too: drop them now rather than fail their next callers.
                guard !connection.isUsable else { return [connection] }
                defer { state.idle = [] }
                return [connection] + state.idle.map(\.connection)
            }
            state.idle.append((connection, ContinuousClock.now))
            return []
        }
        withExtendedLifetime(dropped) {}  // closed here, outside the lock
        slots.signal()
    }
}
