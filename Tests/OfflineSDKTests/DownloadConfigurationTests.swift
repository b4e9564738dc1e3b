import CurlTransfer
import Foundation
import Locking
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// Records what the download-configuration callbacks saw, and changes the transfer configuration.
final class ConfigurationDelegate: OfflineVideoManagerDelegate {
    struct Announcement: Sendable {
        var variants: [OfflineVariant]
        var at: Date
        /// Segment requests the mock had answered when the delegate was called.
        var segmentRequestsBefore: Int
    }

    let server: MockBackendServer?
    /// Where the packages are: each whole-download progress is recorded with the segment files then on disk.
    let packages: URL?
    let change: @Sendable (inout TransferConfiguration) -> Void
    let offered = Locked<TransferConfiguration?>(nil)
    let announcements = Locked<[Announcement]>([])
    let wholeProgress = Locked<[(percent: Double, segmentsOnDisk: Int)]>([])

    init(server: MockBackendServer? = nil, packages: URL? = nil, change: @escaping @Sendable (inout TransferConfiguration) -> Void = { _ in }) {
        self.server = server
        self.packages = packages
        self.change = change
    }

    func didCreateTransferConfiguration(_ configuration: inout TransferConfiguration) {
        offered.withLock { $0 = configuration }
        change(&configuration)
    }

    func offlineVideoToken(_ token: OfflineVideoToken, willDownloadVariants variants: [OfflineVariant]) {
        let answered = server?.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media/")).count ?? 0
        announcements.withLock { $0.append(Announcement(variants: variants, at: Date(), segmentRequestsBefore: answered)) }
    }

    func offlineVideoToken(_ token: OfflineVideoToken, didProgressTo percent: Double) {
        let files = packages.flatMap { FileManager.default.enumerator(atPath: $0.path)?.allObjects as? [String] } ?? []
        let segments = files.filter { $0.hasSuffix(".ts") || ($0.hasSuffix(".vtt") && !$0.contains("sideband/")) }.count
        wholeProgress.withLock { $0.append((percent, segments)) }
    }
}

/// When the mock received each segment request: its logged end less its duration.
func segmentRequestSpans(_ server: MockBackendServer) -> [(start: Date, end: Date)] {
    server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media/"))
        .map { (start: $0.time.addingTimeInterval(-$0.durationMs / 1000), end: $0.time) }
        .sorted { $0.start < $1.start }
}

@Suite("Download configurations, track queries, the transfer hook, live")
struct DownloadConfigurationTests {
    @Test("a configuration picks the variant by predicate and adds auxiliary audio and subtitles; variants announced before any segment; one progress reaching 100 only at the end")
    func predicateAndAuxiliary() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let delegate = ConfigurationDelegate(server: server, packages: h.storage.url.appendingPathComponent("packages"))
            await h.manager.update(delegate: delegate, options: OfflineVideoManagerOptions())
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            let variants = try await h.manager.variants(for: video)
            #expect(variants.count == 3)
            let top = try #require(variants.map(\.peakBitRate).max())
            // Below the top bit rate and Main profile 3.0 (avc1.4d401e): 416x234 and 640x360; the higher wins.
            let qualifier = VariantQualifier.predicate { $0.peakBitRate < top && $0.codecs.contains("avc1.4d401e") && $0.frameRate == 25 }
            let artwork = Data((0..<600).map { UInt8($0 % 251) })
            let configuration = DownloadConfiguration(
                title: "Bars for the train", artworkData: artwork,
                primaryContentConfiguration: ContentConfiguration(variantQualifiers: [qualifier],
                                                                  mediaSelections: MediaSelections(audioLanguages: ["en"])),
                auxiliaryContentConfigurations: [ContentConfiguration(mediaSelections: MediaSelections(audioLanguages: ["fr"])),
                                                 ContentConfiguration(mediaSelections: MediaSelections(subtitleLanguages: ["de"]))])
            let token = try await h.manager.requestVideoDownload(video, downloadConfiguration: configuration, parameters: nil)
            #expect(try await h.events.finished(token) == nil)

