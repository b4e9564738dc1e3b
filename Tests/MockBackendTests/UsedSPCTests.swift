import Foundation
import GRDB
import Logging
import Postgres
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// Used SPCs, keyed by time (`LicenseTransaction.replayKey`): an SPC is accepted once, in both
/// stores, and the nonces kept before the key changed ("v9", PostgreSQL 7) still refuse their SPCs.
@Suite("Used SPCs keyed by time")
struct UsedSPCTests {
    static let nonce: [UInt8] = Array(0..<16)
    /// A nonce's expiry as the server computes it: an SPC's `created_at` (milliseconds) plus 10 minutes.
    static let until = Date(timeIntervalSince1970: 1_796_000_000.123 + 600)

    /// `consume` (a store's `consumeNonce` in a transaction of its own) for: the SPC, the same SPC
    /// again, the same nonce in an SPC made a millisecond later, and that one again.
    static func answers(_ consume: ([UInt8], Date) throws -> Bool) throws -> [Bool] {
        let later = until.addingTimeInterval(0.001)
        return [try consume(nonce, until), try consume(nonce, until), try consume(nonce, later), try consume(nonce, later)]
    }

    @Test("the key: the expiry's milliseconds big-endian, then the nonce; keys of later SPCs sort after")
    func key() {
        let key = LicenseTransaction.replayKey(nonce: Self.nonce, until: Self.until)
        #expect(key.count == 24 && Array(key.suffix(16)) == Self.nonce)
        let milliseconds = key.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(milliseconds == 1_796_000_600_123)
        let later = LicenseTransaction.replayKey(nonce: Array(repeating: 0, count: 16), until: Self.until.addingTimeInterval(0.001))
        #expect(key.lexicographicallyPrecedes(later), "a later SPC with a smaller nonce still sorts after")
    }

    @Test("SQLite: an SPC is accepted once; the same nonce made at another time is another SPC")
    func sqlite() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let store = try SQLiteBackendStore(directory: folder.url)
        let answers = try Self.answers { nonce, until in
            try store.pool.write { db in try SQLiteBackendStore.LicenseSteps(db: db).consumeNonce(nonce, until: until) }
        }
        #expect(answers == [true, false, true, false])
    }

    @Test("PostgreSQL: an SPC is accepted once; the same nonce made at another time is another SPC")
    func postgres() async throws {
        let server = try await TestPostgres.shared()
        let store = try PostgresBackendStore(url: try await server.makeDatabase(), connections: 1, logger: Logger(label: "test"))
        let answers = try Self.answers { nonce, until in
            try store.pool.transaction { connection in try PostgresBackendStore.LicenseSteps(connection: connection).consumeNonce(nonce, until: until) }
        }
        #expect(answers == [true, false, true, false])
    }

    @Test("SQLite: a nonce kept before v9 still refuses its SPC after it; used_nonce is gone")
    func sqliteMigration() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let pool = try DatabasePool(path: folder.url.appendingPathComponent("backend.sqlite").path)
        try SQLiteBackendStore.migrator.migrate(pool, upTo: "v8: ingest jobs")
        try pool.write { db in
            try db.execute(sql: "INSERT INTO used_nonce (nonce, expires_at) VALUES (?, ?)",
                           arguments: [Data(Self.nonce), Self.until.timeIntervalSince1970])
        }
        try pool.close()
        let store = try SQLiteBackendStore(directory: folder.url)
        let answers = try Self.answers { nonce, until in
            try store.pool.write { db in try SQLiteBackendStore.LicenseSteps(db: db).consumeNonce(nonce, until: until) }
        }
        #expect(answers == [false, false, true, false])
        #expect(try store.pool.read { db in try db.tableExists("used_nonce") } == false)
    }

    @Test("PostgreSQL: a nonce kept before version 7 still refuses its SPC after it; used_nonce is gone")
    func postgresMigration() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.makeDatabase()
        var sql = ""
        for migration in PostgresBackendStore.migrations where migration.version <= 6 { sql += migration.sql + "\n" }
        sql += "CREATE TABLE schema_migration (version int PRIMARY KEY, name text NOT NULL, applied_at float8 NOT NULL);\n"
        sql += "INSERT INTO schema_migration SELECT v, 'before', 0 FROM generate_series(1, 6) AS v;\n"
        sql += "INSERT INTO used_nonce (nonce, expires_at) VALUES ('\\x\(Hex.lowercase(Self.nonce))'::bytea, \(Self.until.timeIntervalSince1970));\n"
        _ = try await server.psql(url, sql)
        let store = try PostgresBackendStore(url: url, connections: 1, logger: Logger(label: "test"))
        let answers = try Self.answers { nonce, until in
            try store.pool.transaction { connection in try PostgresBackendStore.LicenseSteps(connection: connection).consumeNonce(nonce, until: until) }
        }
        #expect(answers == [false, false, true, false])
        let tables = try store.pool.withConnection { connection in
            try connection.query("SELECT count(*) AS n FROM pg_tables WHERE tablename = 'used_nonce'").rows.map { try $0["n"] as Int }
        }
        #expect(tables == [0])
    }
}
