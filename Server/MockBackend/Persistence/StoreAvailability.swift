import Postgres

/// Whether a store failure means the database cannot be reached (down, restarting, the
/// network to it broken, every connection busy) rather than a fault in a request: those are
/// answered 503 `SERVICE_UNAVAILABLE` / `DATABASE_UNAVAILABLE` with `Retry-After`, so clients
/// and load balancers retry, instead of a 500.
enum StoreAvailability {
    static func isUnavailable(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return [.connectionFailed, .connectionLost, .poolExhausted, .poolClosed].contains(error.code)
    }

    /// The 503 for `error`.
    static func unavailable(_ error: any Error) -> HTTPError {
        HTTPError(503, "SERVICE_UNAVAILABLE", "DATABASE_UNAVAILABLE", "The database cannot be reached now; try again shortly (\(error))")
    }
}
