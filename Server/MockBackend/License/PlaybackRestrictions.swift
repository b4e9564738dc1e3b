import Crypto
import Foundation
import JWTKit
import Locking
import WireModels
import _CryptoExtras

/// Playback-restriction tokens, as the real Playback Authorization Service checks them:
/// RS256 JWTs signed by a public key registered for the account (`/_admin/v1/accounts/
/// {acct}/playback-keys`). jwt-kit parses the token and its claims and reads the PEM keys;
/// the RS256 check itself is a direct swift-crypto call because jwt-kit's verifier lives on
/// an actor (async) and requests are answered synchronously on the server's threads.
final class PlaybackRestrictions: Sendable {
    /// A registered key as the admin API shows it.
    struct RegisteredKey: Sendable, Encodable {
        var id: String
        var accountID: String
        var publicKey: String
        var createdAt: Date
        enum CodingKeys: String, CodingKey { case id, accountID = "account_id", publicKey = "public_key", createdAt = "created_at" }
    }

    private struct Entry: Sendable {
        var registered: RegisteredKey
        var key: _RSA.Signing.PublicKey
    }

    private let store: any PlaybackKeyStorage & SharedStateStorage
    /// account → key id → key; mirrors the `playback_key` table.
    private let keys = Locked<[String: [String: Entry]]>([:])
    /// Held across a change (store, then `keys`) and a reload (read, then replace), as
    /// `LiveCatalog` holds its edits: a reload read before a registration was stored can then
    /// never replace `keys` after the registration added to them. Token checks never take it.
    private let changing = Locked<Void>(())

    init(store: any PlaybackKeyStorage & SharedStateStorage) throws {
        self.store = store
        try reload()
    }

    /// Reads the keys from the store again (at start, and when another instance changed them).
    func reload() throws {
        try changing.withLock { _ in
            var loaded: [String: [String: Entry]] = [:]
            for stored in try store.playbackKeys() {
                let registered = RegisteredKey(id: stored.id, accountID: stored.accountID, publicKey: stored.publicKeyPEM,
                                               createdAt: stored.createdAt)
                if let key = try? Self.parse(pem: registered.publicKey) {
                    loaded[registered.accountID, default: [:]][registered.id] = Entry(registered: registered, key: key)
                }
            }
            keys.withLock { $0 = loaded }
        }
    }

    // MARK: Registry

    /// Why a key could not be registered.
    enum RegistrationError: Error { case invalidKey(String), exists }

    /// Registers `pem` (an RSA public key of at least 2048 bits) as `id` for `accountID`.
    func register(accountID: String, id: String, pem: String, now: Date) throws -> RegisteredKey {
        let key: _RSA.Signing.PublicKey
        do { key = try Self.parse(pem: pem) } catch { throw RegistrationError.invalidKey("\(error)") }
        let registered = RegisteredKey(id: id, accountID: accountID, publicKey: pem, createdAt: now)
        try changing.withLock { _ in
            let inserted = try store.insertPlaybackKey(StoredPlaybackKey(accountID: accountID, id: id, publicKeyPEM: pem, createdAt: now))
            guard inserted else { throw RegistrationError.exists }
            keys.withLock { $0[accountID, default: [:]][id] = Entry(registered: registered, key: key) }
        }
        try store.publish(.playbackKeys, value: nil)
        return registered
    }

    /// The keys of `accountID`, by id.
    func list(accountID: String) -> [RegisteredKey] {
        keys.withLock { ($0[accountID] ?? [:]).values.map(\.registered) }.sorted { $0.id < $1.id }
    }

    /// Removes a key; false when there was none.
    func remove(accountID: String, id: String) throws -> Bool {
        let removed = try changing.withLock { _ in
            let removed = try store.deletePlaybackKey(accountID: accountID, id: id)
            keys.withLock { _ = $0[accountID]?.removeValue(forKey: id) }
            return removed
        }
        if removed { try store.publish(.playbackKeys, value: nil) }
        return removed
    }

    private static func parse(pem: String) throws -> _RSA.Signing.PublicKey {
        // jwt-kit reads SPKI and PKCS#1 PEM and refuses keys under 2048 bits.
        let checked = try Insecure.RSA.PublicKey(pem: pem)
        return try _RSA.Signing.PublicKey(derRepresentation: checked.derRepresentation)
    }

