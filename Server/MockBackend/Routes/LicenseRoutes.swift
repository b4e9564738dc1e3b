import Foundation
import LicenseProtocol
import MicroHTTP
import WireModels

/// Key delivery: the HLSe (AES-128) key endpoint, and the FairPlay certificate and license
/// endpoints (docs/license-protocol.md). The license rules are `LicensePolicy`.
extension MockBackendApp {
    static func addLicenseRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/license/v1/aes128/:account/:video/:key") { app, request, p in
            if let refused = app.links.verify(request, now: app.clock.now()) { return refused.response }
            guard let video = app.catalog.video(uuid: p["video"]), video.accountID == p["account"],
                  video.protection == .aes128, let key = app.contentKeys[video.id], key.keyID == p["key"]
            else { return app.notFound(request).response }
            var response = HTTPResponse.bytes(key.key, contentType: "application/octet-stream")
            response.headers.add("Cache-Control", "no-store")
            return response
        }
        router.add(["GET"], "/license/v1/fairplay_app_cert/:account") { app, request, p in
            guard let account = app.catalog.accounts[p["account"]] else { return app.notFound(request).response }
            guard account.fairPlay, let identity = app.certificates.identity(accountID: account.id) else {
                return APIResponse.error(422, "UNPROCESSABLE_ENTITY", "FAIRPLAY_NOT_CONFIGURED",
                                         "Account \(account.id) has no FairPlay application certificate")
            }
            return .bytes(identity.certificate.derEncoded, contentType: "application/pkix-cert")
        }
        router.add(["POST"], "/license/v1/fairplay/:account/:video/:key") { app, request, p in
            if let refused = app.links.verify(request, now: app.clock.now()) { return refused.response }
            do throws(ErrorResponse) {
                return try app.fairPlayLicense(request, accountID: p["account"], videoUUID: p["video"], keyID: p["key"])
            } catch {
                return error.response
            }
        }
    }

    /// One license request: checks in the order of docs/license-protocol.md, then the
    /// policy (inside the store's transaction), then the CKC.
    private func fairPlayLicense(_ request: HTTPRequest, accountID: String, videoUUID: String,
                                 keyID: String) throws(ErrorResponse) -> HTTPResponse {
        func bad(_ subcode: String, _ message: String) -> ErrorResponse {
            ErrorResponse(400, PlaybackAPIErrorCode.badRequest, subcode, message)
        }
        guard let video = catalog.video(uuid: videoUUID), video.accountID == accountID, video.protection == .fairplay,
              let identity = certificates.identity(accountID: accountID)
        else { throw ErrorResponse(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound, "No FairPlay video \(videoUUID) in account \(accountID)") }
        guard let contentKey = contentKeys[video.id], contentKey.keyID == keyID else {
            throw ErrorResponse(404, PlaybackAPIErrorCode.notFound, "KEY_NOT_FOUND", "No content key \(keyID) for video \(video.id)")
        }
        let body: LicenseRequestBody
        do { body = try LicenseRequestBody(parsing: request.body) } catch {
            if error.code == .invalidBase64 { throw bad("INVALID_BASE64", "server_playback_context is not base64") }
            throw bad("INVALID_BODY", #"Send {"publisher_id":"","application_id":"","key_id":"","server_playback_context":"<base64 SPC>"}"#)
        }
        let context = try openSPC(body.serverPlaybackContext, identity: identity)
        guard context.accountID == accountID, context.contentKeyID == keyID, body.keyID.isEmpty || body.keyID == keyID else {
            throw bad("SPC_MISMATCH", "The SPC is for account \(context.accountID), key \(context.contentKeyID); the URL names \(accountID), \(keyID)")
        }
        let now = clock.now()
        var user: RestrictedUser?
        if let raw = PlaybackAuth.bearerToken(in: request.headers) {
            let token: PlaybackToken
            switch restrictions.verify(raw, accountID: accountID, now: now) {
            case .failure(let error): throw error
            case .success(let verified): token = verified
            }
            if let refusal = PlaybackAuth.checkContent(token, video) { throw refusal }
            user = token.userID.map { RestrictedUser(userID: $0, deviceLimit: token.deviceLimit) }
        }
        let offline = request.headers["X-BOLT-OFFLINE-LICENSE"]?.trimmingCharacters(in: .whitespaces).lowercased() == "true"
        let profile: Result<LicenseProfile, LicenseProtocolError>? = request.headers["X-BC-CRT-CONFIG"].map { value in
            Result { () throws(LicenseProtocolError) in try LicenseProfile(headerValue: value) }
        }
        let decision: LicenseDecision
        do {
            decision = try licenses.process(LicenseRequest(context: context, videoID: video.id, offline: offline, profile: profile,
                                                           user: user),
                                            accountID: accountID, now: now)
        } catch {
            logger.error("license store failed: \(error)")
            throw ErrorResponse(500, PlaybackAPIErrorCode.serverError, nil, "The license could not be stored")
        }
        switch decision {
        case .refuse(let refusal):
            throw refusal
        case .release:
            return HTTPResponse(status: 204)
        case .issue(let record, _):
            do {
                let ckc = try identity.makeCKC(terms: record.terms, contentKey: contentKey.key, iv: contentKey.iv, for: context)
                var response = HTTPResponse.bytes(ckc, contentType: "application/octet-stream")
                response.headers.add("Cache-Control", "no-store")
                return response
            } catch {
                throw ErrorResponse(500, PlaybackAPIErrorCode.serverError, nil, "The CKC could not be built: \(error.message)")
            }
        }
    }

    /// Opens the SPC with the account's key; an SPC for another certificate is told apart.
    private func openSPC(_ spc: [UInt8], identity: LicenseServerIdentity) throws(ErrorResponse) -> ServerPlaybackContext {
        do throws(LicenseProtocolError) {
            return try identity.open(spc: spc)
        } catch {
            if error.code == .certificateMismatch {
                throw ErrorResponse(403, PlaybackAPIErrorCode.accessDenied, "CERTIFICATE_MISMATCH",
                                    "The SPC is sealed to another application certificate; fetch this account's certificate_url")
            }
            throw ErrorResponse(400, PlaybackAPIErrorCode.badRequest, "INVALID_SPC", "The SPC cannot be used: \(error.message)")
        }
    }
}
