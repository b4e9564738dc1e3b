import Foundation
import GRDB
import LicenseProtocol
import Synchronization

/// Licenses, their history, devices per user and used nonces in SQLite. License requests
/// that arrive together are decided one after the other in one write transaction by the
/// store's `LicenseBatchWriter` (group commit; `LicenseTransaction` for each; SQLite has one
/// writer at a time, so no user lock is needed): two concurrent requests can never both take
/// a user's last device slot, and each answer waits for its batch's commit.
extension SQLiteBackendStore: LicenseStorage {
    func submit(_ request: LicenseRequest, accountID: String, now: Date, completion: @escaping LicenseBatchWriter.Completion) {
        licenseWriter.submit(request, accountID: accountID, now: now, completion: completion)
    }

    /// One batch of decisions, in order, in one write transaction: all committed, or (on a
    /// store error) none.
    static func commitLicenses(_ batch: [LicenseBatchWriter.Decision], pruneNonces: Bool,
                               in pool: DatabasePool) throws -> [LicenseDecision] {
        try pool.write { db in
            let steps = LicenseSteps(db: db)
            return try batch.enumerated().map { index, decision in
                try LicenseTransaction.run(decision.request, accountID: decision.accountID, now: decision.now,
                                           pruneNonces: pruneNonces && index == 0, in: steps)
            }
        }
    }

    func license(id: String) throws -> LicenseRecord? {
        try pool.read { db in try Self.license(db, id: id) }
    }

