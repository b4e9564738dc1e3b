import Foundation
import MicroHTTP
import WireModels

/// Key delivery: the HLSe (AES-128) key endpoint, and the FairPlay certificate and license
/// endpoints (the license server itself is issue 3's work).
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
            guard account.fairPlay else {
                return APIResponse.error(422, "UNPROCESSABLE_ENTITY", "FAIRPLAY_NOT_CONFIGURED",
                                         "Account \(account.id) has no FairPlay application certificate")
            }
            return APIResponse.error(501, "NOT_IMPLEMENTED", "FAIRPLAY_CERTIFICATE",
                                     "The FairPlay application certificate is not available in this version of the mock backend")
        }
        router.add(["POST"], "/license/v1/fairplay/:account/:video/:key") { app, request, p in
            if let refused = app.links.verify(request, now: app.clock.now()) { return refused.response }
            return APIResponse.error(501, "NOT_IMPLEMENTED", "FAIRPLAY_LICENSE",
                                     "The FairPlay license server is not available in this version of the mock backend")
        }
    }
}
