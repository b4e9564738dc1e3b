import Foundation
import LicenseProtocol

/// The FairPlay application certificate and key of every account with FairPlay, made with
/// swift-certificates on first start and kept in the database (`application_certificate`).
struct ApplicationCertificates: Sendable {
    private let byAccount: [String: LicenseServerIdentity]

    /// Loads the identities of `accountIDs`, generating and storing the missing ones.
    /// (Every instance sharing a store serves the same certificates: the first one stored wins.)
    init(accountIDs: [String], store: any SecretStorage, now: Date) throws {
        var identities: [String: LicenseServerIdentity] = [:]
        for account in accountIDs {
            let stored = try store.applicationIdentity(accountID: account, now: now) {
                let identity = try LicenseServerIdentity.generate(accountID: account, now: now)
                return StoredIdentity(certificate: identity.certificate.derEncoded, privateKey: identity.privateKey)
            }
            identities[account] = try LicenseServerIdentity(certificateDER: stored.certificate, privateKey: stored.privateKey)
        }
        byAccount = identities
    }

    /// The identity of `accountID`, nil when the account has no FairPlay.
    func identity(accountID: String) -> LicenseServerIdentity? { byAccount[accountID] }
}