    func history(licenseID: String) throws -> [(event: String, at: Date)] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT event, at FROM license_event WHERE license_id = ? ORDER BY id", arguments: [licenseID])
                .map { (event: $0["event"], at: Date(timeIntervalSince1970: $0["at"])) }
        }
    }

    func devices(accountID: String, userID: String) throws -> Set<String> {
        try pool.read { db in
            Set(try String.fetchAll(db, sql: "SELECT device_id FROM device WHERE account_id = ? AND user_id = ?",
                                    arguments: [accountID, userID]))
        }
    }

    // MARK: Admin

    func licenses(_ filter: LicenseFilter, now: Date, limit: Int) throws -> [LicenseRecord] {
        let conditions = filter.conditions
        let clause = conditions.isEmpty ? "" : "WHERE " + conditions.map { "\($0.column) = ?" }.joined(separator: " AND ")
        let arguments = conditions.map(\.value)
        let ids = try pool.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM license \(clause) ORDER BY issued_at DESC, id DESC",
                                arguments: StatementArguments(arguments))
        }
        var result: [LicenseRecord] = []
        for id in ids where result.count < limit {
            guard let record = try license(id: id) else { continue }
            if let state = filter.state, record.state(at: now) != state { continue }
            result.append(record)
        }
        return result
    }

    func revoke(id: String, now: Date) throws -> LicenseRecord? {
        try pool.write { db in
            guard try Self.license(db, id: id) != nil else { return nil }
            try db.execute(sql: "UPDATE license SET revoked_at = COALESCE(revoked_at, ?), updated_at = ? WHERE id = ?",
                           arguments: [now.timeIntervalSince1970, now.timeIntervalSince1970, id])
            try db.execute(sql: "INSERT INTO license_event (license_id, event, at) VALUES (?, 'revoke', ?)",
                           arguments: [id, now.timeIntervalSince1970])
            return try Self.license(db, id: id)
        }
    }

    func events(licenseID: String) throws -> [LicenseEvent] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT event, at, kind, expires_at, first_play FROM license_event WHERE license_id = ? ORDER BY id",
                             arguments: [licenseID]).map { row in
                LicenseEvent(event: row["event"], at: Date(timeIntervalSince1970: row["at"]), kind: row["kind"],
                             expiresAt: (row["expires_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                             firstPlay: (row["first_play"] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    func registeredDevices(accountID: String, userID: String?) throws -> [RegisteredDevice] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT user_id, device_id, registered_at FROM device WHERE account_id = ? AND (? IS NULL OR user_id = ?)
                ORDER BY user_id, registered_at
                """, arguments: [accountID, userID, userID]).map { row in
                RegisteredDevice(accountID: accountID, userID: row["user_id"], deviceID: row["device_id"],
                                 registeredAt: Date(timeIntervalSince1970: row["registered_at"]))
            }
        }
    }

    func removeDevice(accountID: String, deviceID: String, userID: String?) throws -> Int {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM device WHERE account_id = ? AND device_id = ? AND (? IS NULL OR user_id = ?)",
                           arguments: [accountID, deviceID, userID, userID])
            return db.changesCount
        }
    }

    // MARK: Rows

    static func license(_ db: Database, id: String) throws -> LicenseRecord? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT terms, user_id, released_at, revoked_at FROM license WHERE id = ?"),
                                         arguments: [id])
        else { return nil }
        func date(_ column: String) -> Date? { (row[column] as Double?).map(Date.init(timeIntervalSince1970:)) }
        return try LicenseRecord(storedTerms: row["terms"], userID: row["user_id"], releasedAt: date("released_at"), revokedAt: date("revoked_at"))
    }

    /// The license transaction's steps in SQLite, inside one write transaction.
    struct LicenseSteps: LicenseTransactionSteps {
        let db: Database

        func pruneNonces(before: Date) throws {
            try db.execute(sql: "DELETE FROM used_spc WHERE expires_at < ?", arguments: [before.timeIntervalSince1970])
        }

        func consumeNonce(_ nonce: [UInt8], until: Date) throws -> Bool {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO used_spc (key, expires_at) VALUES (?, ?)")
                .execute(arguments: [Data(LicenseTransaction.replayKey(nonce: nonce, until: until)), until.timeIntervalSince1970])
            return db.changesCount > 0
        }

        func lockUser(accountID: String, userID: String) throws {}  // the write transaction is the only writer

        func license(id: String) throws -> LicenseRecord? { try SQLiteBackendStore.license(db, id: id) }

        func devices(accountID: String, userID: String) throws -> Set<String> {
            Set(try String.fetchAll(db.cachedStatement(sql: "SELECT device_id FROM device WHERE account_id = ? AND user_id = ?"),
                                    arguments: [accountID, userID]))
        }

        func otherLicensesOnDevice(accountID: String, userID: String, deviceID: String, excluding licenseID: String) throws -> Int {
            try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM license WHERE account_id = ? AND user_id = ? AND device_id = ?
                AND released_at IS NULL AND persistable = 1 AND id != ?
                """, arguments: [accountID, userID, deviceID, licenseID]) ?? 0
        }

        func write(_ record: LicenseRecord, event: LicenseRequestKind, registering device: String?, now: Date) throws {
            let t = record.terms
            try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO license (id, account_id, video_id, device_id, user_id, issued_at, persistable, terms, released_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)
                """).execute(arguments: [t.licenseID, t.accountID, t.videoID, t.deviceID, record.userID, t.issuedAt.timeIntervalSince1970,
                                         t.persistable, LicenseRecord.storedTerms(t), now.timeIntervalSince1970])
            try db.cachedStatement(sql: "INSERT INTO license_event (license_id, event, at, kind, expires_at, first_play) VALUES (?, ?, ?, ?, ?, ?)")
                .execute(arguments: [t.licenseID, event.rawValue, now.timeIntervalSince1970, t.kind.rawValue,
                                     t.expiresAt?.timeIntervalSince1970, t.firstPlay?.timeIntervalSince1970])
            if let device, let user = record.userID {
                try db.execute(sql: "INSERT OR IGNORE INTO device (account_id, user_id, device_id, registered_at) VALUES (?, ?, ?, ?)",
                               arguments: [t.accountID, user, device, now.timeIntervalSince1970])
            }
        }

        func release(licenseID: String, at: Date, userID: String?, freeing device: String?) throws {
            try db.execute(sql: "UPDATE license SET released_at = ?, updated_at = ? WHERE id = ?",
                           arguments: [at.timeIntervalSince1970, at.timeIntervalSince1970, licenseID])
            try db.execute(sql: "INSERT INTO license_event (license_id, event, at) VALUES (?, 'release', ?)",
                           arguments: [licenseID, at.timeIntervalSince1970])
            if let device, let userID {
                try db.execute(sql: "DELETE FROM device WHERE account_id = (SELECT account_id FROM license WHERE id = ?) AND user_id = ? AND device_id = ?",
                               arguments: [licenseID, userID, device])
            }
        }
    }

    /// The "v9" change: used SPCs keyed by time (`LicenseTransaction.replayKey`) in a table
    /// without row ids, instead of by the random nonce; the nonces kept so far move over.
    static func keyUsedSPCsByTime(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE used_spc (key BLOB PRIMARY KEY, expires_at REAL NOT NULL) WITHOUT ROWID;
            CREATE INDEX used_spc_by_expiry ON used_spc (expires_at);
            """)
        let insert = try db.makeStatement(sql: "INSERT OR IGNORE INTO used_spc (key, expires_at) VALUES (?, ?)")
        for row in try Row.fetchAll(db, sql: "SELECT nonce, expires_at FROM used_nonce") {
            let until = Date(timeIntervalSince1970: row["expires_at"])
            try insert.execute(arguments: [Data(LicenseTransaction.replayKey(nonce: Array(row["nonce"] as Data), until: until)),
                                           until.timeIntervalSince1970])
        }
        try db.execute(sql: "DROP TABLE used_nonce")
    }

    /// The "v5" change: a license's signed terms as one value (`terms`, the CKC's terms JSON)
    /// beside the queried columns; the columns that only held terms are filled into it and dropped.
    static func storeLicenseTermsAsOneValue(_ db: Database) throws {
        try db.alter(table: "license") { t in t.add(column: "terms", .text) }
        let rows = try Row.fetchAll(db, sql: """
            SELECT id, account_id, video_id, key_id, device_id, kind, issued_at, rental_end, play_duration, first_play, expires_at,
                   persistable, request_nonce FROM license
            """)
        for row in rows {
            func date(_ column: String) -> Date? { (row[column] as Double?).map(Date.init(timeIntervalSince1970:)) }
            let terms = LicenseTerms(
                licenseID: row["id"], kind: LicenseKind(rawValue: row["kind"]) ?? .streaming, accountID: row["account_id"],
                videoID: row["video_id"], contentKeyID: row["key_id"], deviceID: row["device_id"], issuedAt: date("issued_at") ?? .distantPast,
                rentalEnd: date("rental_end"), playDuration: row["play_duration"], firstPlay: date("first_play"), expiresAt: date("expires_at"),
                persistable: row["persistable"], requestNonce: Array(row["request_nonce"] as Data))
            try db.execute(sql: "UPDATE license SET terms = ? WHERE id = ?", arguments: [LicenseRecord.storedTerms(terms), terms.licenseID])
        }
        for column in ["key_id", "kind", "rental_end", "play_duration", "first_play", "expires_at", "request_nonce"] {
            try db.execute(sql: "ALTER TABLE license DROP COLUMN \(column)")
        }
    }

    /// The "v2" tables. Never edit: later changes go in new migrations.
    static func createLicenseTables(_ db: Database) throws {
        try db.create(table: "application_certificate") { t in
            t.primaryKey("account_id", .text)
            t.column("certificate", .blob).notNull()
            t.column("private_key", .blob).notNull()
            t.column("created_at", .double).notNull()
        }
        try db.create(table: "license") { t in
            t.primaryKey("id", .text)
            t.column("account_id", .text).notNull()
            t.column("video_id", .text).notNull()
            t.column("key_id", .text).notNull()
            t.column("device_id", .text).notNull()
            t.column("user_id", .text)
            t.column("kind", .text).notNull()  // LicenseKind raw values: purchase, rental, streaming
            t.column("issued_at", .double).notNull()
            t.column("rental_end", .double)
            t.column("play_duration", .double)
            t.column("first_play", .double)
            t.column("expires_at", .double)
            t.column("persistable", .boolean).notNull()
            t.column("request_nonce", .blob).notNull()
            t.column("released_at", .double)
            t.column("updated_at", .double).notNull()
        }
        try db.create(index: "license_by_user_device", on: "license", columns: ["account_id", "user_id", "device_id"],
                      condition: Column("user_id") != nil)
        try db.create(table: "license_event") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("license_id", .text).notNull().indexed()
            t.column("event", .text).notNull()  // LicenseRequestKind raw values: acquire, renew, first_play, release
            t.column("at", .double).notNull()
            t.column("kind", .text)  // the terms the event produced (nil for a release)
            t.column("expires_at", .double)
            t.column("first_play", .double)
        }
        try db.create(table: "device") { t in
            t.column("account_id", .text).notNull()
            t.column("user_id", .text).notNull()
            t.column("device_id", .text).notNull()
            t.column("registered_at", .double).notNull()
            t.primaryKey(["account_id", "user_id", "device_id"])
        }
        try db.create(table: "used_nonce") { t in
            t.primaryKey("nonce", .blob)
            t.column("expires_at", .double).notNull().indexed()
        }
        try db.create(table: "playback_key") { t in
            t.column("account_id", .text).notNull()
            t.column("key_id", .text).notNull()
            t.column("public_key", .text).notNull()
            t.column("created_at", .double).notNull()
            t.primaryKey(["account_id", "key_id"])
        }
    }
}
