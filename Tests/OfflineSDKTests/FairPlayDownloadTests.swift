import CurlTransfer
import Foundation
import LicenseProtocol
import MockBackend
@testable import OfflineSDK
import SampleAES
import TestKit
import Testing
import WireModels

@Suite("FairPlay downloads and licenses, live")
struct FairPlayDownloadTests {
    static let rentalVideo = "6415818918104"

    /// The fixture segment the server encrypted for `file` of the 416x234 rendition.
    static func fixture(_ relative: String) throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return Array(try Data(contentsOf: root.appendingPathComponent("fixtures/media/bars").appendingPathComponent(relative)))
    }

    @Test("a FairPlay download needs license terms, acquires the license first, and stores SAMPLE-AES media its key decrypts")
    func purchase() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let noTerms = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: nil)
            }
            #expect(noTerms?.code == .invalidParameter)
            #expect(noTerms?.reason == .invalidLicenseParameters)
            #expect(try await h.manager.offlineVideoStatus().isEmpty)

            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            #expect(try await h.manager.fairPlayLicenseExpiration(token) == .distantFuture)
            #expect(try await h.events.finished(token) == nil)

            // The stored license opens only with the device key and carries the content key.
            let record = try #require(try await h.manager.store.offPool { try $0.download(token) })
            let sealed = try #require(record.license)
            let deviceKey = try await h.manager.licenses.client.deviceKey()
            let license = try License(sealed: Array(sealed), deviceKey: deviceKey)
            #expect(license.terms.kind == .purchase)
            #expect(license.terms.expiresAt == nil)
            #expect(!sealed.contains(Data(license.contentKey)), "the clear content key is never stored")

            // Segments on disk stay encrypted and decrypt to the fixture bytes with the license's key.
            let folder = await h.manager.packageFolder(token)
            let segments = try await h.manager.store.offPool { try $0.segments(token) }
            let video0 = try #require(segments.first { $0.track == 0 && $0.sequence == 0 })
            let stored = Array(try Data(contentsOf: folder.appendingPathComponent(video0.file)))
            let clear = try Self.fixture("video/416x234/seg_000.ts")
            #expect(stored != clear)
            #expect(try SampleAES.decrypt(segment: stored, key: license.contentKey, iv: license.iv) == clear)
            let client = HTTPClient()
            for segment in segments {
                let served = try await client.send(HTTPClientRequest(url: segment.url))
                #expect(Array(try Data(contentsOf: folder.appendingPathComponent(segment.file))) == served.body,
                        "\(segment.file) differs from what the server serves")
            }
            let master = try String(contentsOf: folder.appendingPathComponent("master.m3u8"), encoding: .utf8)
            #expect(master.contains("#EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI=\"skd://\(license.terms.contentKeyID)\""))
            #expect(await h.manager.videoObject(fromOfflineVideoToken: token)?.playableOffline == true)

            try await h.manager.invalidateFairPlayLicense(token)
            #expect(try await h.manager.fairPlayLicenseExpiration(token) == nil)
        } }
    }

    @Test("a preloaded rental is used by the download (same token); renewal turns it into a purchase; bad renewals are refused")
    func preloadAndRenew() async throws {
        try await withBackend { server in try await withHarness(server, { $0.clock = { server.app.clock.now() } }) { h in
            let video = try await h.service.findVideo(id: Self.rentalVideo)
            let clear = try await h.service.findVideo(id: Catalog.clearVideo)
            let notFairPlay = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.preloadFairPlayLicense(clear, parameters: DownloadParameters(license: .purchase))
            }
            #expect(notFairPlay?.code == .unsupported)

            let day: TimeInterval = 86400
            let before = server.app.clock.now()
            let token = try await h.manager.preloadFairPlayLicense(video, parameters: DownloadParameters(license: .rental(duration: day)))
            let after = server.app.clock.now()
            let preloaded = try await h.manager.status(token)
            #expect(preloaded.downloadState == .licensePreloaded)
            let expiry = try #require(try await h.manager.fairPlayLicenseExpiration(token))
            // Whole seconds on the wire (absoluteExpiration): allow one either side.
            #expect(expiry >= before.addingTimeInterval(day - 1) && expiry <= after.addingTimeInterval(day + 1))

            let withTerms = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            }
            #expect(withTerms?.reason == .invalidLicenseParameters)
            let same = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: nil)
            #expect(same == token)
            #expect(try await h.events.finished(token) == nil)
            #expect(try await h.manager.status(token).downloadState == .completed)

            let bitrate = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.renewFairPlayLicense(token, video: video, parameters: DownloadParameters(requestedBitrate: 1, license: .purchase))
            }
            #expect(bitrate?.code == .invalidParameter)
            let fresh = try await h.service.findVideo(id: Self.rentalVideo)
            let renewed = try await h.manager.renewFairPlayLicense(token, video: fresh, parameters: DownloadParameters(license: .purchase))
            #expect(renewed == token)
            #expect(try await h.manager.fairPlayLicenseExpiration(token) == .distantFuture)
            #expect(try await h.manager.fairPlayLicenseExpiration(try await h.request(Catalog.englishOnlyVideo)) == .distantFuture,
                    "a clear video never expires")
        } }
    }

    @Test("the license server's refusal reaches the app with its status and body")
    func refusal() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            // The playlists are fetched without the JWT; only the license request carries it,
            // and the license server refuses a token signed by no key registered for the account.
            var video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            video.origin?.authToken = "eyJhbGciOiJSUzI1NiJ9.eyJhY2NpZCI6IjY0MTU4MTg5MTgwMDEifQ.c2lnbmF0dXJl"
            let error = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            }
            #expect(error?.code == .contentKeyRequestFailed)
            #expect(error?.httpStatus == 401)
            let body = try JSONDecoder().decode([APIError].self, from: Data(try #require(error?.responseBody)))
            #expect(body.first?.errorSubcode == "TOKEN_VALIDATION", "the server's error array reaches the app")
            #expect(try await h.manager.offlineVideoStatus().isEmpty, "nothing stored when the license is refused")
            #expect(try FileManager.default.contentsOfDirectory(atPath: h.storage.url.appendingPathComponent("packages").path).isEmpty,
                    "no package folder left behind")
        } }
    }
}

