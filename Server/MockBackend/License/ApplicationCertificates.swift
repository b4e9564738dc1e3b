import Foundation
import GRDB
import LicenseProtocol

/// The FairPlay application certificate and key of every account with FairPlay, made with
/// swift-certificates on first start and kept in the database (`application_certificate`).
struct ApplicationCertificates: Sendable {
    private let byAccount: [String: LicenseServerIdentity]

    /// Loads the identities of `accountIDs`, generating and storing the missing ones.
    init(accountIDs: [String], database: BackendDatabase, now: Date) throws {
        var identities: [String: LicenseServerIdentity] = [:]
        try database.pool.write { db in
            for account in accountIDs {
                if let row = try Row.fetchOne(db, sql: "SELECT certificate, private_key FROM application_certificate WHERE account_id = ?",
                                              arguments: [account]) {
                    identities[account] = try LicenseServerIdentity(certificateDER: Array(row["certificate"] as Data),
                                                                    privateKey: Array(row["private_key"] as Data))
                } else {
                    let identity = try LicenseServerIdentity.generate(accountID: account, now: now)
                    try db.execute(sql: "INSERT INTO application_certificate (account_id, certificate, private_key, created_at) VALUES (?, ?, ?, ?)",
                                   arguments: [account, Data(identity.certificate.derEncoded), Data(identity.privateKey),
                                               now.timeIntervalSince1970])
                    identities[account] = identity
                }
            }
        }
        byAccount = identities
    }

    /// The identity of `accountID`, nil when the account has no FairPlay.
    func identity(accountID: String) -> LicenseServerIdentity? { byAccount[accountID] }
}
