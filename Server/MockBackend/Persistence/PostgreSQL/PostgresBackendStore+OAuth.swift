import Foundation
import Postgres

/// OAuth client credentials in PostgreSQL (migration 5).
extension PostgresBackendStore: OAuthClientStorage {
    /// Migration 5. Never edit: later changes go in new migrations.
    static let oauthClientMigration = (version: 5, name: "oauth client credentials", sql: """
        CREATE TABLE oauth_client (id text PRIMARY KEY, account_id text NOT NULL, name text NOT NULL, secret_sha256 bytea NOT NULL,
                                   issued_at float8 NOT NULL);
        CREATE INDEX oauth_client_by_account ON oauth_client (account_id);
        """)

    func insertOAuthClient(_ client: OAuthClient) throws {
        _ = try pool.withConnection { connection in
            try connection.query("INSERT INTO oauth_client (id, account_id, name, secret_sha256, issued_at) VALUES ($1, $2, $3, $4, $5)",
                                 [.text(client.id), .text(client.accountID), .text(client.name), .bytes(client.secretDigest),
                                  .double(client.issuedAt.timeIntervalSince1970)])
        }
    }

    func oauthClient(id: String) throws -> OAuthClient? {
        try pool.withConnection { connection in
            try connection.query("SELECT * FROM oauth_client WHERE id = $1", [.text(id)]).rows.first.map(Self.oauthClient)
        }
    }

    func oauthClients(accountID: String) throws -> [OAuthClient] {
        try pool.withConnection { connection in
            try connection.query("SELECT * FROM oauth_client WHERE account_id = $1 ORDER BY issued_at, id", [.text(accountID)]).rows.map(Self.oauthClient)
        }
    }

    func deleteOAuthClient(accountID: String, id: String) throws -> Bool {
        try pool.withConnection { connection in
            try connection.query("DELETE FROM oauth_client WHERE account_id = $1 AND id = $2", [.text(accountID), .text(id)]).affectedRows == 1
        }
    }

    private static func oauthClient(_ row: PostgresRow) throws -> OAuthClient {
        OAuthClient(id: try row["id"], accountID: try row["account_id"], name: try row["name"], secretDigest: try row["secret_sha256"],
                    issuedAt: Date(timeIntervalSince1970: try row["issued_at"]))
    }
}
