import Foundation
import MicroHTTP
import WireModels

/// TEST ONLY: the raw content key of a FairPlay video over plain HTTP, so tools without
/// FairPlay (ffmpeg) can decrypt the SAMPLE-AES media. It exists only while
/// `BackendConfiguration.plainSampleAESKeysForTesting` is on (404 otherwise), and still
/// needs a valid `fastly_token`, like the AES-128 key endpoint (whose answer it shares).
extension MockBackendApp {
    static func addSampleAESTestKeyRoute(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/license/v1/sample-aes-test-key/:account/:video/:key") { app, request, p in
            guard app.configuration.plainSampleAESKeysForTesting else { throw HTTPError.notFound(request) }
            return try app.contentKeyResponse(request, p, protection: .fairplay)
        }
    }
}
