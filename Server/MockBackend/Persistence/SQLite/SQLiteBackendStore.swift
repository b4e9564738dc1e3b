import Foundation
import GRDB
import SQLiteSupport
import Synchronization

/// The backend's store in SQLite (WAL, via GRDB), one file in the data directory: the
/// default, embedded, for one `mock-backend` process. Settings (URL-signing secret, admin
/// token) and the content keys of protected videos ("v1"); application certificates,
/// licenses, devices, nonces and playback-restriction keys ("v2"); the admin API's catalog
/// edits and license revocations ("v3"); the analytics collector's events ("v4").
/// Persisted values and table layouts only change through new migrations.
final class SQLiteBackendStore: StoreMaintenance {
    let pool: DatabasePool
    let directory: URL
    /// The one writer of license decisions (group commit).
    let licenseWriter: LicenseBatchWriter

    /// Copies the WAL into the database beside the writer's commits (see `WALCheckpointer`).
    let checkpointer: WALCheckpointer

    /// How the database is opened: WAL with `synchronous = NORMAL` (durable across process
    /// crashes); small pages, because a license commit dirties a few pages of small rows and
    /// each dirty page is written whole to the WAL (effective for new databases only);
    /// checkpoints from a thread of their own every quarter second (in the license
    /// writer's commits, every 8 MB of WAL, they held licenses up for tens of milliseconds and
    /// took 10-15 % of the licenses/s away as the database grew), with the writer's own at
    /// 64 MB of WAL as the backstop that lets the WAL start over. No
    /// migration lock: one backend process owns its data directory. A busy timeout all the
    /// same: two stores on one folder (the shared-store tests open one folder twice in one
    /// process; a second process started on it by mistake) wait for each other's writes, which
    /// a slow disk can make last seconds, instead of failing them with a 500.
    static let setup = SQLiteSetup(fileName: "backend.sqlite",
                                   pragmas: ["PRAGMA page_size = 1024", "PRAGMA synchronous = NORMAL",
                                             "PRAGMA wal_autocheckpoint = 64000"],
                                   busyTimeout: 30)

    /// Opens (creating if needed) `backend.sqlite` in `directory` and migrates it.
    init(directory: URL) throws {
        self.directory = directory
        let pool = try SQLiteDatabase.open(in: directory, SQLiteBackendStore.setup, migrator: SQLiteBackendStore.migrator)
        self.pool = pool
        checkpointer = try WALCheckpointer(path: pool.path, setup: SQLiteBackendStore.setup, every: 0.25, name: "checkpointer")
        licenseWriter = LicenseBatchWriter(name: "license writer") { batch, prune in
            try SQLiteBackendStore.commitLicenses(batch, pruneNonces: prune, in: pool)
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: settings and content keys") { db in
            try db.create(table: "setting") { t in
                t.primaryKey("name", .text)
                t.column("value", .blob).notNull()
            }
            try db.create(table: "content_key") { t in
                t.primaryKey("video_id", .text)
                t.column("key_id", .text).notNull().unique()
                t.column("key", .blob).notNull()
                t.column("iv", .blob).notNull()
                t.column("created_at", .double).notNull()
            }
        }
        migrator.registerMigration("v2: licenses") { db in
            try SQLiteBackendStore.createLicenseTables(db)
        }
        migrator.registerMigration("v3: catalog edits and license revocation") { db in
            try SQLiteBackendStore.createCatalogTables(db)
            try db.alter(table: "license") { t in t.add(column: "revoked_at", .double) }
        }
        migrator.registerMigration("v4: analytics events") { db in
            try SQLiteBackendStore.createTrackerTables(db)
        }
        migrator.registerMigration("v5: ended dashboard sessions") { db in
            try db.execute(sql: "CREATE TABLE ended_dashboard_session (nonce TEXT PRIMARY KEY, expires_at REAL NOT NULL)")
        }
        migrator.registerMigration("v6: license terms as one value") { db in
            try SQLiteBackendStore.storeLicenseTermsAsOneValue(db)
        }
        migrator.registerMigration("v7: oauth client credentials") { db in
            try SQLiteBackendStore.createOAuthClientTables(db)
        }
        migrator.registerMigration("v8: ingest jobs") { db in
            try SQLiteBackendStore.createIngestJobTables(db)
        }
        migrator.registerMigration("v9: used SPCs keyed by time") { db in
            try SQLiteBackendStore.keyUsedSPCsByTime(db)
        }
        return migrator
    }

    var location: String { directory.appendingPathComponent(Self.setup.fileName).path }

    func checkReady() throws {
        _ = try pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    /// GRDB closes the pool when the last reference goes.
    func close() {}

    func forgetState() throws {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM catalog_edit")
            for table in ["license_event", "license", "device", "used_spc", "tracker_event", "ingest_job"] { try db.execute(sql: "DELETE FROM \(table)") }
        }
    }
}