            // The variant and tracks the configuration asked for.
            let chosen = try #require(variants.first { $0.resolution?.width == 640 })
            let tracks = try await h.manager.store.offPool { try $0.tracks(token) }
            #expect(tracks.map(\.kind) == ["video", "audio", "audio"])
            #expect(tracks.first?.name == "640x360")
            #expect(tracks.compactMap(\.language) == ["en", "fr"])

            // willDownloadVariants: once, naming that variant, heard before the mock saw any segment request.
            let announced = h.events.all.compactMap { if case .willDownloadVariants(token, let v) = $0 { v } else { nil } }
            #expect(announced == [[chosen]])
            let heard = delegate.announcements.withLock { $0 }
            #expect(heard.count == 1)
            let announcement = try #require(heard.first)
            #expect(announcement.variants == [chosen])
            #expect(announcement.segmentRequestsBefore == 0)
            let firstSegment = try #require(segmentRequestSpans(server).first)
            #expect(announcement.at <= firstSegment.start, "willDownloadVariants at \(announcement.at), first segment request at \(firstSegment.start)")

            // One progress for the whole download: rising, 100 once and last, none per media selection.
            let percents = h.events.all.compactMap { if case .downloadProgress(token, let p) = $0 { p } else { nil } }
            #expect(!percents.isEmpty)
            #expect(percents == percents.sorted(), "progress went backwards: \(percents)")
            #expect(percents.last == 100)
            #expect(percents.dropLast().allSatisfy { $0 < 100 }, "\(percents)")
            // 100 is reported only once all 18 segments (video, audio en and fr) are on disk.
            let heardProgress = delegate.wholeProgress.withLock { $0 }
            #expect(heardProgress.map(\.percent) == percents)
            #expect(heardProgress.allSatisfy { $0.percent < 100 || $0.segmentsOnDisk == 18 }, "\(heardProgress)")
            #expect(!h.events.all.contains { if case .progress(token, _, _) = $0 { true } else { false } })
            let variantsIndex = try #require(h.events.all.firstIndex { if case .willDownloadVariants(token, _) = $0 { true } else { false } })
            let progressIndex = try #require(h.events.all.firstIndex { if case .downloadProgress(token, _) = $0 { true } else { false } })
            #expect(variantsIndex < progressIndex)

