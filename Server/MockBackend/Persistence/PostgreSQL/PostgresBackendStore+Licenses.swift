import Foundation
import LicenseProtocol
import Postgres
import Synchronization

/// Licenses, their history, devices per user and used nonces in PostgreSQL, correct with any
/// number of instances deciding at once.
///
/// A license request is one READ COMMITTED transaction: the nonce's insert (a primary key:
/// of two instances inserting the same nonce the second waits for the first and then finds
/// it taken), then `pg_advisory_xact_lock` on the request's (account, user), then the reads
/// and the decision and the writes. Two requests for one user, on any instances, so decide
/// one after the other, and the second reads the devices the first registered: a user's
/// last device slot goes once. An advisory lock rather than `SELECT … FOR UPDATE`: a user has
/// no row of their own to lock (their first device has nothing to lock yet), and rather than
/// SERIALIZABLE: no retries, so no request is ever run twice and none fails from contention.
/// A license's own row is read `FOR UPDATE`, so a renewal and a release of one license also
/// go one at a time.
extension PostgresBackendStore: LicenseStorage {
    func process(_ request: LicenseRequest, accountID: String, now: Date) throws -> LicenseDecision {
        // Nonces of SPCs too old to be accepted anyway go now and then (as in SQLite).
        let prune = sincePrune.add(1, ordering: .relaxed).newValue % SQLiteBackendStore.pruneEvery == 0
        return try pool.transaction { connection in
            if prune { try connection.query("DELETE FROM used_nonce WHERE expires_at < $1", [.double(now.timeIntervalSince1970)]) }
            let inserted = try connection.query("INSERT INTO used_nonce (nonce, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING", [
                .bytes(request.context.nonce),
                .double(request.context.createdAt.addingTimeInterval(LicensePolicy.spcMaximumAge).timeIntervalSince1970),
            ]).affectedRows
            var lockedUser = request.user?.userID
            if let user = lockedUser { try Self.lockUser(connection, accountID: accountID, userID: user) }
            var existing = try request.namedLicenseID.flatMap { try Self.license(connection, id: $0, forUpdate: true) }
            let deviceUser = request.context.kind == .release ? existing?.userID : request.user?.userID
            if let user = deviceUser, user != lockedUser {
                // A release names its user only through the license: lock that user, then read the license again.
                try Self.lockUser(connection, accountID: accountID, userID: user)
                lockedUser = user
                existing = try request.namedLicenseID.flatMap { try Self.license(connection, id: $0, forUpdate: true) }
            }
            var devices = DeviceState()
            if let user = deviceUser {
                devices.registered = Set(try connection.query("SELECT device_id FROM device WHERE account_id = $1 AND user_id = $2",
                                                              [.text(accountID), .text(user)]).rows.map { try $0["device_id"] as String })
                if let existing {
                    devices.otherLicensesOnDevice = try connection.query("""
                        SELECT count(*) AS n FROM license WHERE account_id = $1 AND user_id = $2 AND device_id = $3
                        AND released_at IS NULL AND persistable AND id != $4
                        """, [.text(accountID), .text(user), .text(existing.terms.deviceID), .text(existing.terms.licenseID)]).rows[0]["n"]
                }
            }
            let decision = LicensePolicy.decide(request, nonceAlreadyUsed: inserted == 0, existing: existing, devices: devices, now: now,
                                                newLicenseID: LicenseID.timeOrdered(now: now))
            try Self.apply(decision, kind: request.context.kind, connection: connection, now: now)
            return decision
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
        try connection.query("SELECT * FROM license WHERE id = $1" + (forUpdate ? " FOR UPDATE" : ""), [.text(id)]).rows.first.flatMap(record)
    }

    private static func record(_ row: PostgresRow) throws -> LicenseRecord? {
        guard let kind = LicenseKind(rawValue: try row["kind"]) else { return nil }
        func date(_ column: String) throws -> Date? { (try row[column] as Double?).map(Date.init(timeIntervalSince1970:)) }
        let terms = LicenseTerms(
            licenseID: try row["id"], kind: kind, accountID: try row["account_id"], videoID: try row["video_id"],
            contentKeyID: try row["key_id"], deviceID: try row["device_id"], issuedAt: try date("issued_at") ?? .distantPast,
            rentalEnd: try date("rental_end"), playDuration: try row["play_duration"], firstPlay: try date("first_play"),
            expiresAt: try date("expires_at"), persistable: try row["persistable"], requestNonce: try row["request_nonce"])
        return LicenseRecord(terms: terms, userID: try row["user_id"], releasedAt: try date("released_at"), revokedAt: try date("revoked_at"))
    }

    private static func apply(_ decision: LicenseDecision, kind: LicenseRequestKind, connection: PostgresConnection, now: Date) throws {
        let at = PostgresValue.double(now.timeIntervalSince1970)
        switch decision {
        case .refuse: return
        case .issue(let record, let device):
            let t = record.terms
            try connection.query("""
                INSERT INTO license (id, account_id, video_id, key_id, device_id, user_id, kind, issued_at, rental_end, play_duration, first_play,
                  expires_at, persistable, request_nonce, released_at, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, NULL, $15)
                ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id, video_id = excluded.video_id, key_id = excluded.key_id,
                  device_id = excluded.device_id, user_id = excluded.user_id, kind = excluded.kind, issued_at = excluded.issued_at,
                  rental_end = excluded.rental_end, play_duration = excluded.play_duration, first_play = excluded.first_play,
                  expires_at = excluded.expires_at, persistable = excluded.persistable, request_nonce = excluded.request_nonce,
                  released_at = NULL, updated_at = excluded.updated_at, revoked_at = NULL
                """, [.text(t.licenseID), .text(t.accountID), .text(t.videoID), .text(t.contentKeyID), .text(t.deviceID), PostgresValue(record.userID),
                      .text(t.kind.rawValue), .double(t.issuedAt.timeIntervalSince1970), PostgresValue(t.rentalEnd?.timeIntervalSince1970),
                      PostgresValue(t.playDuration), PostgresValue(t.firstPlay?.timeIntervalSince1970), PostgresValue(t.expiresAt?.timeIntervalSince1970),
                      .bool(t.persistable), .bytes(t.requestNonce), at])
            try connection.query("INSERT INTO license_event (license_id, event, at, kind, expires_at, first_play) VALUES ($1, $2, $3, $4, $5, $6)",
                                 [.text(t.licenseID), .text(kind.rawValue), at, .text(t.kind.rawValue), PostgresValue(t.expiresAt?.timeIntervalSince1970),
                                  PostgresValue(t.firstPlay?.timeIntervalSince1970)])
            if let device, let user = record.userID {
                try connection.query("INSERT INTO device (account_id, user_id, device_id, registered_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                                     [.text(t.accountID), .text(user), .text(device), at])
            }
        case .release(let id, let releasedAt, let user, let device):
            let when = PostgresValue.double(releasedAt.timeIntervalSince1970)
            try connection.query("UPDATE license SET released_at = $1, updated_at = $1 WHERE id = $2", [when, .text(id)])
            try connection.query("INSERT INTO license_event (license_id, event, at) VALUES ($1, 'release', $2)", [.text(id), when])
            if let device, let user {
                try connection.query("""
                    DELETE FROM device WHERE account_id = (SELECT account_id FROM license WHERE id = $1) AND user_id = $2 AND device_id = $3
                    """, [.text(id), .text(user), .text(device)])
            }
        }
    }
}
