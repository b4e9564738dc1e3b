import Foundation
import LicenseProtocol
import Locking
import MicroHTTP
import WireModels
import Logging

/// Key delivery: the HLSe (AES-128) key endpoint, the FairPlay certificate and license
/// endpoints (docs/license-protocol.md), and the W3C ClearKey license server of DRM videos' DASH
/// sources. The license rules, the same for both, are `LicensePolicy`.
extension MockBackendApp {
    static func addLicenseRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/license/v1/aes128/:account/:video/:key") { app, request, p in
            try app.contentKeyResponse(request, p, protection: .aes128)
        }
        router.add(["GET"], "/license/v1/fairplay_app_cert/:account") { app, request, p in
            try app.fairPlayCertificate(request, accountID: p["account"])
        }
        router.add(["POST"], "/license/v1/fairplay/:account/:video/:key") { app, request, p in
            try app.links.verify(request, now: app.clock.now())
            return try app.fairPlayLicense(request, accountID: p["account"], videoUUID: p["video"], keyID: p["key"])
        }
        router.add(["POST"], "/license/v1/clearkey/:account/:video") { app, request, p in
            try app.links.verify(request, now: app.clock.now())
            return try app.clearKeyLicense(request, accountID: p["account"], videoUUID: p["video"])
        }
    }

    /// A video's raw content key, for a URL with a valid `fastly_token` that names the video,
    /// its account, its `protection` and its key id: the AES-128 key endpoint's answer, and
    /// the SAMPLE-AES test key endpoint's.
    func contentKeyResponse(_ request: HTTPRequest, _ p: RouteParameters, protection: Protection) throws(HTTPError) -> HTTPResponse {
        try links.verify(request, now: clock.now())
        guard let video = catalog.video(uuid: p["video"]), video.accountID == p["account"],
              video.protection == protection, let key = contentKeys[video.id], key.keyID == p["key"]
        else { throw HTTPError.notFound(request) }
        return Self.secretBytes(key.key, digested: true)
    }

    /// Key material (a content key, a CKC): never cached. A content key is a media body like
    /// the segments it opens, with its `Repr-Digest` (of 16 bytes, made as it goes) and ETag;
    /// a CKC, the answer to a POST, is not.
    private static func secretBytes(_ bytes: [UInt8], digested: Bool = false) -> HTTPResponse {
        let contentType = "application/octet-stream"
        var response = digested ? MediaResponse.bytes(bytes, digest: ReprDigest(of: bytes), contentType: contentType)
                                : HTTPResponse.bytes(bytes, contentType: contentType)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    /// The account's FairPlay application certificate (DER).
    func fairPlayCertificate(_ request: HTTPRequest, accountID: String) throws(HTTPError) -> HTTPResponse {
        guard let account = catalog.accounts[accountID] else { throw HTTPError.notFound(request) }
        guard account.fairPlay, let identity = certificates.identity(accountID: account.id) else {
            throw HTTPError(422, "UNPROCESSABLE_ENTITY", "FAIRPLAY_NOT_CONFIGURED", "Account \(account.id) has no FairPlay application certificate")
        }
        return .bytes(identity.certificate.derEncoded, contentType: "application/pkix-cert")
    }

    // MARK: FairPlay licenses

    /// The `Idempotency-Key` header: 1-128 visible ASCII characters, or absent.
    private static func idempotencyKey(_ request: HTTPRequest) throws(HTTPError) -> String? {
        guard let key = request.headers["Idempotency-Key"] else { return nil }
        let trimmed = key.trimmingCharacters(in: .whitespaces)
        guard (1...128).contains(trimmed.utf8.count), trimmed.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .badRequest("INVALID_IDEMPOTENCY_KEY", "Idempotency-Key must be 1-128 visible ASCII characters")
        }
        return trimmed
    }

    /// What a license URL names: the FairPlay video, its content key and its account's identity.
    private struct FairPlayTarget: Sendable {
        var video: CatalogVideo
        var contentKey: ContentKey
        var identity: LicenseServerIdentity
    }

    /// One license request: checks in the order of docs/license-protocol.md, then the
    /// policy (inside the store's transaction), then the CKC. The answer comes later: the
    /// connection waits for the decision's commit suspended, not on an MHD thread (with the
    /// default two threads, two licenses waiting for a commit held every other request up),
    /// and the CKC is signed on an MHD thread once it is resumed.
    func fairPlayLicense(_ request: HTTPRequest, accountID: String, videoUUID: String,
                                 keyID: String) throws(HTTPError) -> HTTPResponse {
        let target = try fairPlayTarget(accountID: accountID, videoUUID: videoUUID, keyID: keyID)
        let body = try Self.licenseRequestBody(request.body)
        let context = try openSPC(body.serverPlaybackContext, identity: target.identity)
        guard context.accountID == accountID, context.contentKeyID == keyID, body.keyID.isEmpty || body.keyID == keyID else {
            throw .badRequest("SPC_MISMATCH", "The SPC is for account \(context.accountID), key \(context.contentKeyID); the URL names \(accountID), \(keyID)")
        }
        let now = clock.now()
        let user = try restrictedUser(request, accountID: accountID, video: target.video, now: now)
        let licenseRequest = LicenseRequest(context: context, videoID: target.video.id, offline: Self.offlineHeader(request),
                                            profile: Self.profileHeader(request), user: user,
                                            idempotencyKey: try Self.idempotencyKey(request))
        return .later { [self] answer in
            licenses.submit(licenseRequest, accountID: accountID, now: now) { stored in
                answer { self.licenseAnswer(stored, target, context, request) }
            }
        }
    }

    /// The answer once the decision is stored (or the store failed): on an MHD thread.
    private func licenseAnswer(_ stored: Result<LicenseDecision, any Error>, _ target: FairPlayTarget,
                               _ context: ServerPlaybackContext, _ request: HTTPRequest) -> HTTPResponse {
        do {
            switch try decision(stored) {
            case .refuse(let refusal): throw refusal
            case .release: return HTTPResponse(status: 204)
            case .issue(let record, _): return try ckcResponse(record.terms, target, context)
            }
        } catch {
            return APIResponse.error(for: error, request: request, logger: logger)
        }
    }

    /// The video, key and identity the URL names; a 404 when any is missing.
    private func fairPlayTarget(accountID: String, videoUUID: String, keyID: String) throws(HTTPError) -> FairPlayTarget {
        guard let video = catalog.video(uuid: videoUUID), video.accountID == accountID, video.protection == .fairplay,
              let identity = certificates.identity(accountID: accountID)
        else { throw HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound, "No FairPlay video \(videoUUID) in account \(accountID)") }
        guard let contentKey = contentKeys[video.id], contentKey.keyID == keyID else {
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, "KEY_NOT_FOUND", "No content key \(keyID) for video \(video.id)")
        }
        return FairPlayTarget(video: video, contentKey: contentKey, identity: identity)
    }

    /// The JSON body; `INVALID_BODY` or `INVALID_BASE64` when it cannot be read.
    private static func licenseRequestBody(_ bytes: [UInt8]) throws(HTTPError) -> LicenseRequestBody {
        do throws(LicenseProtocolError) {
            return try LicenseRequestBody(parsing: bytes)
        } catch where error.code == .invalidBase64 {
            throw .badRequest("INVALID_BASE64", "server_playback_context is not base64")
        } catch {
            throw .badRequest("INVALID_BODY", #"Send {"publisher_id":"","application_id":"","key_id":"","server_playback_context":"<base64 SPC>"}"#)
        }
    }

    /// Opens the SPC with the account's key; an SPC for another certificate is told apart.
    private func openSPC(_ spc: [UInt8], identity: LicenseServerIdentity) throws(HTTPError) -> ServerPlaybackContext {
        do throws(LicenseProtocolError) {
            return try identity.open(spc: spc)
        } catch where error.code == .certificateMismatch {
            throw .denied("CERTIFICATE_MISMATCH", "The SPC is sealed to another application certificate; fetch this account's certificate_url")
        } catch {
            throw .badRequest("INVALID_SPC", "The SPC cannot be used: \(error.message)")
        }
    }

    /// The playback-restriction token's user, when a token came along: it must verify and,
    /// when it names content, name this video.
    private func restrictedUser(_ request: HTTPRequest, accountID: String, video: CatalogVideo,
                                now: Date) throws(HTTPError) -> RestrictedUser? {
        guard let raw = PlaybackAuth.bearerToken(in: request) else { return nil }
        let token = try restrictions.verify(raw, accountID: accountID, now: now)
        try PlaybackAuth.checkContent(token, video)
        return token.userID.map { RestrictedUser(userID: $0, deviceLimit: token.deviceLimit) }
    }

    /// `X-BOLT-OFFLINE-LICENSE: true`.
    private static func offlineHeader(_ request: HTTPRequest) -> Bool {
        // Byte-wise: Foundation's trimmingCharacters goes through NSString (~2 % of a license's server time).
        request.headers["X-BOLT-OFFLINE-LICENSE"].map { String($0.trimmingWhitespace()).caseInsensitiveEquals("true") } ?? false
    }

    /// `X-BC-CRT-CONFIG`, parsed: the policy decides what a bad one means.
    private static func profileHeader(_ request: HTTPRequest) -> Result<LicenseProfile, LicenseProtocolError>? {
        request.headers["X-BC-CRT-CONFIG"].map(parsedProfile)
    }

    /// A header value's parse, kept: an app sends the same few values (one per rental or
    /// purchase offer) with every request, and the parse (base64, then JSONSerialization) was
    /// ~3 % of a license's server time. It depends on the value alone; at most 64 are kept,
    /// full means start over.
    private static let profiles = Locked<[String: Result<LicenseProfile, LicenseProtocolError>]>([:])

    private static func parsedProfile(_ value: String) -> Result<LicenseProfile, LicenseProtocolError> {
        if let kept = profiles.withLock({ $0[value] }) { return kept }
        let parsed = Result { () throws(LicenseProtocolError) in try LicenseProfile(headerValue: value) }
        profiles.withLock { profiles in
            if profiles.count >= 64 { profiles.removeAll(keepingCapacity: true) }
            profiles[value] = parsed
        }
        return parsed
    }

    /// The policy's decision, taken and stored in one transaction; a 500 when the store fails,
    /// a 503 when it cannot be reached.
    private func decision(_ stored: Result<LicenseDecision, any Error>) throws(HTTPError) -> LicenseDecision {
        do {
            return try stored.get()
        } catch {
            if StoreAvailability.isUnavailable(error) { throw StoreAvailability.unavailable(error) }
            logger.error("license store failed: \(error)")
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "The license could not be stored")
        }
    }

    /// The CKC carrying `terms` and the content key, for the SPC's client.
    private func ckcResponse(_ terms: LicenseTerms, _ target: FairPlayTarget, _ context: ServerPlaybackContext) throws(HTTPError) -> HTTPResponse {
        do throws(LicenseProtocolError) {
            return Self.secretBytes(try target.identity.makeCKC(terms: terms, contentKey: target.contentKey.key,
                                                                iv: target.contentKey.iv, for: context))
        } catch {
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "The CKC could not be built: \(error.message)")
        }
    }

    // MARK: ClearKey licenses

    /// A W3C Clear Key license request (EME's `{"kids":[…],"type":…}`) for a DRM video's cenc key,
    /// decided by the same policy as a FairPlay acquisition: the playback-restriction token's
    /// user and device limit (the device named by `X-Device-ID`), `X-BC-CRT-CONFIG` purchase and
    /// rental terms, `persistent-license` (or `X-BOLT-OFFLINE-LICENSE`) for offline, revocation,
    /// the movable clock and the request log. The answer is EME's JWK set (base64url without
    /// padding, as Chromium requires); the terms, which a JWK set cannot carry, come as headers.
    func clearKeyLicense(_ request: HTTPRequest, accountID: String, videoUUID: String) throws(HTTPError) -> HTTPResponse {
        guard let video = catalog.video(uuid: videoUUID), video.accountID == accountID, video.protection == .fairplay else {
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound, "No DRM video \(videoUUID) in account \(accountID)")
        }
        guard let key = contentKeys[video.id]?.commonEncryptionKey else {
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "no content key for this video")
        }
        let body = try ClearKeyRequest(request.body)
        guard body.keyIDs.allSatisfy({ $0 == key.keyIDBytes }) else {
            let asked = body.keyIDs.map(ClearKeyRequest.base64URL).joined(separator: ", ")
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, "KEY_NOT_FOUND",
                            "Video \(video.id) has no key \(asked); its DASH key id is \(ClearKeyRequest.base64URL(key.keyIDBytes)) (\(key.keyID))")
        }
        let now = clock.now()
        let user = try restrictedUser(request, accountID: accountID, video: video, now: now)
        let device = request.headers["X-Device-ID"]?.trimmingCharacters(in: .whitespaces)
        if let device, !ServerPlaybackContext.isValidDeviceID(device) {
            throw .badRequest("INVALID_DEVICE_ID", "X-Device-ID must be 1-128 characters of A-Z a-z 0-9 . _ : -")
        }
        if user != nil, device == nil {
            throw .badRequest("DEVICE_ID_REQUIRED", "The token limits this user's devices: send X-Device-ID, the device's stable id, so the limit can count it")
        }
        // What a FairPlay SPC carries, from the request itself: a ClearKey request has no device identity or nonce of its own.
        let context = ServerPlaybackContext(kind: .acquire, accountID: accountID, contentKeyID: key.keyID, licenseID: nil,
                                            deviceID: device ?? "clearkey-browser", nonce: SecureBytes.random(16), createdAt: now, clientKey: [])
        let licenseRequest = LicenseRequest(context: context, videoID: video.id, offline: body.persistent || Self.offlineHeader(request),
                                            profile: Self.profileHeader(request), user: user, idempotencyKey: try Self.idempotencyKey(request))
        let sessionType = body.persistent ? "persistent-license" : "temporary"
        return .later { [self] answer in
            licenses.submit(licenseRequest, accountID: accountID, now: now) { stored in
                answer {
                    do {
                        switch try self.decision(stored) {
                        case .refuse(let refusal): throw refusal
                        case .release: return HTTPResponse(status: 204)
                        case .issue(let record, _):
                            let license: [String: Any] = ["keys": [["kty": "oct", "k": ClearKeyRequest.base64URL(key.key),
                                                                    "kid": ClearKeyRequest.base64URL(key.keyIDBytes)]],
                                                          "type": sessionType]
                            let json = (try? JSONSerialization.data(withJSONObject: license, options: [.sortedKeys])).map(Array.init) ?? []
                            var response = HTTPResponse.bytes(json, contentType: "application/json")
                            response.headers.add("Cache-Control", "no-store")
                            response.headers.add("X-License-ID", record.terms.licenseID)
                            if let end = record.terms.rentalEnd { response.headers.add("X-License-Rental-End", WireDate.string(from: end)) }
                            if let play = record.terms.playDuration { response.headers.add("X-License-Play-Duration", String(Int(play))) }
                            return response
                        }
                    } catch {
                        return APIResponse.error(for: error, request: request, logger: self.logger)
                    }
                }
            }
        }
    }
}

