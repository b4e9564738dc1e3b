import Foundation
import LicenseProtocol
import Postgres
import Synchronization
import WireModels

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
/// Requests decided on their nonce alone (`LicenseTransaction.decidesOnNonceAlone`: anonymous
/// acquisitions, most of the traffic) go through a `LicenseBatchWriter` instead: those that
/// arrive together are one statement (`consumeNonces`), atomic by itself with no BEGIN and
/// COMMIT around it, so they share its round trip, its executor set-up and its WAL flush; each
/// answer still waits for that commit. The nonces are inserted in key order, so two instances'
/// batches never wait on each other's rows in a cycle.
extension PostgresBackendStore: LicenseStorage {
    func submit(_ request: LicenseRequest, accountID: String, now: Date, completion: @escaping LicenseBatchWriter.Completion) {
        if LicenseTransaction.decidesOnNonceAlone(request) {
            return licenseWriter.submit(request, accountID: accountID, now: now, completion: completion)
        }
        let prune = sincePrune.add(1, ordering: .relaxed).newValue % LicenseTransaction.pruneEvery == 0
        completion(Result {
            try pool.transaction(.readCommitted) { connection in
                try LicenseTransaction.run(request, accountID: accountID, now: now, pruneNonces: prune, in: LicenseSteps(connection: connection))
            }
        })
    }

    /// One batch of the license writer (requests decided on their nonce alone): one statement.
    static func commitLicenses(_ batch: [LicenseBatchWriter.Decision], pruneNonces: Bool,
                               in pool: PostgresPool) throws -> [LicenseDecision] {
        try pool.withConnection { connection in
            let steps = LicenseSteps(connection: connection)
            if pruneNonces, let first = batch.first { try steps.pruneNonces(before: first.now) }
            return try LicenseTransaction.decideOnNonceAlone(batch.map { ($0.request, $0.now) }, in: steps)
        }
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
            try connection.query("DELETE FROM used_spc WHERE expires_at < $1", [.double(before.timeIntervalSince1970)])
        }

        func consumeNonce(_ nonce: [UInt8], until: Date) throws -> Bool {
            try connection.query("INSERT INTO used_spc (key, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                                 [.bytes(LicenseTransaction.replayKey(nonce: nonce, until: until)), .double(until.timeIntervalSince1970)])
                .affectedRows > 0
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
            let t = record.terms
            try connection.query("""
                WITH written AS (
                  INSERT INTO license (id, account_id, video_id, device_id, user_id, issued_at, persistable, terms, released_at, updated_at)
                  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9)
                  ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id, video_id = excluded.video_id, device_id = excluded.device_id,
                    user_id = excluded.user_id, issued_at = excluded.issued_at, persistable = excluded.persistable, terms = excluded.terms,
                    released_at = NULL, updated_at = excluded.updated_at, revoked_at = NULL),
                history AS (
                  INSERT INTO license_event (license_id, event, at, kind, expires_at, first_play) VALUES ($1, $10, $9, $11, $12, $13))
                INSERT INTO device (account_id, user_id, device_id, registered_at)
                SELECT $2::text, $5::text, $14::text, $9::float8 WHERE $5::text IS NOT NULL AND $14::text IS NOT NULL
                ON CONFLICT DO NOTHING
                """, [.text(t.licenseID), .text(t.accountID), .text(t.videoID), .text(t.deviceID), PostgresValue(record.userID),
                      .double(t.issuedAt.timeIntervalSince1970), .bool(t.persistable), .text(LicenseRecord.storedTerms(t)),
                      .double(now.timeIntervalSince1970), .text(event.rawValue), .text(t.kind.rawValue),
                      PostgresValue(t.expiresAt?.timeIntervalSince1970), PostgresValue(t.firstPlay?.timeIntervalSince1970),
                      PostgresValue(device)])
        }

        /// One statement for the whole batch: the used SPCs (in key order), then, for those that
        /// were new, the licenses, their history rows and the devices they register. New
        /// licenses only (a request decided on its nonce alone names none): a clash of ids
        /// fails the statement, and so the batch, rather than replace a license.
        func consumeNonces(_ writes: [NonceWrite]) throws -> [Bool] {
            guard !writes.isEmpty else { return [] }
            func column(_ value: (NonceWrite) -> String?) -> PostgresValue { .array(writes.map(value)) }
            func terms(_ value: (LicenseTerms) -> String?) -> PostgresValue { column { $0.issued.flatMap { value($0.record.terms) } } }
            let hex = writes.map { Hex.lowercase($0.replayKey) }
            let fresh = try connection.query("""
                WITH input AS (
                  SELECT * FROM unnest($1::text[], $2::float8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::float8[],
                                       $9::boolean[], $10::text[], $11::float8[], $12::text[], $13::text[], $14::float8[], $15::float8[], $16::text[])
                    AS i (key, until, id, account_id, video_id, device_id, user_id, issued_at, persistable, terms, at, event, kind,
                          expires_at, first_play, registering)),
                used AS (
                  INSERT INTO used_spc (key, expires_at) SELECT decode(key, 'hex'), until FROM input ORDER BY key
                  ON CONFLICT DO NOTHING RETURNING encode(key, 'hex') AS key),
                fresh AS (SELECT input.* FROM input JOIN used USING (key) WHERE input.id IS NOT NULL),
                written AS (
                  INSERT INTO license (id, account_id, video_id, device_id, user_id, issued_at, persistable, terms, released_at, updated_at)
                  SELECT id, account_id, video_id, device_id, user_id, issued_at, persistable, terms, NULL, at FROM fresh),
                history AS (
                  INSERT INTO license_event (license_id, event, at, kind, expires_at, first_play)
                  SELECT id, event, at, kind, expires_at, first_play FROM fresh),
                registered AS (
                  INSERT INTO device (account_id, user_id, device_id, registered_at)
                  SELECT account_id, user_id, registering, at FROM fresh WHERE user_id IS NOT NULL AND registering IS NOT NULL
                  ON CONFLICT DO NOTHING)
                SELECT key FROM used
                """, [.array(hex), column { String($0.until.timeIntervalSince1970) },
                      terms { $0.licenseID }, terms { $0.accountID }, terms { $0.videoID }, terms { $0.deviceID }, column { $0.issued?.record.userID },
                      terms { String($0.issuedAt.timeIntervalSince1970) }, terms { $0.persistable ? "t" : "f" },
                      terms { LicenseRecord.storedTerms($0) }, column { String($0.now.timeIntervalSince1970) }, column { $0.event.rawValue },
                      terms { $0.kind.rawValue }, terms { $0.expiresAt.map { String($0.timeIntervalSince1970) } },
                      terms { $0.firstPlay.map { String($0.timeIntervalSince1970) } }, column { $0.issued?.device }])
            let inserted = Set(try fresh.rows.map { try $0["key"] as String })
            return hex.map(inserted.contains)
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
