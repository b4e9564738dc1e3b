import Foundation
import LicenseProtocol
import Postgres
import Synchronization

/// Licenses, their history, devices per user and used nonces in PostgreSQL, correct with any
/// number of instances deciding at once.
///
/// A license request is one READ COMMITTED transaction (`LicenseTransaction`) on a pool
/// connection of its own: the nonce's insert (a primary key: of two instances inserting the
/// same nonce the second waits for the first and then finds it taken), then
/// `pg_advisory_xact_lock` on the request's (account, user), then the reads and the decision
/// and the writes (one statement). Two requests for one user, on any instances, so decide
/// one after the other, and the second reads the devices the first registered: a user's
/// last device slot goes once. An advisory lock rather than `SELECT … FOR UPDATE`: a user has
/// no row of their own to lock (their first device has nothing to lock yet), and rather than
/// SERIALIZABLE: no request fails from contention. A license's own row is read `FOR UPDATE`,
/// so a renewal and a release of one license also go one at a time.
///
/// No batch writer here (unlike SQLite's `LicenseBatchWriter`): PostgreSQL already shares one
/// WAL flush between the commits of concurrent connections, and one writer thread per
/// instance, a round trip at a time, measured 2-5× slower than the pool's connections in
/// parallel on this 2-core machine (README, Benchmarks, 2026-11-27).
extension PostgresBackendStore: LicenseStorage {
    func process(_ request: LicenseRequest, accountID: String, now: Date) throws -> LicenseDecision {
        let prune = sincePrune.add(1, ordering: .relaxed).newValue % SQLiteBackendStore.pruneEvery == 0
        let decide = { (connection: PostgresConnection) throws -> LicenseDecision in
            try LicenseTransaction.run(request, accountID: accountID, now: now, pruneNonces: prune, in: LicenseSteps(connection: connection))
        }
        // Decided on the nonce alone: one statement (the nonce and the writes), atomic by itself,
        // with no BEGIN and COMMIT round trips around it.
        return try LicenseTransaction.decidesOnNonceAlone(request) ? pool.withConnection(decide) : pool.transaction(.readCommitted, decide)
    }

