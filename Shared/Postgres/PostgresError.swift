/// Why a PostgreSQL call failed: a stable `code`, the server's SQLSTATE when the server
/// answered, a message for a person, and the error underneath (if any).
package struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable.
    package var code: Code
    /// The server's five-character SQLSTATE (e.g. "23505" for a unique violation); nil when
    /// the error did not come from the server (no connection, a value that did not decode).
    package var sqlState: String?
    /// What went wrong, for a person (the server's message when it answered).
    package var message: String
    /// The error underneath, when there is one.
    package var underlying: (any Error & Sendable)?

    /// Creates an error.
    package init(_ code: Code, _ message: String, sqlState: String? = nil, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.underlying = underlying
    }

    package var description: String {
        "PostgreSQL \(code): \(message)" + (sqlState.map { " (SQLSTATE \($0))" } ?? "")
    }

    /// Whether the same transaction, run again from its start, may succeed: a serialization
    /// failure (40001) or a deadlock (40P01).
    package var isTransient: Bool { code == .serializationFailure }

    /// Whether a constraint refused a write: unique (23505).
    package var isUniqueViolation: Bool { sqlState == "23505" }

    /// The kinds of failure. A struct over a private enum, so kinds can be added later
    /// without breaking anyone's exhaustive switch.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connectionFailed, connectionLost, poolExhausted, poolClosed, queryFailed, constraintViolation,
                 serializationFailure, decodingFailed, invalidArgument
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No connection could be made: the server is down, refuses us, or the URL is wrong.
        package static let connectionFailed = Code(.connectionFailed)
        /// The connection broke during a call (server restarted or stopped, network gone).
        /// Whether the call's work was committed is unknown.
        package static let connectionLost = Code(.connectionLost)
        /// Every connection of the pool stayed busy for the whole wait.
        package static let poolExhausted = Code(.poolExhausted)
        /// The pool was closed.
        package static let poolClosed = Code(.poolClosed)
        /// The server refused a statement (syntax, a missing table, a type mismatch, …).
        package static let queryFailed = Code(.queryFailed)
        /// A constraint refused a write (SQLSTATE class 23: unique, foreign key, not null, check).
        package static let constraintViolation = Code(.constraintViolation)
        /// The transaction lost a race (40001 serialization failure, 40P01 deadlock) and may be retried.
        package static let serializationFailure = Code(.serializationFailure)
        /// A column's value was not of the type asked for (or NULL where a value was needed).
        package static let decodingFailed = Code(.decodingFailed)
        /// A call that cannot work as asked (an empty URL, a pool of no connections).
        package static let invalidArgument = Code(.invalidArgument)

        /// The stable name of the kind, e.g. "connectionLost".
        package var description: String { base.rawValue }
    }

    /// The code for a server error of `sqlState`.
    static func code(forSQLState sqlState: String) -> Code {
        switch sqlState {
        case "40001", "40P01": .serializationFailure
        // 57P01-57P03: the server is shutting down or cannot connect now; 08: connection exceptions.
        case "57P01", "57P02", "57P03": .connectionLost
        default:
            if sqlState.hasPrefix("08") { .connectionLost }
            else if sqlState.hasPrefix("23") { .constraintViolation }
            else { .queryFailed }
        }
    }
}
