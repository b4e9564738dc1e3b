import CurlTransfer
import Foundation
import LicenseProtocol
import MockBackend
@testable import OfflineSDK
import Locking
import Testing
import TestKit
import WireModels

/// The downloads and the playback sessions, each alone: an `OfflineDownloads` or an
/// `OfflinePlaybackSessions` on a store of its own, with test seams standing in for the manager and
/// for the other part (no manager; the licenses, the leaf both hold, are real), against a live mock.
@Suite("Downloads and playback sessions without the manager, live")
struct OfflineDownloadsTests {
    /// What the seams were asked, and what they answer.
    final class Seams: Sendable {
        let owner = Locked(true)
        let forgotten = Locked<[OfflineVideoToken]>([])
        let milestones = Locked<[String]>([])
        let downloading = Locked<Set<OfflineVideoToken>>([])
        let missing = Locked<[String]>([])
        let plays = Locked<[String]>([])

        var requireOwner: @Sendable () throws(OfflineVideoError) -> Void {
            { [owner] () throws(OfflineVideoError) in
                if !owner.withLock({ $0 }) { throw OfflineVideoError(.invalidParameter, .readOnly, "a reader") }
            }
        }

        var downloads: DownloadSeams {
            DownloadSeams(
                requireOwner: requireOwner, options: { OfflineVideoManagerOptions() },
                forgetVideoObject: { [forgotten] token in forgotten.withLock { $0.append(token) } },
                recordAnalytics: { [milestones] _, milestone in
                    milestones.withLock { list in
                        switch milestone {
                        case .requested: list.append("requested")
                        case .finished(let error): list.append(error.map { "failed \($0.reason)" } ?? "completed")
                        }
                    }
                })
        }

        var sessions: PlaybackSeams {
            PlaybackSeams(
                requireOwner: requireOwner, options: { OfflineVideoManagerOptions() },
                isDownloading: { [downloading] token in downloading.withLock { $0.contains(token) } },
                refreshURLs: { _ throws(OfflineVideoError) in },
                filesMissing: { [missing] _, file in missing.withLock { $0.append(file) } },
                recordPlay: { [plays] name, _, position, _ throws(OfflineVideoError) in
                    plays.withLock { $0.append("\(name.rawValue) \(position.map { "\($0)" } ?? "-")") }
                })
        }
    }

    /// A store under `storage` with the licenses, the downloads and the sessions on it, each
    /// connected to test seams rather than to each other.
    struct Parts {
        let store: OfflineStore
        let licenses: OfflineLicenses
        let downloads: OfflineDownloads
        let sessions: OfflinePlaybackSessions
        let seams = Seams()
        let events: AsyncStream<OfflineVideoEvent>

        init(_ storage: TemporaryDirectory) async throws {
            let configuration = testConfiguration(storage)
            let source = configuration.deviceSource, folder = storage.url
            let device = await BlockingWork.run { Result { () throws(OfflineVideoError) in try DeviceIdentity.load(source) } }
            store = try await BlockingWork.run { try OfflineStore(directory: folder, device: try device.get()) }
            try FileManager.default.createDirectory(at: PackageLayout.packagesDirectory(in: folder), withIntermediateDirectories: true)
            let transfer = TransferConfiguration(configuration)
            let engine = TransferEngine(configuration: transfer.engineConfiguration(trustedCAFile: nil))
            let http = HTTPClient(engine: engine)
            let planner = DownloadPlanner(client: http, retry: transfer.retryPolicy)
            let client = FairPlayLicenseClient(store: store, device: device, client: http, clock: configuration.clock, keyExchange: Locked(nil))
            let hub = EventHub()
            events = hub.subscribe()
            let queue = ActorQueue(label: "OfflineDownloadsTests")
            licenses = OfflineLicenses(actorQueue: queue, store: store, client: client, planner: planner, http: http, hub: hub,
                                       configuration: configuration)
            let arrivals = SegmentArrivals()
            downloads = OfflineDownloads(actorQueue: queue, configuration: configuration, transferConfiguration: transfer, store: store,
                                         engine: engine, client: http, planner: planner, licenses: licenses, hub: hub, arrivals: arrivals)
            sessions = OfflinePlaybackSessions(actorQueue: queue, configuration: configuration, store: store, client: http,
                                               licenses: licenses, arrivals: arrivals)
            await downloads.connect(seams.downloads)
            await sessions.connect(seams.sessions)
        }

