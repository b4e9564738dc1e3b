import CurlTransfer
import Foundation
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// The SDK against the live mock with fault rules: every download either completes with every
/// byte equal to what the server serves, or fails with a stable error code, and is never
/// marked completed with missing or short data. The segment faults run on each package format
/// (MPEG-TS, CMAF segments, CMAF byte ranges); the license faults do not depend on it.
@Suite("Downloads through injected faults, live")
struct FaultToleranceTests {
    /// Every stored segment of `token` is done and byte for byte what the server serves now (a
    /// byte-range piece: its range; call once the rules are removed), and the package plays.
    static func expectWhole(_ server: MockBackendServer, _ h: Harness, _ token: OfflineVideoToken,
                            sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await h.manager.status(token).downloadState == .completed, sourceLocation: sourceLocation)
        let segments = try await h.manager.store.offPool { try $0.segments(token) }
        let folder = await h.manager.packageFolder(token)
        let client = HTTPClient()
        #expect(!segments.isEmpty && segments.allSatisfy(\.done), sourceLocation: sourceLocation)
        for segment in segments {
            let range = segment.range.map { [("Range", "bytes=\($0.offset)-\($0.offset + $0.length - 1)")] } ?? []
            let served = try await client.send(HTTPClientRequest(url: segment.url, headers: range))
            let local = Array(try Data(contentsOf: folder.appendingPathComponent(segment.file)))
            #expect(served.status == (range.isEmpty ? 200 : 206) && local == served.body, "\(segment.file) differs from \(segment.url)",
                    sourceLocation: sourceLocation)
            #expect(segment.bytes == Int64(local.count), sourceLocation: sourceLocation)
        }
        try await expectPlays(h.manager, token, sourceLocation: sourceLocation)
    }

    /// The name a fault rule gives the rendition of `variant`: `416x234`, or `hevc:416x234` for
    /// an HEVC one (a CMAF master lists both).
    static func renditionName(_ variant: VariantStream) -> String? {
        guard let resolution = variant.resolution?.description else { return nil }
        let hevc = variant.codecs.map { $0.contains("hvc1") || $0.contains("hev1") } ?? false
        return (hevc ? "hevc:" : "") + resolution
    }

    /// Answers each rule changed, by id.
    static func applied(_ server: MockBackendServer) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: server.app.faults.rules.map { ($0.rule.id ?? "", $0.applied) })
    }

    @Test("segments reset mid-body (the first three, then 10 %) and answered 503 (5 %): the download completes, every byte as served",
          arguments: PackageFormat.allCases)
    func resetsAndErrors(_ format: PackageFormat) async throws {
        try await format.withHarness(backend: { $0.faultSeed = 7 }) { server, h in
            // 400 bytes: inside every body, a CMAF init segment's too.
            try server.app.faults.add(FaultRule(id: "first-cuts", route: .segment, times: 3, cutAfterBytes: 400))
            try server.app.faults.add(FaultRule(id: "cuts", route: .segment, probability: 0.1, cutAfterBytes: 20_000))
            try server.app.faults.add(FaultRule(id: "errors", route: .segment, probability: 0.05, status: 503))
            let token = try await h.request(Catalog.clearVideo, MediaSelections(audioLanguages: ["en", "fr", "es"], subtitleLanguages: ["de"]))
            #expect(try await h.events.finished(token) == nil)
            let applied = Self.applied(server)
            #expect(applied["first-cuts"] == 3, "\(applied)")
            // The request log saw the cut answers as incomplete.
            #expect(try await eventually {
                server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media/")).filter { $0.fault?.hasPrefix("first-cuts") == true }.count == 3
            })
            let cut = server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media/")).filter { $0.fault?.hasPrefix("first-cuts") == true }
            #expect(cut.count == 3 && cut.allSatisfy { !$0.completed && $0.bytes == 400 })
            server.app.faults.removeAll()
            try await Self.expectWhole(server, h, token)
        }
    }

    @Test("a congested network: 25 % of segment bodies cut after 3,000 bytes and 10 % answered 503 (Retry-After 1) on the 10-minute video: it completes, every byte as served",
          arguments: PackageFormat.allCases)
    func harshRates(_ format: PackageFormat) async throws {
        try await format.withHarness(backend: { $0.faultSeed = 22 }) { server, h in
            try server.app.faults.add(FaultRule(id: "cuts", route: .segment, probability: 0.25, cutAfterBytes: 3_000))
            try server.app.faults.add(FaultRule(id: "busy", route: .segment, probability: 0.1, status: 503, retryAfter: 1))
            let token = try await h.request(Catalog.tenMinuteVideo)
            let failure = try await h.events.finished(token, timeout: .seconds(600))
            #expect(failure == nil, "\(String(describing: failure))")
            let applied = Self.applied(server)
            #expect(applied["cuts"] ?? 0 > 50 && applied["busy"] ?? 0 > 20, "the faults were in force: \(applied)")
            server.app.faults.removeAll()
            try await Self.expectWhole(server, h, token)
        }
    }

    @Test("5 % of segment answers with 3 bytes flipped: each is caught by its Repr-Digest and fetched again; the download completes byte-identical, digests recorded; a segment changed on disk later is found by the deep check",
          arguments: PackageFormat.allCases)
    func corruptBodies(_ format: PackageFormat) async throws {
        try await format.withHarness(backend: { $0.faultSeed = 5 }) { server, h in
            try server.app.faults.add(FaultRule(id: "flips", route: .segment, probability: 0.05, corruptBytes: 3))
            let token = try await h.request(Catalog.tenMinuteVideo)
            let failure = try await h.events.finished(token, timeout: .seconds(600))
            #expect(failure == nil, "\(String(describing: failure))")
            #expect(Self.applied(server)["flips"] ?? 0 > 10, "the fault was in force")
            server.app.faults.removeAll()
            try await Self.expectWhole(server, h, token)
            let states = try await h.manager.store.offPool { try $0.segments(token) }.count
            let digests = try await h.manager.store.offPool { store in
                var digests = 0
                try store.forEachSegmentState(token) { if $0.digest?.count == 64 { digests += 1 } }
                return digests
            }
            #expect(digests == states, "every segment's digest recorded")

            // At rest: one byte changed in one segment. The quick check sees nothing; the deep one
            // finds it, deletes it, marks it to be fetched again and makes the download stale.
            let segment = try #require(try await h.manager.store.offPool { try $0.segments(token) }.dropFirst(40).first)
            let path = await h.manager.packageFolder(token).appendingPathComponent(segment.file).path
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes[bytes.count / 2] ^= 0x01
            try bytes.write(to: URL(fileURLWithPath: path))
            #expect(try await h.manager.checkStorage() == false)
            #expect(try await h.manager.checkStorage(deep: true) == true)
            #expect(try await h.manager.status(token).downloadState == .stale)
            #expect(!FileManager.default.fileExists(atPath: path))
            let after = try await h.manager.store.offPool { try $0.segments(token) }.first { $0.file == segment.file }
            #expect(after?.done == false, "marked to be fetched again")
        }
    }

    @Test("a rendition whose every answer arrives damaged is no progress: the download fails, saying so, and keeps none of those bodies",
          arguments: PackageFormat.allCases)
    func alwaysDamaged(_ format: PackageFormat) async throws {
        try await format.withHarness({ _, configuration in
            configuration.failuresWithoutProgress = 3
            configuration.timeWithoutProgress = .zero
        }) { server, h in
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            let lowest = try #require(try await h.manager.variantBitrates(for: video).first)
            let master = try MasterPlaylist(parsing: try await Curl.fetch(try format.hlsSource(of: video.video).src).text)
            let rendition = try #require(master.variants.first { $0.bandwidth == lowest }.flatMap(Self.renditionName))
            try server.app.faults.add(FaultRule(id: "flips", route: .segment, rendition: rendition, corruptBytes: 2))
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(requestedBitrate: lowest))
            let error = try #require(try await h.events.finished(token))
            #expect(error.code == .downloadFailure && error.message.contains("arrived damaged"), "\(error)")
            #expect(try await h.manager.status(token).downloadState == .error)
            let video0 = try await h.manager.store.offPool { try $0.segments(token) }.filter { $0.track == 0 }
            #expect(!video0.isEmpty && video0.allSatisfy { !$0.done }, "no damaged body kept as done")
        }
    }

    @Test("a license answered 503 with Retry-After: 2 is asked again about 2 s later (the request log's times), with a fresh SPC, and the download completes")
    func licenseRetryAfter() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            try server.app.faults.add(FaultRule(id: "busy", route: .license, times: 1, status: 503, retryAfter: 2))
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            #expect(try await h.events.finished(token) == nil)
            let tries = server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/license/v1/fairplay/"))
                .filter { $0.method == "POST" }.sorted { $0.id < $1.id }
            try #require(tries.count >= 2, "\(tries)")
            #expect(tries[0].status == 503 && tries[1].status == 200)
            let waited = tries[1].time.timeIntervalSince(tries[0].time)
            #expect(waited >= 1.9, "asked again after \(waited) s, before the 2 s the server asked for")
            try await Self.expectWhole(server, h, token)
        } }
    }

    @Test("a license answer lost after the server issued it (the connection dropped) is asked for again with a fresh SPC: the device gets it, and the server holds one license for the download")
    func lostLicenseAnswer() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            try server.app.faults.add(FaultRule(id: "lost", route: .license, times: 1, drop: true))
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            #expect(try await h.events.finished(token) == nil)
            #expect(Self.applied(server)["lost"] == 1)
            let listing = try await HTTPClient().send(HTTPClientRequest(url: server.baseURL + "/_admin/v1/licenses?video=\(Catalog.fairPlayVideo)",
                                                                        headers: [("Authorization", "Bearer \(server.app.adminToken)")]))
            let held = (try JSONSerialization.jsonObject(with: Data(listing.body)) as? [String: Any])?["licenses"] as? [[String: Any]]
            #expect(held?.count == 1, "one license on the server: \(String(decoding: listing.body, as: UTF8.self))")
            #expect(held?.first?["state"] as? String == "active")
            try await Self.expectWhole(server, h, token)
        } }
    }

    @Test("a bandwidth-limited download (1 MB/s per response) completes with every byte, and does not count as stalled",
          arguments: PackageFormat.allCases)
    func bandwidthLimited(_ format: PackageFormat) async throws {
        try await format.withHarness({ $1.stallTimeout = .seconds(1) }) { server, h in
            try server.app.faults.add(FaultRule(id: "thin", route: .segment, bytesPerSecond: 1_000_000))
            let token = try await h.request(Catalog.clearVideo)
            #expect(try await h.events.finished(token) == nil)
            // The log has an answer once it is sent in full, a moment after the client may have it.
            #expect(try await eventually {
                server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media/")).filter { $0.fault?.hasPrefix("thin") == true }.count
                    == Self.applied(server)["thin"]
            })
            let thin = server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media/")).filter { $0.fault?.hasPrefix("thin") == true }
            #expect(!thin.isEmpty && thin.allSatisfy(\.completed))
            #expect(Self.applied(server)["thin"] == thin.count)
            server.app.faults.removeAll()
            try await Self.expectWhole(server, h, token)
        }
    }

    @Test("stalled segments (headers, then nothing) time out and are fetched again; the download completes",
          arguments: PackageFormat.allCases)
    func stalledSegments(_ format: PackageFormat) async throws {
        try await format.withHarness({ $1.stallTimeout = .seconds(1) }) { server, h in
            try server.app.faults.add(FaultRule(id: "stall", route: .segment, times: 2, stall: true))
            let token = try await h.request(Catalog.clearVideo)
            #expect(try await h.events.finished(token) == nil)
            #expect(Self.applied(server)["stall"] == 2)
            server.app.faults.removeAll()
            try await Self.expectWhole(server, h, token)
        }
    }

    @Test("a media playlist that times out is asked for again; one that always does fails the request with downloadFailure/network and stores nothing",
          arguments: PackageFormat.allCases)
    func mediaPlaylistTimeout(_ format: PackageFormat) async throws {
        try await format.withHarness({ _, configuration in
            configuration.requestTimeout = .seconds(1)
            configuration.failuresWithoutProgress = 3
            configuration.timeWithoutProgress = .zero
        }) { server, h in
            try server.app.faults.add(FaultRule(id: "once", route: .mediaPlaylist, times: 1, stall: true))
            let token = try await h.request(Catalog.clearVideo)
            #expect(Self.applied(server)["once"] == 1)
            #expect(try await h.events.finished(token) == nil)

            try server.app.faults.add(FaultRule(id: "always", route: .mediaPlaylist, stall: true))
            let failure = await #expect(throws: OfflineVideoError.self) { _ = try await h.request(Catalog.englishOnlyVideo) }
            #expect(failure?.code == .downloadFailure && failure?.reason == .network, "\(String(describing: failure))")
            #expect(Self.applied(server)["always"] ?? 0 >= 3, "a playlist tried failuresWithoutProgress times")
            #expect(try await h.manager.offlineVideoTokens == [token], "the failed request left no record")
            let packages = try FileManager.default.contentsOfDirectory(atPath: h.storage.url.appendingPathComponent("packages").path)
            #expect(packages == [token], "and no package folder")
            server.app.faults.removeAll()
            try await Self.expectWhole(server, h, token)
        }
    }

    @Test("a license request that stalls is tried again with a fresh SPC; one that always stalls fails the request with contentKeyRequestFailed and stores nothing; asked again, it downloads and plays")
    func licenseStall() async throws {
        try await withBackend { server in try await withHarness(server, {
            $0.requestTimeout = .seconds(1)
            $0.failuresWithoutProgress = 2
            $0.timeWithoutProgress = .zero
        }) { h in
            try server.app.faults.add(FaultRule(id: "once", route: .license, times: 1, stall: true))
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let first = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            #expect(Self.applied(server)["once"] == 1)
            #expect(try await h.events.finished(first) == nil)
            try await h.manager.deleteOfflineVideo(first)
            #expect(await h.manager.sendPendingLicenseReports() == 0, "the release is out before the license route stalls")

            try server.app.faults.add(FaultRule(id: "stall", route: .license, stall: true))
            let failure = await #expect(throws: OfflineVideoError.self) {
                _ = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            }
            #expect(failure?.code == .contentKeyRequestFailed && failure?.reason == .network, "\(String(describing: failure))")
            #expect(Self.applied(server)["stall"] == 2, "tried failuresWithoutProgress times")
            #expect(try await h.manager.offlineVideoTokens.isEmpty)

            server.app.faults.removeAll()
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            #expect(try await h.events.finished(token) == nil)
            try await Self.expectWhole(server, h, token)
        } }
    }

    @Test("a rendition whose every segment is cut before its body fails the download with downloadFailure/network, never completed; nothing is kept as done",
          arguments: PackageFormat.allCases)
    func persistentCuts(_ format: PackageFormat) async throws {
        try await format.withHarness({ _, configuration in
            configuration.failuresWithoutProgress = 3
            configuration.timeWithoutProgress = .zero
        }) { server, h in
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            let lowest = try #require(try await h.manager.variantBitrates(for: video).first)
            let master = try MasterPlaylist(parsing: try await Curl.fetch(try format.hlsSource(of: video.video).src).text)
            let variant = try #require(master.variants.first { $0.bandwidth == lowest })
            let rendition = try #require(Self.renditionName(variant))
            try server.app.faults.add(FaultRule(id: "cut", route: .segment, rendition: rendition, cutAfterBytes: 0))
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: DownloadParameters(requestedBitrate: lowest))
            let error = try #require(try await h.events.finished(token))
            #expect(error.code == .downloadFailure && error.reason == .network, "\(error)")
            let status = try await h.manager.status(token)
            #expect(status.downloadState == .error)
            #expect(!h.events.all.contains(.downloadFinished(token, error: nil)))
            // No video segment counts as done: each answer ended right after its headers.
            let segments = try await h.manager.store.offPool { try $0.segments(token) }
            #expect(segments.filter { $0.track == 0 }.allSatisfy { !$0.done })
            #expect(Self.applied(server)["cut"] ?? 0 >= 3)

            // With the fault gone, retrying finishes it.
            server.app.faults.removeAll()
            try await h.manager.retryVideoDownload(token)
            #expect(try await h.events.wait { $0 == .downloadFinished(token, error: nil) } == .downloadFinished(token, error: nil))
            try await Self.expectWhole(server, h, token)
        }
    }
}