    // MARK: Verification

    /// Checks `raw` for `accountID` at `now`: RS256 signature by a registered key, `accid`,
    /// `exp` (required), `nbf`. The error is a ready refusal.
    func verify(_ raw: String, accountID: String, now: Date) throws(HTTPError) -> PlaybackToken {
        func invalid(_ why: String) -> HTTPError {
            HTTPError(401, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenValidation, why)
        }
        let parts = raw.split(separator: ".", omittingEmptySubsequences: false)
        let parsed: (header: JWTHeader, payload: PlaybackClaims, signature: Data)
        guard parts.count == 3 else { throw invalid("Token is not a well-formed JWT") }
        do {
            parsed = try DefaultJWTParser().parse(Array(raw.utf8), as: PlaybackClaims.self)
        } catch {
            throw invalid("Token is not a well-formed JWT")
        }
        guard parsed.header.alg == "RS256" else { throw invalid("Token must be signed with RS256") }
        let claims = parsed.payload
        if let claimed = claims.accid, claimed != accountID {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.accountID,
                            "Token is for account \(claimed), not \(accountID)")
        }
        let candidates: [Entry] = keys.withLock { all in
            let account = all[accountID] ?? [:]
            if let kid = parsed.header.kid { return account[kid].map { [$0] } ?? [] }
            return Array(account.values)
        }
        guard !candidates.isEmpty else {
            throw invalid(parsed.header.kid.map { "No playback key \($0) is registered for account \(accountID)" }
                           ?? "No playback key is registered for account \(accountID)")
        }
        let signingInput = Array(raw.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let digest = SHA256.hash(data: signingInput)
        let signature = _RSA.Signing.RSASignature(rawRepresentation: parsed.signature)
        guard candidates.contains(where: { $0.key.isValidSignature(signature, for: digest, padding: .insecurePKCS1v1_5) }) else {
            throw invalid("Token signature does not verify against the account's playback keys")
        }
        guard claims.accid != nil else { throw invalid("Token has no accid claim") }
        guard let exp = claims.exp?.value else { throw invalid("Token has no exp claim") }
        guard exp > now else { throw invalid("Token expired at \(WireDate.string(from: exp))") }
        if let nbf = claims.nbf?.value, nbf > now { throw invalid("Token is not valid before \(WireDate.string(from: nbf))") }
        if let limit = claims.dlimit, limit <= 0 { throw invalid("dlimit must be a positive number") }
        return PlaybackToken(contentID: claims.conid, userID: claims.uid, deviceLimit: claims.dlimit, ssaiConfigID: claims.vod?.ssai)
    }
}

/// The claims of a playback-restriction token. `accid`, `conid` and `uid` may be strings or
/// numbers; `dlimit` a number or a numeric string.
struct PlaybackClaims: JWTPayload {
    var accid: String?
    var conid: String?
    var uid: String?
    var dlimit: Int?
    var exp: ExpirationClaim?
    var nbf: NotBeforeClaim?
    /// `vod`: `{"ssai": "<ad config id>"}`, which static URL VMAPs need.
    var vod: VOD?

    struct VOD: Codable, Sendable { var ssai: String? }

    enum CodingKeys: String, CodingKey { case accid, conid, uid, dlimit, exp, nbf, vod }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys) throws -> String? {
            if let s = try? c.decodeIfPresent(String.self, forKey: key) { return s }
            if let n = try? c.decodeIfPresent(Int64.self, forKey: key) { return String(n) }
            guard try !c.contains(key) || c.decodeNil(forKey: key) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "must be a string or an integer")
            }
            return nil
        }
        accid = try text(.accid)
        conid = try text(.conid)
        uid = try text(.uid)
        dlimit = try text(.dlimit).map { value in
            guard let n = Int(value) else {
                throw DecodingError.dataCorruptedError(forKey: .dlimit, in: c, debugDescription: "must be an integer")
            }
            return n
        }
        exp = try c.decodeIfPresent(ExpirationClaim.self, forKey: .exp)
        nbf = try c.decodeIfPresent(NotBeforeClaim.self, forKey: .nbf)
        vod = try c.decodeIfPresent(VOD.self, forKey: .vod)
    }

    /// Claims are checked against the backend clock in `PlaybackRestrictions.verify`.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
