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

    @Test("the README's test example compiles and runs from the two products alone: a fault rule, an admin edit, the request log")
    func readmeExample() async throws {
        try await withTestBackend { backend in
            try backend.faults.add(FaultRule(route: .segment, probability: 0.1, cutAfterBytes: 4_000))
            try backend.admin("PUT", "/accounts/\(TestBackend.Fixtures.account)/videos/mine",
                              ["name": "Mine", "asset": "bars", "protection": "clear", "offline_enabled": true])
            let service = PlaybackService(baseURL: backend.baseURL, accountID: TestBackend.Fixtures.account,
                                          policyKey: TestBackend.Fixtures.playPolicyKey)
            let video = try await service.findVideo(id: "mine")
            #expect(video.name == "Mine")
            #expect(await backend.requests(pathPrefix: "/playback/", atLeast: 1).count == 1)
            #expect(backend.faults.rules.first?.rule.effects == [.cut(afterBytes: 4_000)])
        }
    }
}