            // Title as the display name, artwork in the package and in the video object.
            #expect(try await h.manager.status(token).displayName == "Bars for the train")
            let offline = try #require(await h.manager.videoObject(fromOfflineVideoToken: token))
            #expect(offline.offlineDisplayName == "Bars for the train")
            let artworkPath = try #require(offline.properties[OfflineVideoManager.OfflineProperty.artworkPath]?.stringValue)
            #expect(try Data(contentsOf: URL(fileURLWithPath: artworkPath)) == artwork)
            #expect(offline.properties[OfflineVideoManager.OfflineProperty.sidebandSubtitleLanguages] == .array([.string("de")]))
            try await expectPlays(h.manager, token)
        } }
    }

    @Test("a configuration is refused as the media-selections path refuses, and for its own mistakes; nothing is stored")
    func refusals() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let manager = h.manager
            let clear = try await h.service.findVideo(id: Catalog.clearVideo)
            func refusal(_ video: PlaybackVideo, _ configuration: DownloadConfiguration,
                         _ parameters: DownloadParameters? = nil) async -> OfflineVideoError? {
                await #expect(throws: OfflineVideoError.self) {
                    try await manager.requestVideoDownload(video, downloadConfiguration: configuration, parameters: parameters)
                }
            }
            let streamOnly = await refusal(try await h.service.findVideo(id: Catalog.streamOnlyVideo), DownloadConfiguration(title: "x"))
            #expect(streamOnly?.code == .unsupported && streamOnly?.reason == .notEligible)
            let language = await refusal(clear, DownloadConfiguration(title: "x", auxiliaryContentConfigurations: [
                ContentConfiguration(mediaSelections: MediaSelections(audioLanguages: ["ja"]))]))
            #expect(language?.code == .invalidParameter && language?.reason == .noMatchingRendition)
            let none = await refusal(clear, DownloadConfiguration(title: "x", primaryContentConfiguration: ContentConfiguration(
                variantQualifiers: [.predicate { $0.peakBitRate > 50_000_000 }])))
            #expect(none?.code == .invalidParameter && none?.reason == .noMatchingRendition)
            let both = await refusal(clear, DownloadConfiguration(title: "x", primaryContentConfiguration: ContentConfiguration(
                variantQualifiers: [.predicate { _ in true }])), DownloadParameters(requestedBitrate: 500_000))
            #expect(both?.code == .invalidParameter)
            let auxiliaryVariant = await refusal(clear, DownloadConfiguration(title: "x", auxiliaryContentConfigurations: [
                ContentConfiguration(variantQualifiers: [.predicate { _ in true }])]))
            #expect(auxiliaryVariant?.code == .invalidParameter)
            let untitled = await refusal(clear, DownloadConfiguration(title: "  "))
            #expect(untitled?.code == .invalidParameter)
            let bitrate = await refusal(clear, DownloadConfiguration(title: "x"), DownloadParameters(requestedBitrate: -1))
            #expect(bitrate?.code == .invalidParameter)
            #expect(try await manager.offlineVideoTokens.isEmpty)

            // Already downloading, whichever path asked first.
            let token = try await manager.requestVideoDownload(clear, mediaSelections: nil, parameters: nil)
            let twice = await refusal(clear, DownloadConfiguration(title: "again"))
            #expect(twice?.reason == .alreadyDownloaded)
            try await manager.deleteOfflineVideo(token)  // running or already completed
        } }
    }

    @Test("a preloaded FairPlay license is used by a configuration download naming an exact variant (same token); it plays")
    func preloadThenConfiguration() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let preloaded = try await h.manager.preloadFairPlayLicense(video, parameters: DownloadParameters(license: .rental(duration: 86400)))
            let lowest = try #require(try await h.manager.variants(for: video).min { $0.peakBitRate < $1.peakBitRate })
            let configuration = DownloadConfiguration(title: "Rented bars",
                                                      primaryContentConfiguration: ContentConfiguration(variantQualifiers: [.variant(lowest)]))
            let token = try await h.manager.requestVideoDownload(video, downloadConfiguration: configuration, parameters: nil)
            #expect(token == preloaded)
            #expect(try await h.events.finished(token) == nil)
            let announced = h.events.all.compactMap { if case .willDownloadVariants(token, let v) = $0 { v } else { nil } }
            #expect(announced == [[lowest]])
            #expect(try await h.manager.status(token).displayName == "Rented bars")
            #expect(try await h.manager.licenseInfo(token) != nil)
            try await expectPlays(h.manager, token)
        } }
    }

    @Test("track queries: nil until the download completes; then every option of the video, and those downloaded; the subtitle option at playback")
    func trackQueriesAndSubtitleOption() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let manager = h.manager
            let token = try await h.request(Catalog.clearVideo, MediaSelections(audioLanguages: ["en", "fr"], subtitleLanguages: ["de", "fr"]))
            try await manager.pauseVideoDownload(token)
            #expect(try await manager.mediaSelectionGroup(for: .audible, offlineVideoToken: token) == nil)
            #expect(try await manager.downloadedMediaSelectionOptions(for: .legible, offlineVideoToken: token) == nil)
            try await manager.resumeVideoDownload(token)
            #expect(try await h.events.finished(token) == nil)
            #expect(try await manager.mediaSelectionGroup(for: .audible, offlineVideoToken: "no-such-token") == nil)

            // Every option: the master's audio and subtitle renditions, then the sideband tracks.
            let audible = try #require(try await manager.mediaSelectionGroup(for: .audible, offlineVideoToken: token))
            #expect(audible.options.map(\.languageTag) == ["en", "fr", "es"])
            #expect(audible.options.allSatisfy { $0.source == .manifest && $0.mediaType == "audio" })
            #expect(audible.defaultOption?.languageTag == "en")
            #expect(!audible.allowsEmptySelection)
            let legible = try #require(try await manager.mediaSelectionGroup(for: .legible, offlineVideoToken: token))
            #expect(legible.options.map { "\($0.source.rawValue):\($0.languageTag ?? "")" }
                        == ["manifest:en", "manifest:fr", "manifest:de", "sideband:en", "sideband:fr", "sideband:de"])
            #expect(legible.allowsEmptySelection)
            #expect(try await manager.mediaSelectionGroup(for: MediaCharacteristic(rawValue: "public.visual"), offlineVideoToken: token) == nil)

            // Downloaded: the audio tracks and the sideband files (the SDK takes those over the manifest's).
            let audio = try #require(try await manager.downloadedMediaSelectionOptions(for: .audible, offlineVideoToken: token))
            #expect(audio.map(\.languageTag) == ["en", "fr"])
            let text = try #require(try await manager.downloadedMediaSelectionOptions(for: .legible, offlineVideoToken: token))
            #expect(text.map { "\($0.source.rawValue):\($0.languageTag ?? "")" } == ["sideband:fr", "sideband:de"])

            // The subtitle option: that language DEFAULT=YES,AUTOSELECT=YES in the served master, the others DEFAULT=NO.
            let playback = try await manager.openPlayback(token, options: PlaybackOptions(subtitleLanguage: "de"))
            #expect(playback.subtitleLanguage == "de")
            let master = try await HTTPClient().send(HTTPClientRequest(url: try playback.serve().absoluteString))
            await playback.close()
            let parsed = try MasterPlaylist(parsing: String(decoding: master.body, as: UTF8.self))
            let subtitles = parsed.renditions.filter { $0.type == .subtitles }
            #expect(Set(subtitles.compactMap(\.language)) == ["de", "fr"])
            #expect(subtitles.filter(\.isDefault).map(\.language) == ["de"])
            #expect(subtitles.first { $0.language == "de" }?.autoselect == true)

            let plain = try await manager.openPlayback(token)
            let plainMaster = try await HTTPClient().send(HTTPClientRequest(url: try plain.serve().absoluteString))
            await plain.close()
            #expect(try MasterPlaylist(parsing: String(decoding: plainMaster.body, as: UTF8.self)).renditions.filter { $0.type == .subtitles && $0.isDefault }.isEmpty)

            let missing = await #expect(throws: OfflineVideoError.self) {
                try await manager.openPlayback(token, options: PlaybackOptions(subtitleLanguage: "en"))
            }
            #expect(missing?.code == .invalidParameter && missing?.reason == .noMatchingRendition)
        } }
    }

    @Test("the delegate given to init changes the transfer configuration before the engine uses it: one segment at a time")
    func transferConfigurationHook() async throws {
        try await withBackend { server in
            // Slow segment answers: with the default parallelism they would overlap.
            try server.app.faults.add(FaultRule(id: "slow", route: .segment, latencyMs: 120))
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let delegate = ConfigurationDelegate { configuration in
                configuration.segmentsInParallel = 1
                configuration.maxConnectionsPerHost = 1
                configuration.lowSpeedLimit = 512
            }
            let manager = try await OfflineVideoManager(configuration: testConfiguration(storage), delegate: delegate)
            let events = EventRecorder(manager)
            #expect(delegate.offered.withLock { $0?.segmentsInParallel } == 6, "offered the configuration's values")
            #expect(manager.transferConfiguration.segmentsInParallel == 1)
            #expect(await manager.engine.configuration.maxHostConnections == 1)
            #expect(await manager.engine.configuration.lowSpeedLimit == 512)

            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            let token = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo),
                                                               mediaSelections: MediaSelections(audioLanguages: ["en", "fr"]), parameters: nil)
            #expect(try await events.finished(token) == nil)
            await manager.close()

            let spans = segmentRequestSpans(server)
            #expect(spans.count == 18)
            let overlapping = zip(spans, spans.dropFirst()).filter { earlier, later in later.start < earlier.end.addingTimeInterval(-0.04) }
            #expect(overlapping.isEmpty, "\(overlapping.count) segment requests overlapped the one before")
        }
    }
}
