import CurlTransfer
import Foundation
import LicenseProtocol
import Locking
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// What an app ported from Brightcove's offline guide and sample relies on: one parameter set for
/// preload and download, the offline video's properties, unsupported content refused up front,
/// the key-exchange hook set after the manager exists.
@Suite("Porting fidelity, live")
struct PortingFidelityTests {
    static let rentalVideo = "6415818918104"
    static let since2001 = Date.timeIntervalBetween1970AndReferenceDate

    @Test("preload with the app's parameter set, then request with the same set: the preloaded license, bitrate and display name; other terms refused")
    func preloadThenRequest() async throws {
        try await withBackend { server in try await withHarness(server, { $0.clock = { server.app.clock.now() } }) { h in
            let video = try await h.service.findVideo(id: Self.rentalVideo)
            let bitrates = try await h.manager.variantBitrates(for: video)
            let parameters = DownloadParameters(requestedBitrate: bitrates[1], displayName: "My rental",
                                                license: .rental(duration: 30 * 86400, playDuration: 86400))
            let token = try await h.manager.preloadFairPlayLicense(video, parameters: parameters)
            let preloaded = try await h.manager.status(token)
            #expect(preloaded.downloadState == .licensePreloaded && preloaded.displayName == "My rental")
            let licenseRequested = try #require(preloaded.licenseRequestTime)

            // Other terms: refused, and the preload stays usable (not "already downloaded").
            let other = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            }
            #expect(other?.reason == .invalidLicenseParameters && other?.message.contains("renewFairPlayLicense") == true)
            let shorter = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.requestVideoDownload(video, mediaSelections: nil,
                                                         parameters: DownloadParameters(license: .rental(duration: 86400, playDuration: 86400)))
            }
            #expect(shorter?.reason == .invalidLicenseParameters)
            #expect(try await h.manager.status(token).downloadState == .licensePreloaded)

            let same = try await h.manager.requestVideoDownload(video, mediaSelections: MediaSelections(audioLanguages: ["en"], subtitleLanguages: ["de"]),
                                                                parameters: parameters)
            #expect(same == token)
            #expect(try await h.events.finished(token) == nil)
            let status = try await h.manager.status(token)
            #expect(status.downloadState == .completed && status.displayName == "My rental")
            #expect(status.licenseRequestTime == licenseRequested, "the preloaded license, not a new one")
            #expect(try #require(try await h.manager.store.offPool { try $0.download(token) }).bitrate == bitrates[1], "the requested bitrate")

            // The offline video object: every property key the guide lists.
            let object = try #require(await h.manager.videoObject(fromOfflineVideoToken: token))
            typealias Key = OfflineVideoManager.OfflineProperty
            let p = object.properties
            #expect(p[Key.token]?.stringValue == token)
            #expect(p[Key.licenseRequestTime]?.numberValue == licenseRequested.timeIntervalSince1970 - Self.since2001)
            #expect(p[Key.startTime]?.numberValue == status.downloadStartTime.timeIntervalSince1970 - Self.since2001)
            #expect(p[Key.endTime]?.numberValue == status.downloadEndTime.map { $0.timeIntervalSince1970 - Self.since2001 })
            let expiry = try #require(try await h.manager.fairPlayLicenseExpiration(token))
            #expect(p[Key.licenseAbsoluteExpirationTime]?.numberValue == expiry.timeIntervalSince1970 - Self.since2001)
            #expect(p[Key.onlineSource]?.stringValue == video.sources.first { $0.fairPlay != nil }?.src, "the online source URL, a string")
            #expect(p[Key.licensePurchase] == .bool(false))
            let rental = try #require(p[Key.licenseRentalDuration]?.numberValue)
            #expect(rental == 2_592_000, "\(rental.bitPattern) \(rental - 2_592_000)")
            #expect(p[Key.licensePlayDuration]?.numberValue == 86400)
            for (name, path) in [(Key.thumbnailName, Key.thumbnailPath), (Key.posterName, Key.posterPath)] {
                let full = try #require(p[path]?.stringValue)
                #expect(p[name]?.stringValue == (full as NSString).lastPathComponent)
                #expect(FileManager.default.fileExists(atPath: full))
            }
            #expect(p[Key.relativeVideoPath]?.stringValue == "packages/\(token)")
            let bundle = try #require(p[Key.videoPath]?.stringValue)
            #expect(bundle == h.storage.url.appendingPathComponent("packages/\(token)").path, "the package folder, the video bundle")
            #expect(Storage.size(URL(fileURLWithPath: bundle)) > 100_000, "its files add up to the download")
            #expect(object.offlineMasterPlaylistPath == bundle + "/master.m3u8")
            #expect(p[Key.usesSidebandSubtitles] == .bool(true))
            #expect(p[Key.sidebandSubtitleLanguages] == .array([.string("de")]))
        } }
    }

    @Test("preload then a request with nil parameters keeps the preload's display name and bitrate")
    func preloadThenNil() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let bitrates = try await h.manager.variantBitrates(for: video)
            let token = try await h.manager.preloadFairPlayLicense(video, parameters: DownloadParameters(requestedBitrate: bitrates[2], displayName: "Bought",
                                                                                                        license: .purchase))
            #expect(try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: nil) == token)
            #expect(try await h.events.finished(token) == nil)
            #expect(try await h.manager.status(token).displayName == "Bought")
            #expect(try #require(try await h.manager.store.offPool { try $0.download(token) }).bitrate == bitrates[2])
            #expect(await h.manager.videoObject(fromOfflineVideoToken: token)?.properties[OfflineVideoManager.OfflineProperty.licensePurchase] == .bool(true))
        } }
    }

    @Test("the task façade: a key fetched first is used by a request on the same terms; other terms are refused, not dropped")
    func taskTerms() async throws {
        try await withBackend { server in try await withHarness(server, { $0.clock = { server.app.clock.now() } }) { h in
            let downloads = try await DownloadManager(manager: h.manager)
            let video = try await h.service.findVideo(id: Self.rentalVideo)
            let end = server.app.clock.now().addingTimeInterval(7 * 86400)
            let request = DownloadRequest(contentId: "rental", video: video, title: "Rental", expiration: end, playbackExpiryDuration: 3600)
            let key = try await downloads.licenseFetcher.fetchLicense(for: request)
            var longer = request
            longer.expiration = end.addingTimeInterval(86400)
            let refused = await downloads.enqueue(request: longer)
            #expect((try? refused.get()) == nil)
            if case .failure(let error) = refused { #expect(error.reason == .invalidLicenseParameters) }
            var noWindow = request
            noWindow.playbackExpiryDuration = nil
            if case .failure(let error) = await downloads.enqueue(request: noWindow) { #expect(error.reason == .invalidLicenseParameters) } else {
                Issue.record("a request without the key's play window was accepted")
            }
            let task = try await downloads.enqueue(request: request).get()
            #expect(task.token == key.token, "the fetched key's record")
            try await task.resume()
            #expect(try await h.events.finished(task.token) == nil)
            #expect(try await h.manager.status(task.token).licenseRequestTime == key.license.issuedAt)
        } }
    }

    @Test("AES-128 content is refused before any request, saying it is not supported for download")
    func aes128() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.contoso, policyKey: Catalog.contosoKey)
            let video = try await service.findVideo(id: Catalog.contosoAESVideo)
            let before = server.app.requestLog.entries().count
            let refused = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: nil)
            }
            #expect(refused?.code == .unsupported && refused?.reason == .hlseNotSupported)
            #expect(refused?.localizedDescription.contains("not supported for download") == true)
            let estimate = await #expect(throws: OfflineVideoError.self) { try await h.manager.estimateDownloadSize(video) }
            #expect(estimate?.reason == .hlseNotSupported)
            #expect(server.app.requestLog.entries().count == before, "no request reached the server")
        } }
    }

    @Test("authProxy set on a running manager takes effect for the next request, and unset for the one after")
    func authProxy() async throws {
        let proxy = KeyExchangeTests.Proxy(.forward)
        try await withBackend { server in try await withHarness(server) { h in
            #expect(h.manager.authProxy == nil)
            h.manager.authProxy = proxy
            let first = try await h.manager.preloadFairPlayLicense(try await h.service.findVideo(id: Catalog.fairPlayVideo),
                                                                   parameters: DownloadParameters(license: .purchase))
            #expect(proxy.seen.withLock { $0 } == [.certificate, .acquire])
            h.manager.authProxy = nil
            _ = try await h.manager.preloadFairPlayLicense(try await h.service.findVideo(id: Self.rentalVideo),
                                                           parameters: DownloadParameters(license: .rental(duration: 3600)))
            #expect(proxy.seen.withLock { $0 } == [.certificate, .acquire], "unset: straight to the server")
            #expect(try await h.manager.status(first).downloadState == .licensePreloaded)
        } }
    }

    @Test("the SDK keeps no free-space reserve by default; estimates are in megabytes of 1,000,000 bytes")
    func defaults() {
        #expect(OfflineVideoManagerConfiguration().minimumFreeSpace == 0)
        #expect(OfflineVideoManager.bytesPerMegabyte == 1_000_000)
    }
}

private enum Storage {
    /// Bytes of the regular files under `folder`.
    static func size(_ folder: URL) -> Int64 {
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey]) else { return 0 }
        var total: Int64 = 0
        for case let url as URL in walker { total += Int64((try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0) }
        return total
    }
}
