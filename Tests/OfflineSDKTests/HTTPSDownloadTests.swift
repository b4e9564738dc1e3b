import CurlTransfer
import Foundation
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// The SDK against the mock over HTTPS only, trusting the mock's local CA: the Playback API,
/// playlists, segments, the certificate and the license all over TLS.
@Suite("Downloads over HTTPS, live")
struct HTTPSDownloadTests {
    @Test("a FairPlay rental downloads, licenses and plays over HTTPS with the local CA trusted")
    func fairPlayOverHTTPS() async throws {
        try await withBackend({ $0.tls = TLSSettings() }) { server in
            let caFile = try #require(server.caFile)
            #expect(server.baseURL.hasPrefix("https://"))
            try await withHarness(server, { $0.trustedCAFile = caFile }) { h in
                let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
                #expect(video.sources.allSatisfy { $0.src.hasPrefix("https://") })
                let token = try await h.manager.requestVideoDownload(
                    video, mediaSelections: MediaSelections(audioLanguages: ["en", "fr"]),
                    parameters: DownloadParameters(license: .rental(duration: 3600, playDuration: 600)))
                #expect(try await h.events.finished(token) == nil)
                #expect(try await h.manager.status(token).downloadState == .completed)
                let segments = try await h.manager.store.offPool { try $0.segments(token) }
                #expect(!segments.isEmpty && segments.allSatisfy { $0.done && $0.url.hasPrefix("https://") })
                // Every request went over TLS: the request log has the license and the segments.
                // (logged once each answer is sent in full, a moment after the client may have it)
                #expect(try await eventually {
                    server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media/")).count >= segments.count
                })
                let log = server.app.requestLog.entries(RequestLog.Filter())
                #expect(log.contains { $0.path.hasPrefix("/license/v1/fairplay/") && $0.status == 200 })
                #expect(log.filter { $0.path.hasPrefix("/media/") }.count == segments.count)
                try await expectPlays(h.manager, token)
            }
        }
    }

    @Test("without the CA the certificate is refused with a stable code, and nothing is downloaded")
    func untrusted() async throws {
        try await withBackend({ $0.tls = TLSSettings() }) { server in
            try await withHarness(server) { h in
                let refused = await #expect(throws: PlaybackServiceError.self) { try await h.service.findVideo(id: Catalog.clearVideo) }
                #expect(refused?.code == .transport)
                #expect((refused?.underlying as? TransferError)?.code == .untrustedCertificate, "\(String(describing: refused))")
                let statuses = try await h.manager.offlineVideoStatus()
                #expect(statuses.isEmpty)
                #expect(server.app.requestLog.entries(RequestLog.Filter()).isEmpty, "no request got past the handshake")
            }
            // A CA file that did not sign it is refused the same way.
            let other = try TemporaryDirectory()
            defer { other.remove() }
            let stranger = other.url.appendingPathComponent("ca.pem")
            let made = try await Run.process("/usr/bin/openssl", [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=Someone else", "-keyout", other.url.appendingPathComponent("key.pem").path, "-out", stranger.path,
            ])
            try #require(made.exitCode == 0)
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey, trustedCAFile: stranger)
            let wrongCA = await #expect(throws: PlaybackServiceError.self) { try await service.findVideo(id: Catalog.clearVideo) }
            #expect((wrongCA?.underlying as? TransferError)?.code == .untrustedCertificate)
        }
    }
}