// MARK: Secrets

extension SQLiteBackendStore: SecretStorage {
    func setting(_ name: String, orCreate make: () -> [UInt8]) throws -> [UInt8] {
        Array(try pool.setting(name) { Data(make()) })
    }

    func contentKey(videoID: String, now: Date) throws -> ContentKey {
        try pool.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT key_id, key, iv FROM content_key WHERE video_id = ?", arguments: [videoID]) {
                return ContentKey(keyID: row["key_id"], key: Array(row["key"] as Data), iv: Array(row["iv"] as Data))
            }
            let key = ContentKey.random()
            try db.execute(sql: "INSERT INTO content_key (video_id, key_id, key, iv, created_at) VALUES (?, ?, ?, ?, ?)",
                           arguments: [videoID, key.keyID, Data(key.key), Data(key.iv), now.timeIntervalSince1970])
            return key
        }
    }

    func applicationIdentity(accountID: String, now: Date, orCreate make: () throws -> StoredIdentity) throws -> StoredIdentity {
        try pool.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT certificate, private_key FROM application_certificate WHERE account_id = ?",
                                          arguments: [accountID]) {
                return StoredIdentity(certificate: Array(row["certificate"] as Data), privateKey: Array(row["private_key"] as Data))
            }
            let identity = try make()
            try db.execute(sql: "INSERT INTO application_certificate (account_id, certificate, private_key, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [accountID, Data(identity.certificate), Data(identity.privateKey), now.timeIntervalSince1970])
            return identity
        }
    }
}

// MARK: Shared state

/// One process owns a SQLite store: nothing to share, nobody to tell.
extension SQLiteBackendStore: SharedStateStorage {
    func sharedValue(_ topic: SharedTopic) throws -> [UInt8]? { nil }
    func publish(_ topic: SharedTopic, value: [UInt8]?) throws {}
    func watchChanges(_ onChange: @escaping @Sendable (SharedTopic) -> Void) {}
}

// MARK: Catalog edits

extension SQLiteBackendStore: CatalogEditStorage {
    func catalogEdits() throws -> [LiveCatalog.Edit] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT kind, id, body FROM catalog_edit ORDER BY rowid").compactMap { row in
                try LiveCatalog.Edit(kind: row["kind"], id: row["id"], body: row["body"])
            }
        }
    }

    func storeCatalogEdit(_ edit: LiveCatalog.Edit) throws {
        let (kind, id, body) = try edit.stored
        // An upsert keeps the row's place: edits are laid over the file in the order things were first edited.
        try pool.write { db in
            try db.execute(sql: """
                INSERT INTO catalog_edit (kind, id, body) VALUES (?, ?, ?)
                ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body
                """, arguments: [kind, id, body])
        }
    }

    /// The "v3" table. Never edit: later changes go in new migrations.
    static func createCatalogTables(_ db: Database) throws {
        try db.create(table: "catalog_edit") { t in
            t.column("kind", .text).notNull()  // account, video, playlist
            t.column("id", .text).notNull()
            t.column("body", .blob)  // the thing in catalog.json form (JSON); NULL: deleted
            t.primaryKey(["kind", "id"])
        }
    }
}

// MARK: Playback keys

extension SQLiteBackendStore: PlaybackKeyStorage {
    func playbackKeys() throws -> [StoredPlaybackKey] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM playback_key").map { row in
                StoredPlaybackKey(accountID: row["account_id"], id: row["key_id"], publicKeyPEM: row["public_key"],
                                  createdAt: Date(timeIntervalSince1970: row["created_at"]))
            }
        }
    }

    func insertPlaybackKey(_ key: StoredPlaybackKey) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO playback_key (account_id, key_id, public_key, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [key.accountID, key.id, key.publicKeyPEM, key.createdAt.timeIntervalSince1970])
            return db.changesCount == 1
        }
    }

    func deletePlaybackKey(accountID: String, id: String) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM playback_key WHERE account_id = ? AND key_id = ?", arguments: [accountID, id])
            return db.changesCount == 1
        }
    }
}

// MARK: Dashboard sessions

extension SQLiteBackendStore: DashboardSessionStorage {
    func endDashboardSession(nonce: String, expiresAt: Date, now: Date) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO ended_dashboard_session (nonce, expires_at) VALUES (?, ?)",
                           arguments: [nonce, expiresAt.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM ended_dashboard_session WHERE expires_at < ?", arguments: [now.timeIntervalSince1970])
        }
    }

    func isDashboardSessionEnded(nonce: String) throws -> Bool {
        try pool.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM ended_dashboard_session WHERE nonce = ?)", arguments: [nonce]) ?? false
        }
    }
}