    /// Waits for, then holds until the transaction ends, the lock of one user's licenses.
    private static func lockUser(_ connection: PostgresConnection, accountID: String, userID: String) throws {
        try connection.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))",
                             [.int(Int64(userLockClass)), .text(accountID + "\u{1F}" + userID)])
    }

    func license(id: String) throws -> LicenseRecord? {
        try pool.withConnection { try Self.license($0, id: id, forUpdate: false) }
    }

    func history(licenseID: String) throws -> [(event: String, at: Date)] {
        try events(licenseID: licenseID).map { (event: $0.event, at: $0.at) }
    }

    func devices(accountID: String, userID: String) throws -> Set<String> {
        try pool.withConnection { connection in
            Set(try connection.query("SELECT device_id FROM device WHERE account_id = $1 AND user_id = $2", [.text(accountID), .text(userID)])
                .rows.map { try $0["device_id"] as String })
        }
    }

    func licenses(_ filter: LicenseFilter, now: Date, limit: Int) throws -> [LicenseRecord] {
        let conditions = filter.conditions
        var arguments = conditions.map { PostgresValue.text($0.value) }
        var sql = "SELECT * FROM license \(Self.whereClause(conditions.map(\.column))) ORDER BY issued_at DESC, id DESC"
        if filter.state == nil {  // the state is computed from the row: filter it here, then count
            arguments.append(.int(Int64(limit)))
            sql += " LIMIT $\(arguments.count)"
        }
        let records = try pool.withConnection { connection in try connection.query(sql, arguments).rows.compactMap(Self.record) }
        return Array(records.lazy.filter { filter.state == nil || $0.state(at: now) == filter.state }.prefix(limit))
    }

    func revoke(id: String, now: Date) throws -> LicenseRecord? {
        try pool.transaction { connection in
            guard try Self.license(connection, id: id, forUpdate: true) != nil else { return nil }
            try connection.query("UPDATE license SET revoked_at = COALESCE(revoked_at, $1), updated_at = $1 WHERE id = $2",
                                 [.double(now.timeIntervalSince1970), .text(id)])
            try connection.query("INSERT INTO license_event (license_id, event, at) VALUES ($1, 'revoke', $2)", [.text(id), .double(now.timeIntervalSince1970)])
            return try Self.license(connection, id: id, forUpdate: false)
        }
    }

    func events(licenseID: String) throws -> [LicenseEvent] {
        try pool.withConnection { connection in
            try connection.query("SELECT event, at, kind, expires_at, first_play FROM license_event WHERE license_id = $1 ORDER BY id",
                                 [.text(licenseID)]).rows.map { row in
                LicenseEvent(event: try row["event"], at: Date(timeIntervalSince1970: try row["at"]), kind: try row["kind"],
                             expiresAt: (try row["expires_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                             firstPlay: (try row["first_play"] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    func registeredDevices(accountID: String, userID: String?) throws -> [RegisteredDevice] {
        try pool.withConnection { connection in
            try connection.query("""
                SELECT user_id, device_id, registered_at FROM device WHERE account_id = $1 AND ($2::text IS NULL OR user_id = $2)
                ORDER BY user_id, registered_at
                """, [.text(accountID), PostgresValue(userID)]).rows.map { row in
                RegisteredDevice(accountID: accountID, userID: try row["user_id"], deviceID: try row["device_id"],
                                 registeredAt: Date(timeIntervalSince1970: try row["registered_at"]))
            }
        }
    }

    func removeDevice(accountID: String, deviceID: String, userID: String?) throws -> Int {
        try pool.withConnection { connection in
            try connection.query("DELETE FROM device WHERE account_id = $1 AND device_id = $2 AND ($3::text IS NULL OR user_id = $3)",
                                 [.text(accountID), .text(deviceID), PostgresValue(userID)]).affectedRows
        }
    }

    // MARK: Rows

    private static func license(_ connection: PostgresConnection, id: String, forUpdate: Bool) throws -> LicenseRecord? {
        try connection.query("SELECT terms, user_id, released_at, revoked_at FROM license WHERE id = $1" + (forUpdate ? " FOR UPDATE" : ""),
                             [.text(id)]).rows.first.map(record)
    }

    private static func record(_ row: PostgresRow) throws -> LicenseRecord {
        func date(_ column: String) throws -> Date? { (try row[column] as Double?).map(Date.init(timeIntervalSince1970:)) }
        return try LicenseRecord(storedTerms: try row["terms"], userID: try row["user_id"], releasedAt: try date("released_at"),
                                 revokedAt: try date("revoked_at"))
    }

    /// The license transaction's steps in PostgreSQL, inside one READ COMMITTED transaction.
    struct LicenseSteps: LicenseTransactionSteps {
        let connection: PostgresConnection

        func pruneNonces(before: Date) throws {
            try connection.query("DELETE FROM used_nonce WHERE expires_at < $1", [.double(before.timeIntervalSince1970)])
        }

        func consumeNonce(_ nonce: [UInt8], until: Date) throws -> Bool {
            try connection.query("INSERT INTO used_nonce (nonce, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                                 [.bytes(nonce), .double(until.timeIntervalSince1970)]).affectedRows > 0
        }

        func lockUser(accountID: String, userID: String) throws {
            try PostgresBackendStore.lockUser(connection, accountID: accountID, userID: userID)
        }

        func license(id: String) throws -> LicenseRecord? {
            try PostgresBackendStore.license(connection, id: id, forUpdate: true)
        }

        func devices(accountID: String, userID: String) throws -> Set<String> {
            Set(try connection.query("SELECT device_id FROM device WHERE account_id = $1 AND user_id = $2", [.text(accountID), .text(userID)])
                .rows.map { try $0["device_id"] as String })
        }

        func otherLicensesOnDevice(accountID: String, userID: String, deviceID: String, excluding licenseID: String) throws -> Int {
            try connection.query("""
                SELECT count(*) AS n FROM license WHERE account_id = $1 AND user_id = $2 AND device_id = $3
                AND released_at IS NULL AND persistable AND id != $4
                """, [.text(accountID), .text(userID), .text(deviceID), .text(licenseID)]).rows[0]["n"]
        }

        /// One statement (one round trip): the license, its history row and the device.
        func write(_ record: LicenseRecord, event: LicenseRequestKind, registering device: String?, now: Date) throws {
            try connection.query(Self.writeStatement(guardedByNonce: false), Self.writeArguments(record, event: event, registering: device, now: now))
        }

        /// One statement: the nonce, and the writes only if it was new.
        func consumeNonce(_ nonce: [UInt8], until: Date, thenWrite issued: (record: LicenseRecord, device: String?)?,
                          event: LicenseRequestKind, now: Date) throws -> Bool {
            guard let issued else { return try consumeNonce(nonce, until: until) }
            let arguments = Self.writeArguments(issued.record, event: event, registering: issued.device, now: now)
                + [.bytes(nonce), .double(until.timeIntervalSince1970)]
            return try connection.query(Self.writeStatement(guardedByNonce: true), arguments).rows[0]["n"] as Int64 > 0
        }

        /// The license (new, or replacing the one with its id), its history row and the device
        /// it registers, written once per row of the source: one row, or with `guardedByNonce`
        /// the nonce ($15, until $16) if its insert was new, else none. Parameters are cast, as
        /// `INSERT … SELECT` does not infer their types from the columns.
        private static func writeStatement(guardedByNonce: Bool) -> String {
            let source = guardedByNonce ? "nonce" : "(VALUES (1)) AS once (n)"
            let nonce = guardedByNonce
                ? "nonce AS (INSERT INTO used_nonce (nonce, expires_at) VALUES ($15::bytea, $16::float8) ON CONFLICT DO NOTHING RETURNING 1),\n"
                : ""
            return """
                WITH \(nonce)written AS (
                  INSERT INTO license (id, account_id, video_id, device_id, user_id, issued_at, persistable, terms, released_at, updated_at)
                  SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::float8, $7::boolean, $8::text, NULL::float8, $9::float8 FROM \(source)
                  ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id, video_id = excluded.video_id, device_id = excluded.device_id,
                    user_id = excluded.user_id, issued_at = excluded.issued_at, persistable = excluded.persistable, terms = excluded.terms,
                    released_at = NULL, updated_at = excluded.updated_at, revoked_at = NULL),
                history AS (
                  INSERT INTO license_event (license_id, event, at, kind, expires_at, first_play)
                  SELECT $1::text, $10::text, $9::float8, $11::text, $12::float8, $13::float8 FROM \(source)),
                registered AS (
                  INSERT INTO device (account_id, user_id, device_id, registered_at)
                  SELECT $2::text, $5::text, $14::text, $9::float8 FROM \(source) WHERE $5::text IS NOT NULL AND $14::text IS NOT NULL
                  ON CONFLICT DO NOTHING)
                SELECT count(*) AS n FROM \(source)
                """
        }

        private static func writeArguments(_ record: LicenseRecord, event: LicenseRequestKind, registering device: String?,
                                           now: Date) -> [PostgresValue] {
            let t = record.terms
            return [.text(t.licenseID), .text(t.accountID), .text(t.videoID), .text(t.deviceID), PostgresValue(record.userID),
                    .double(t.issuedAt.timeIntervalSince1970), .bool(t.persistable), .text(LicenseRecord.storedTerms(t)),
                    .double(now.timeIntervalSince1970), .text(event.rawValue), .text(t.kind.rawValue),
                    PostgresValue(t.expiresAt?.timeIntervalSince1970), PostgresValue(t.firstPlay?.timeIntervalSince1970),
                    PostgresValue(device)]
        }

        func release(licenseID: String, at releasedAt: Date, userID: String?, freeing device: String?) throws {
            let when = PostgresValue.double(releasedAt.timeIntervalSince1970)
            try connection.query("UPDATE license SET released_at = $1, updated_at = $1 WHERE id = $2", [when, .text(licenseID)])
            try connection.query("INSERT INTO license_event (license_id, event, at) VALUES ($1, 'release', $2)", [.text(licenseID), when])
            if let device, let userID {
                try connection.query("""
                    DELETE FROM device WHERE account_id = (SELECT account_id FROM license WHERE id = $1) AND user_id = $2 AND device_id = $3
                    """, [.text(licenseID), .text(userID), .text(device)])
            }
        }
    }
}
