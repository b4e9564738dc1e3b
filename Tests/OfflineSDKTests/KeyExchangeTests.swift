import Foundation
import Locking
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// The app's hook on the FairPlay key exchange, and certificates looked up by identifier.
@Suite("FairPlay key exchange hook and certificate identifiers, live")
struct KeyExchangeTests {
    /// Records what goes through; optionally answers license requests itself or fails them.
    final class Proxy: FairPlayKeyExchange {
        enum Mode: Sendable { case forward, tamper, fail }
        struct Failure: Error, Equatable {}
        let mode: Mode
        let seen = Locked<[KeyExchangeRequest.Purpose]>([])
        let bodies = Locked<[[UInt8]]>([])
        init(_ mode: Mode) { self.mode = mode }

        func applicationCertificate(_ request: KeyExchangeRequest, send: KeyExchangeSender) async throws -> KeyExchangeResponse {
            seen.withLock { $0.append(request.purpose) }
            return try await send(request)
        }

        func contentKey(_ request: KeyExchangeRequest, send: KeyExchangeSender) async throws -> KeyExchangeResponse {
            seen.withLock { $0.append(request.purpose) }
            bodies.withLock { $0.append(request.body) }
            switch mode {
            case .forward:
                return try await send(request)
            case .tamper:
                var answer = try await send(request)
                answer.body[answer.body.count / 2] ^= 0x01
                return answer
            case .fail:
                throw Failure()
            }
        }
    }

    static func certificateRequests(_ server: MockBackendServer) -> Int {
        server.app.requestLog.entries().filter { $0.path.contains("certificate") }.count
    }

    @Test("certificate and license requests go through the hook; the download completes and the license is released through it")
    func forwarded() async throws {
        let proxy = Proxy(.forward)
        try await withBackend { server in try await withHarness(server, { $0.keyExchange = proxy }) { h in
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            #expect(try await h.events.finished(token) == nil)
            #expect(proxy.seen.withLock { $0 } == [.certificate, .acquire])
            let spc = try #require(proxy.bodies.withLock { $0.first })
            #expect(String(decoding: spc, as: UTF8.self).contains("server_playback_context"))
            try await h.manager.deleteOfflineVideo(token)
            #expect(await h.manager.sendPendingLicenseReports() == 0, "the release went out")
            #expect(proxy.seen.withLock { $0 } == [.certificate, .acquire, .release], "the certificate is fetched once")
        } }
    }

    @Test("an answer the hook altered is refused as if the server sent it; a hook that throws fails with its error kept")
    func tamperedAndFailing() async throws {
        for mode in [Proxy.Mode.tamper, .fail] {
            let proxy = Proxy(mode)
            try await withBackend { server in try await withHarness(server, { $0.keyExchange = proxy }) { h in
                let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
                let refused = await #expect(throws: OfflineVideoError.self) {
                    try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
                }
                #expect(refused?.code == .contentKeyRequestFailed)
                if mode == .tamper {
                    #expect(refused?.reason == .license && refused?.message.contains("does not verify") == true, "\(String(describing: refused))")
                } else {
                    #expect(refused?.reason == .network && refused?.underlying as? Proxy.Failure == Proxy.Failure())
                }
                #expect(try await h.manager.offlineVideoStatus().isEmpty, "nothing stored")
            } }
        }
    }

    @Test("a certificate added for the account id, or under the default identifier, is used without fetching the URL; a wrong one is refused by the server")
    func identifiers() async throws {
        // Another backend's certificate: a valid one this backend did not issue.
        var foreign: [UInt8] = []
        try await withBackend { other in
            let video = try await PlaybackService(baseURL: other.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
                .findVideo(id: Catalog.fairPlayVideo)
            let url = try #require(DownloadPlanner.fairPlaySystem(of: video)?.certificateURL)
            foreign = try await Curl.fetch(url).body
        }
        try await withBackend { server in
            let video = try await PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
                .findVideo(id: Catalog.fairPlayVideo)
            let url = try #require(DownloadPlanner.fairPlaySystem(of: video)?.certificateURL)
            let own = try await Curl.fetch(url).body
            let fetchesBefore = Self.certificateRequests(server)
            for identifier in [Catalog.account, OfflineVideoManager.defaultFairPlayApplicationCertificateIdentifier] {
                try await withHarness(server) { h in
                    try await h.manager.addFairPlayApplicationCertificate(own, identifier: identifier)
                    let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
                    #expect(try await h.events.finished(token) == nil)
                    #expect(Self.certificateRequests(server) == fetchesBefore, "\(identifier): the URL was not fetched")
                }
            }
            try await withHarness(server) { h in
                try await h.manager.addFairPlayApplicationCertificate(foreign, identifier: Catalog.account)
                let refused = await #expect(throws: OfflineVideoError.self) {
                    try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
                }
                #expect(refused?.code == .contentKeyRequestFailed && refused?.httpStatus == 403, "\(String(describing: refused))")
                let body = try JSONDecoder().decode([APIError].self, from: Data(try #require(refused?.responseBody)))
                #expect(body.first?.errorSubcode == "CERTIFICATE_MISMATCH", "the account's certificate was the one used")
                // The URL's own certificate wins over the account's once it is known.
                try await h.manager.addFairPlayApplicationCertificate(own, identifier: url)
                let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
                #expect(try await h.events.finished(token) == nil)
            }
        }
    }
}
