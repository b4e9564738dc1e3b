import Foundation
@testable import OfflineSDK
import Locking
import MockBackend
import TestKit
import Testing

/// Videos found with a playback-restriction JWT alone (no policy key): the JWT is never stored,
/// so renewing expired URLs during a download needs the app's help.
@Suite("OfflineVideoManager: videos authorized by a JWT alone")
struct RestrictedVideoTests {
    /// Gives a service with a fresh JWT when the manager asks, and counts the asks.
    final class Renewer: OfflineVideoManagerDelegate {
        let service: PlaybackService?
        let asked = Locked(0)
        init(_ service: PlaybackService?) { self.service = service }
        func playbackServiceForManifestURLTTLUpdate(for video: PlaybackVideo) -> PlaybackService? {
            asked.withLock { $0 += 1 }
            return service
        }
    }

    /// Registers the test key for the account through the admin API; a JWT for it, valid 10 hours.
    static func restrictedService(_ server: MockBackendServer) async throws -> PlaybackService {
        let body = try JSONSerialization.data(withJSONObject: ["id": TestKeys.kid, "public_key": TestKeys.publicKeyPEM])
        let registered = try await Curl.fetch(server.baseURL + "/_admin/v1/accounts/\(Catalog.account)/playback-keys",
                                              ["-X", "POST", "-H", "Authorization: Bearer \(server.app.adminToken)",
                                               "-H", "Content-Type: application/json", "--data-binary", String(decoding: body, as: UTF8.self)])
        #expect(registered.status == 201, "\(registered.text)")
        let jwt = TestKeys.jwt(#"{"accid":"\#(Catalog.account)","exp":\#(TestKeys.now + 10 * 3600)}"#)
        return PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: nil, authToken: jwt)
    }

    @Test("expired URLs during the download: renewed through the delegate's service; without one, tokenExpired saying what to do")
    func renewal() async throws {
        for withService in [false, true] {
            try await withBackend { server in
                let service = try await Self.restrictedService(server)
                let renewer = Renewer(withService ? service : nil)
                let network = ManualNetworkMonitor(path: .none)
                let storage = try TemporaryDirectory()
                defer { storage.remove() }
                var configuration = testConfiguration(storage)
                configuration.network = network
                let manager = try await OfflineVideoManager(configuration: configuration, delegate: renewer)
                let events = EventRecorder(manager)
                let video = try await service.findVideo(id: Catalog.clearVideo)
                #expect(video.origin?.policyKey == nil && video.origin?.authToken != nil)
                let token = try await manager.requestVideoDownload(video, mediaSelections: nil, parameters: nil)
                server.app.clock.offset = 7 * 3600  // every URL handed out so far has expired
                network.currentPath = .wifi
                let error = try await events.finished(token)
                #expect(renewer.asked.withLock { $0 } >= 1, "the delegate was asked")
                if withService {
                    #expect(error == nil)
                    #expect(try await manager.status(token).downloadState == .completed)
                } else {
                    #expect(error?.reason == .tokenExpired)
                    #expect(error?.message.contains("playbackServiceForManifestURLTTLUpdate") == true, "\(String(describing: error))")
                    #expect(try await manager.status(token).downloadState == .error)
                }
                await manager.close()
            }
        }
    }
}
