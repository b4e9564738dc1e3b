import Foundation
import GRDB
import LicenseProtocol
import Logging
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// Licenses stored before their terms became one value (`terms`) read back the same after the
/// migration, in both stores.
@Suite("License terms as one stored value: the migration")
struct LicenseMigrationTests {
    static let issued = Date(timeIntervalSince1970: 1_796_000_000.25)
    static let licenses = [
        LicenseTerms(licenseID: "0190f000-0000-7000-8000-000000000001", kind: .rental, accountID: "6415818918001", videoID: "6415818918104",
                     contentKeyID: "key-1", deviceID: "device-a", issuedAt: issued, rentalEnd: issued.addingTimeInterval(86400), playDuration: 3600,
                     firstPlay: issued.addingTimeInterval(60), expiresAt: issued.addingTimeInterval(3660), persistable: true,
                     requestNonce: Array(0..<16)),
        LicenseTerms(licenseID: "0190f000-0000-7000-8000-000000000002", kind: .purchase, accountID: "6415818918001", videoID: "6415818918103",
                     contentKeyID: "key-2", deviceID: "device-b", issuedAt: issued, expiresAt: nil, persistable: true,
                     requestNonce: Array(repeating: 0xFF, count: 16)),
        LicenseTerms(licenseID: "0190f000-0000-7000-8000-000000000003", kind: .streaming, accountID: "6415818918001", videoID: "6415818918103",
                     contentKeyID: "key-2", deviceID: "device-c", issuedAt: issued, expiresAt: issued.addingTimeInterval(300), persistable: false,
                     requestNonce: Array(repeating: 7, count: 16)),
    ]

    /// The old columns' values of `terms`, in the order of the old insert.
    static func oldColumns(_ t: LicenseTerms) -> [(any DatabaseValueConvertible)?] {
        [t.licenseID, t.accountID, t.videoID, t.contentKeyID, t.deviceID, "user-1", t.kind.rawValue, t.issuedAt.timeIntervalSince1970,
         t.rentalEnd?.timeIntervalSince1970, t.playDuration, t.firstPlay?.timeIntervalSince1970, t.expiresAt?.timeIntervalSince1970,
         t.persistable, Data(t.requestNonce), t.issuedAt.timeIntervalSince1970]
    }

    static let oldInsert = """
        INSERT INTO license (id, account_id, video_id, key_id, device_id, user_id, kind, issued_at, rental_end, play_duration, first_play,
          expires_at, persistable, request_nonce, updated_at) VALUES
        """

    @Test("SQLite: licenses in the v5 columns read back identical from v6's terms value")
    func sqlite() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let pool = try DatabasePool(path: folder.url.appendingPathComponent("backend.sqlite").path)
        try SQLiteBackendStore.migrator.migrate(pool, upTo: "v5: ended dashboard sessions")
        try pool.write { db in
            for terms in Self.licenses {
                try db.execute(sql: Self.oldInsert + " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               arguments: StatementArguments(Self.oldColumns(terms)))
            }
        }
        try pool.close()
        let store = try SQLiteBackendStore(directory: folder.url)
        for terms in Self.licenses {
            let record = try #require(try store.license(id: terms.licenseID))
            #expect(record.terms == terms)
            #expect(record.userID == "user-1")
        }
        let columns = try store.pool.read { db in try db.columns(in: "license").map(\.name) }
        #expect(!columns.contains("key_id") && !columns.contains("play_duration") && columns.contains("terms"), "\(columns)")
    }

    @Test("PostgreSQL: licenses in the version-3 columns read back identical from version 4's terms value")
    func postgres() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.makeDatabase()
        var sql = ""
        for migration in PostgresBackendStore.migrations where migration.version <= 3 {
            sql += migration.sql + "\n"
        }
        sql += "CREATE TABLE schema_migration (version int PRIMARY KEY, name text NOT NULL, applied_at float8 NOT NULL);\n"
        sql += "INSERT INTO schema_migration VALUES (1, 'one', 0), (2, 'two', 0), (3, 'three', 0);\n"
        func literal(_ value: (any DatabaseValueConvertible)?) -> String {
            switch value {
            case nil: "NULL"
            case let text as String: "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
            case let data as Data: "'\\x" + Hex.lowercase(data) + "'::bytea"
            case let flag as Bool: flag ? "true" : "false"
            case let number as Double: String(number)
            default: "\(value!)"
            }
        }
        for terms in Self.licenses {
            sql += Self.oldInsert + " (" + Self.oldColumns(terms).map(literal).joined(separator: ", ") + ");\n"
        }
        _ = try await server.psql(url, sql)
        let store = try PostgresBackendStore(url: url, connections: 1, logger: Logger(label: "test"))
        for terms in Self.licenses {
            let record = try #require(try store.license(id: terms.licenseID))
            #expect(record.terms == terms)
            #expect(record.userID == "user-1")
        }
    }
}
