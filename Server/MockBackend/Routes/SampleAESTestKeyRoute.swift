import Foundation
import MicroHTTP
import WireModels

/// TEST ONLY: the raw content key of a FairPlay video over plain HTTP, so tools without
/// FairPlay (ffmpeg) can decrypt the SAMPLE-AES media. It exists only while
/// `BackendConfiguration.plainSampleAESKeysForTesting` is on (404 otherwise), and still
/// needs a valid `fastly_token`, like the AES-128 key endpoint.
extension MockBackendApp {
    static func addSampleAESTestKeyRoute(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/license/v1/sample-aes-test-key/:account/:video/:key") { app, request, p in
            guard app.configuration.plainSampleAESKeysForTesting else { return app.notFound(request).response }
            if let refused = app.links.verify(request, now: app.clock.now()) { return refused.response }
            guard let video = app.catalog.video(uuid: p["video"]), video.accountID == p["account"],
                  video.protection == .fairplay, let key = app.contentKeys[video.id], key.keyID == p["key"]
            else { return app.notFound(request).response }
            var response = HTTPResponse.bytes(key.key, contentType: "application/octet-stream")
            response.headers.add("Cache-Control", "no-store")
            return response
        }
    }
}
