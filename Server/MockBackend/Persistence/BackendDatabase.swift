import Foundation
import GRDB
import SQLiteSupport

/// The backend's SQLite database (WAL, via GRDB): the URL-signing secret and the content
/// keys of protected videos ("v1"); application certificates, licenses, devices, nonces and
/// playback-restriction keys ("v2", see `LicenseStore`); the admin API's catalog edits and
/// license revocations ("v3", see `LiveCatalog`); the analytics collector's events ("v4", see
/// `TrackerStore`).
/// Persisted values and table layouts only change through new migrations.
final class BackendDatabase: Sendable {
    let pool: DatabasePool

    /// How the database is opened: WAL with `synchronous = NORMAL` (durable across process
    /// crashes); small pages, because a license commit dirties a few pages of small rows and
    /// each dirty page is written whole to the WAL (effective for new databases only);
    /// checkpoints (and their fsyncs) every 8 MB of WAL rather than every 1,000 pages. No busy
    /// timeout and no migration lock: one backend process owns its data directory.
    static let setup = SQLiteSetup(fileName: "backend.sqlite",
                                   pragmas: ["PRAGMA page_size = 1024", "PRAGMA synchronous = NORMAL",
                                             "PRAGMA wal_autocheckpoint = 8000"])

    /// Opens (creating if needed) `backend.sqlite` in `directory` and migrates it.
    init(directory: URL) throws {
        pool = try SQLiteDatabase.open(in: directory, BackendDatabase.setup, migrator: BackendDatabase.migrator)
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
            try LicenseStore.createTables(db)
        }
        migrator.registerMigration("v3: catalog edits and license revocation") { db in
            try LiveCatalog.createTables(db)
            try db.alter(table: "license") { t in t.add(column: "revoked_at", .double) }
        }
        migrator.registerMigration("v4: analytics events") { db in
            try TrackerStore.createTables(db)
        }
        return migrator
    }

    /// The value of setting `name`, created with `make()` and stored on first use.
    func setting(_ name: String, orCreate make: () -> [UInt8]) throws -> [UInt8] {
        Array(try pool.setting(name) { Data(make()) })
    }

    /// The content key of `videoID`, created (random key, key id and IV) on first use.
    func contentKey(videoID: String, now: Date) throws -> ContentKey {
        try pool.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT key_id, key, iv FROM content_key WHERE video_id = ?", arguments: [videoID]) {
                return ContentKey(keyID: row["key_id"], key: Array(row["key"] as Data), iv: Array(row["iv"] as Data))
            }
            let key = ContentKey(keyID: UUID().uuidString.lowercased(), key: SecureBytes.random(16), iv: SecureBytes.random(16))
            try db.execute(sql: "INSERT INTO content_key (video_id, key_id, key, iv, created_at) VALUES (?, ?, ?, ?, ?)",
                           arguments: [videoID, key.keyID, Data(key.key), Data(key.iv), now.timeIntervalSince1970])
            return key
        }
    }
}

/// A protected video's AES-128 key, its public key id (used in key URLs) and its IV.
struct ContentKey: Sendable, Equatable {
    var keyID: String
    var key: [UInt8]
    var iv: [UInt8]
}

/// Random bytes from the system's CSPRNG.
enum SecureBytes {
    static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// Whether two secrets are equal, in a time that does not depend on where they differ.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
