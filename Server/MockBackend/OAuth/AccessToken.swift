import Crypto
import Foundation

/// OAuth v4 access tokens: self-contained and signed, so every instance sharing the store
/// checks one without a lookup (they share the signing secret, a setting made on first use).
///
/// The token is `A` + base64url(version · expiry · account · client · HMAC-SHA256 of what
/// precedes it): only `[A-Za-z0-9_-]`, starting with `A`, as the real service's are. Expiry is
/// read on the mock's clock, so moving the clock 300 s ends a token as five minutes would.
/// A deleted client's tokens stay valid until they expire, as a real bearer token would.
struct AccessToken: Sendable, Equatable {
    /// How long a token lives: the real service's `expires_in`.
    static let lifetime: TimeInterval = 300

    var accountID: String
    var clientID: String
    /// Whole seconds since 1970.
    var expiresAt: Int64

    private static let version: UInt8 = 1

    /// The token's text, signed with `secret`.
    func encoded(secret: SymmetricKey) -> String {
        var bytes: [UInt8] = [AccessToken.version]
        bytes += (0..<8).map { UInt8(truncatingIfNeeded: expiresAt >> (56 - 8 * Int64($0))) }
        for field in [accountID, clientID] {
            let utf8 = Array(field.utf8.prefix(255))
            bytes.append(UInt8(utf8.count))
            bytes += utf8
        }
        bytes += Array(HMAC<SHA256>.authenticationCode(for: bytes, using: secret))
        return "A" + Base64URL.encode(bytes)
    }

    /// The token `text` names, when `secret` signed it; nil for anything else (expiry is the caller's to check).
    init?(decoding text: String, secret: SymmetricKey) {
        guard text.first == "A", let bytes = Base64URL.decode(text.dropFirst()), bytes.count > 1 + 8 + 2 + 32,
              bytes[0] == AccessToken.version else { return nil }
        let signed = Array(bytes.dropLast(32)), mac = Array(bytes.suffix(32))
        guard SecureBytes.constantTimeEqual(Array(HMAC<SHA256>.authenticationCode(for: signed, using: secret)), mac) else { return nil }
        expiresAt = signed[1...8].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        var index = 9
        var fields: [String] = []
        for _ in 0..<2 {
            guard index < signed.count else { return nil }
            let count = Int(signed[index])
            guard index + 1 + count <= signed.count else { return nil }
            fields.append(String(decoding: signed[(index + 1)..<(index + 1 + count)], as: UTF8.self))
            index += 1 + count
        }
        guard index == signed.count else { return nil }
        accountID = fields[0]
        clientID = fields[1]
    }

    init(accountID: String, clientID: String, expiresAt: Int64) {
        self.accountID = accountID
        self.clientID = clientID
        self.expiresAt = expiresAt
    }

    /// A token for `client` that lives `lifetime` from `now`.
    static func issue(for client: OAuthClient, now: Date) -> AccessToken {
        AccessToken(accountID: client.accountID, clientID: client.id, expiresAt: Int64(now.timeIntervalSince1970.rounded(.down)) + Int64(lifetime))
    }

    /// Whether the token has expired at `now`.
    func isExpired(now: Date) -> Bool { now.timeIntervalSince1970 >= Double(expiresAt) }
}