/// A W3C Clear Key license request (EME, "Clear Key": `{"kids":["<base64url>",…],"type":"temporary"}`).
struct ClearKeyRequest: Sendable {
    var keyIDs: [[UInt8]]
    /// `type` is `persistent-license`.
    var persistent: Bool

    init(_ body: [UInt8]) throws(HTTPError) {
        let example = #"Send {"kids":["<base64url key id>"],"type":"temporary"} (EME Clear Key)"#
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw .badRequest("INVALID_BODY", "The body is not a JSON object. \(example)")
        }
        guard let kids = object["kids"] as? [String], !kids.isEmpty, kids.count <= 16 else {
            throw .badRequest("INVALID_BODY", "kids must be an array of 1 to 16 key ids. \(example)")
        }
        keyIDs = try kids.map { kid throws(HTTPError) in
            guard let bytes = ClearKeyRequest.decodeBase64URL(kid), bytes.count == 16 else {
                throw .badRequest("INVALID_KEY_ID", "'\(kid)' is not a 16-byte key id in base64url without padding")
            }
            return bytes
        }
        switch object["type"] {
        case nil, "temporary" as String: persistent = false
        case "persistent-license" as String: persistent = true
        default: throw .badRequest("INVALID_BODY", "type must be temporary or persistent-license. \(example)")
        }
    }

    /// base64url without padding (EME: "'-' and '_' MUST be used instead of '+' and '/'", no '=').
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of base64url text (without padding; standard characters and padding refused, as Chromium refuses them).
    static func decodeBase64URL(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0)
                                                   || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