@Suite("Licenses the server revoked, live")
struct RevokedLicenseTests {
    /// Revokes `token`'s license through the admin API.
    static func revoke(_ server: MockBackendServer, _ h: Harness, _ token: OfflineVideoToken) async throws {
        let record = try #require(try await h.manager.store.offPool { try $0.download(token) })
        let id = try #require(StoredLicense.terms(of: record)?.licenseID)
        let response = try await HTTPClient().send(HTTPClientRequest(url: server.baseURL + "/_admin/v1/licenses/\(id)/revoke", method: .post,
                                                                     headers: [("Authorization", "Bearer \(server.app.adminToken)")]))
        try #require(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
    }

    @Test("a revoked purchase: the renewal is refused with licenseRevoked and the license forgotten (playback refused); renewed again, it plays")
    func revokedRenewal() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            #expect(try await h.events.finished(token) == nil)
            try await Self.revoke(server, h, token)

            let refused = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.renewFairPlayLicense(token, video: video, parameters: DownloadParameters(license: .purchase))
            }
            #expect(refused?.code == .contentKeyRequestFailed && refused?.reason == .licenseRevoked && refused?.httpStatus == 403)
            #expect(try await h.manager.fairPlayLicenseExpiration(token) == nil, "the revoked license is forgotten")
            try await h.events.wait { $0 == .licenseExpirationChanged(token, expiration: nil) }
            let noLicense = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(token) }
            #expect(noLicense?.code == .invalidLicense)

            _ = try await h.manager.renewFairPlayLicense(token, video: try await h.service.findVideo(id: Catalog.fairPlayVideo),
                                                         parameters: DownloadParameters(license: .purchase))
            try await expectPlays(h.manager, token)
        } }
    }

    @Test("a rental revoked before its first play: the first-play report is refused and the SDK forgets the license")
    func revokedFirstPlay() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: FairPlayDownloadTests.rentalVideo)
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil,
                                                                 parameters: DownloadParameters(license: .rental(duration: 86400, playDuration: 3600)))
            #expect(try await h.events.finished(token) == nil)
            try await Self.revoke(server, h, token)

            // The first play is local (the license allows it offline); its report is refused.
            let playback = try await h.manager.openPlayback(token)
            await playback.close()
            try await h.events.wait { $0 == .licenseExpirationChanged(token, expiration: nil) }
            #expect(try await eventually { try await h.manager.store.offPool { try $0.pendingReports() }.isEmpty })
            #expect(try await h.manager.fairPlayLicenseExpiration(token) == nil)
            #expect(await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(token) }?.code == .invalidLicense)
        } }
    }
}
