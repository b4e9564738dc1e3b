import Foundation
import MockBackendTesting
import OfflineSDK
import Testing

// Only what an app imports (no CurlTransfer, no MicroHTTP): with MemberImportVisibility this
// file compiles only if those two products carry what the README tells apps to use.

@Suite("The products' public API, as an app sees it")
struct PublicAPITests {
    @Test("an app that imports OfflineSDK matches TransferError under a Playback API error: an untrusted certificate")
    func transferErrorFromOfflineSDK() async throws {
        var options = TestBackend.Options()
        options.configure = { $0.tls = TLSSettings() }
        try await withTestBackend(options) { backend in
            let service = PlaybackService(baseURL: backend.baseURL, accountID: TestBackend.Fixtures.account,
                                          policyKey: TestBackend.Fixtures.playPolicyKey)
            let refused = await #expect(throws: PlaybackServiceError.self) {
                try await service.findVideo(id: TestBackend.Fixtures.clearVideo)
            }
            let transfer = refused?.underlying as? TransferError
            #expect(transfer?.code == TransferError.Code.untrustedCertificate, "\(String(describing: refused))")
            #expect(backend.requests().isEmpty, "no request got past the handshake")
        }
    }
}
