import Crypto
import Foundation

/// OAuth client credentials (`client_id` + `client_secret`), one account each, as the admin
/// API makes them. The secret is shown once, when made; the store keeps only its SHA-256, so
/// neither the database nor any listing can give it back.
protocol OAuthClientStorage: Sendable {
    /// Stores a new client.
    func insertOAuthClient(_ client: OAuthClient) throws
    /// A client by id; nil when there is none.
    func oauthClient(id: String) throws -> OAuthClient?
    /// The clients of an account, oldest first.
    func oauthClients(accountID: String) throws -> [OAuthClient]
    /// Removes a client; false when there was none in that account.
    func deleteOAuthClient(accountID: String, id: String) throws -> Bool
}

/// A client credential as stored: who it is for and the digest of its secret.
struct OAuthClient: Sendable, Equatable {
    var id: String
    var accountID: String
    var name: String
    /// SHA-256 of the secret's UTF-8 bytes.
    var secretDigest: [UInt8]
    var issuedAt: Date

    /// SHA-256 of a secret, as stored and compared.
    static func digest(ofSecret secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Whether `secret` is this client's, compared in constant time.
    func accepts(secret: String) -> Bool {
        SecureBytes.constantTimeEqual(OAuthClient.digest(ofSecret: secret), secretDigest)
    }

    /// A new client of `accountID` and its secret (the one time the secret exists in the clear).
    static func make(accountID: String, name: String, now: Date) -> (client: OAuthClient, secret: String) {
        let secret = Base64URL.encode(SecureBytes.random(48))
        let client = OAuthClient(id: UUID().uuidString.lowercased(), accountID: accountID, name: name,
                                 secretDigest: digest(ofSecret: secret), issuedAt: now)
        return (client, secret)
    }
}

/// Base64 with the URL alphabet and no padding (RFC 4648 §5): what tokens and secrets are written in.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Nil when `text` is not unpadded base64url.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || ($0 < 0x80 && Character(UnicodeScalar($0)).isLetter)
            || (0x30...0x39).contains($0) }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }
}