        /// The stored state of `token`, read off the pool.
        func state(_ token: OfflineVideoToken) async throws -> OfflineVideoDownloadState? {
            try await BlockingWork.run { [store] in try store.download(token)?.downloadState }
        }

        /// How many downloads the store holds, read off the pool.
        func recordCount() async throws -> Int {
            try await BlockingWork.run { [store] in try store.allDownloads().count }
        }

        /// The file of the first segment of `token`, read off the pool.
        func firstSegmentFile(_ token: OfflineVideoToken) async throws -> String? {
            try await BlockingWork.run { [store] () throws -> String? in
                var file: String?
                try store.forEachSegmentState(token) { if file == nil { file = $0.file } }
                return file
            }
        }

        func close() async {
            await downloads.close()
            await licenses.close()
        }
    }

    /// Runs `body` with the parts on a fresh store and the clear video, against a live backend.
    static func withParts(_ body: (Parts, PlaybackVideo) async throws -> Void) async throws {
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let parts = try await Parts(storage)
            let video = try await PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
                .findVideo(id: Catalog.clearVideo)
            do {
                try await body(parts, video)
            } catch {
                await parts.close()
                throw error
            }
            await parts.close()
        }
    }

    /// Waits for `.downloadFinished` of `token` and returns its error.
    static func finished(_ token: OfflineVideoToken, in events: AsyncStream<OfflineVideoEvent>) async -> OfflineVideoError?? {
        for await event in events {
            if case .downloadFinished(token, let error) = event { return .some(error) }
        }
        return nil
    }

    @Test("a clear download through the downloads alone: requested, run, completed; the seams hear the request, the end and the stale video object")
    func downloadAlone() async throws {
        try await Self.withParts { parts, video in
            let token = try await parts.downloads.requestDownload(
                video, DownloadSpec(mediaSelections: MediaSelections(audioLanguages: ["en"], subtitleLanguages: []),
                                    parameters: DownloadParameters(requestedBitrate: 500_000)))
            let outcome = await Self.finished(token, in: parts.events)
            #expect(outcome.map { $0 == nil } == true, "finished without an error: \(String(describing: outcome))")
            #expect(try await parts.state(token) == .completed)
            #expect(parts.seams.milestones.withLock { $0 } == ["requested", "completed"])
            #expect(parts.seams.forgotten.withLock { $0 }.contains(token), "the completion makes the video object stale")
            // The task announces the end before it gives back its slot.
            await parts.downloads.waitUntilEnded(token)
            #expect(await parts.downloads.isDownloading(token) == false)
            let record = try await BlockingWork.run { [store = parts.store] in try store.download(token) }
            let status = await parts.downloads.status(of: try #require(record))
            #expect(status.downloadPercent == 100)
        }
    }

    @Test("a reader's downloads refuse a request before anything is stored or fetched")
    func readerRefused() async throws {
        try await Self.withParts { parts, video in
            parts.seams.owner.withLock { $0 = false }
            let refused = await attempt { () throws(OfflineVideoError) in
                _ = try await parts.downloads.requestDownload(video, DownloadSpec(mediaSelections: nil, parameters: DownloadParameters()))
            }
            guard case .failure(let error) = refused else { Issue.record("a reader's request was taken"); return }
            #expect(error.reason == .readOnly)
            let stored = try await parts.recordCount()
            #expect(stored == 0)
            #expect(parts.seams.milestones.withLock { $0 }.isEmpty)
        }
    }

    @Test("the sessions alone: a completed package plays; a session counts as playing until it closes; play events go to the seam; a missing file goes to the seam as filesMissing")
    func sessionsAlone() async throws {
        try await Self.withParts { parts, video in
            let token = try await parts.downloads.requestDownload(
                video, DownloadSpec(mediaSelections: MediaSelections(audioLanguages: ["en"], subtitleLanguages: []),
                                    parameters: DownloadParameters(requestedBitrate: 500_000)))
            #expect(await Self.finished(token, in: parts.events).map { $0 == nil } == true)

            let playback = try await parts.sessions.openPlayback(token, options: PlaybackOptions(), whenClosed: nil)
            #expect(await parts.sessions.isPlaying(token))
            let videoTrack = try #require(playback.tracks.first { $0.kind == .video })
            var segments = playback.segments(of: videoTrack).makeAsyncIterator()
            let first = try #require(try await segments.next())
            #expect(first.bytes.first == 0x47, "clear transport stream from the package")
            try await playback.reportPlay(at: 1.5)
            #expect(parts.seams.plays.withLock { $0 } == ["play_started 1.5"])
            await playback.close()
            #expect(await parts.sessions.isPlaying(token) == false)

            let object = try #require(await parts.sessions.videoObject(token))
            #expect(object.playableOffline)
            #expect(await parts.sessions.videoCache[token] != nil, "a completed download's object is cached")
            await parts.sessions.forgetVideoObject(token)
            #expect(await parts.sessions.videoCache[token] == nil)

            // A segment file gone: the sessions refuse, and leave the state change to the downloads (the seam).
            let folder = parts.downloads.packageFolder(token)
            let segment = try #require(try await parts.firstSegmentFile(token))
            try FileManager.default.removeItem(at: folder.appendingPathComponent(segment))
            let refused = await attempt { () throws(OfflineVideoError) in _ = try await parts.sessions.openPlayback(token, options: PlaybackOptions(), whenClosed: nil) }
            guard case .failure(let error) = refused else { Issue.record("a package missing a segment opened"); return }
            #expect(error.reason == .filesMissing)
            #expect(parts.seams.missing.withLock { $0 } == [segment])
            #expect(try await parts.state(token) == .completed, "the sessions change no state themselves")
        }
    }

    @Test("a task's rental end is carried as named: a key fetched for it matches that end exactly, a second off is other terms; a key preloaded by duration matches within the tolerance")
    func rentalEndCarriedOnce() throws {
        let issued = Date(timeIntervalSince1970: 1_800_000_000)
        let end = issued.addingTimeInterval(86400.25)
        // The server's end: the duration in whole seconds, counted from its time, a round trip later.
        let held = LicenseTerms(licenseID: "l", kind: .rental, accountID: "a", videoID: "v", contentKeyID: "key", deviceID: "d",
                                issuedAt: issued.addingTimeInterval(2), rentalEnd: issued.addingTimeInterval(2 + 86400), playDuration: 3600,
                                expiresAt: issued.addingTimeInterval(2 + 86400), persistable: true, requestNonce: [])
        var named = RequestedLicense.rental(duration: 86400, playDuration: 3600)
        named.rentalEnd = end
        let stored = try JSONDecoder().decode(RequestedLicense.self, from: JSONEncoder().encode(named))
        #expect(stored.rentalEnd == end, "the end survives the store")
        #expect(PreloadedTerms.matches(expiration: end, playDuration: 3600, asked: stored, held: held))
        #expect(!PreloadedTerms.matches(expiration: end.addingTimeInterval(1), playDuration: 3600, asked: stored, held: held))
        #expect(!PreloadedTerms.matches(expiration: end, playDuration: 600, asked: stored, held: held), "another play window")
        #expect(!PreloadedTerms.matches(expiration: nil, playDuration: nil, asked: stored, held: held), "a purchase is other terms")
        let byDuration = RequestedLicense.rental(duration: 86400, playDuration: 3600)
        #expect(PreloadedTerms.matches(expiration: end.addingTimeInterval(30), playDuration: 3600, asked: byDuration, held: held))
        #expect(!PreloadedTerms.matches(expiration: end.addingTimeInterval(120), playDuration: 3600, asked: byDuration, held: held))
        #expect(stored == byDuration, "the same terms: the named end is how they were asked, not another term")
    }

    /// Weak references to a manager and its parts.
    struct Parted: Sendable {
        weak var manager: OfflineVideoManager?
        weak var downloads: OfflineDownloads?
        weak var sessions: OfflinePlaybackSessions?
        weak var licenses: OfflineLicenses?
        weak var analytics: OfflineAnalytics?
        var gone: Bool { manager == nil && downloads == nil && sessions == nil && licenses == nil && analytics == nil }
    }

    @Test("a closed manager and its four parts go once the app lets go of it: the parts hold each other only through weak seams")
    func partsGoWithTheManager() async throws {
        let storage = try TemporaryDirectory()
        defer { storage.remove() }
        let refs = Locked(Parted())
        do {
            let manager = try await OfflineVideoManager(configuration: testConfiguration(storage))
            let made = Parted(manager: manager, downloads: await manager.downloads, sessions: await manager.sessions,
                              licenses: await manager.licenses, analytics: await manager.analytics)
            refs.withLock { $0 = made }
            #expect(!refs.withLock { $0.gone })
            await manager.close()
        }
        #expect(try await eventually { refs.withLock { $0.gone } }, "a part outlives its manager (a cycle through the seams)")
    }
}

