import Foundation
import GRDB

/// OAuth client credentials in SQLite (migration "v7").
extension SQLiteBackendStore: OAuthClientStorage {
    /// The table (migration "v7"). Never edit: later changes go in new migrations.
    static func createOAuthClientTables(_ db: Database) throws {
        try db.create(table: "oauth_client") { t in
            t.primaryKey("id", .text)
            t.column("account_id", .text).notNull()
            t.column("name", .text).notNull()
            t.column("secret_sha256", .blob).notNull()
            t.column("issued_at", .double).notNull()
        }
        try db.create(index: "oauth_client_by_account", on: "oauth_client", columns: ["account_id"])
    }

    func insertOAuthClient(_ client: OAuthClient) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT INTO oauth_client (id, account_id, name, secret_sha256, issued_at) VALUES (?, ?, ?, ?, ?)",
                           arguments: [client.id, client.accountID, client.name, Data(client.secretDigest), client.issuedAt.timeIntervalSince1970])
        }
    }

    func oauthClient(id: String) throws -> OAuthClient? {
        try pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM oauth_client WHERE id = ?", arguments: [id]).map(Self.oauthClient) }
    }

    func oauthClients(accountID: String) throws -> [OAuthClient] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM oauth_client WHERE account_id = ? ORDER BY issued_at, id", arguments: [accountID]).map(Self.oauthClient)
        }
    }

    func deleteOAuthClient(accountID: String, id: String) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM oauth_client WHERE account_id = ? AND id = ?", arguments: [accountID, id])
            return db.changesCount == 1
        }
    }

    private static func oauthClient(_ row: Row) -> OAuthClient {
        OAuthClient(id: row["id"], accountID: row["account_id"], name: row["name"], secretDigest: Array(row["secret_sha256"] as Data),
                    issuedAt: Date(timeIntervalSince1970: row["issued_at"]))
    }
}
