import CurlTransfer
import Foundation
import LicenseProtocol
import MockBackend
@testable import OfflineSDK
import Locking
import Testing
import TestKit
import WireModels

/// The licenses alone: an `OfflineLicenses` on a store and a license client of its own, against a
/// live mock backend, with test seams standing in for the manager (no downloads, no playback
/// sessions, no manager).
@Suite("Licenses without the manager, live")
struct OfflineLicensesTests {
    /// What the seams were asked, and what they answer.
    final class Manager: Sendable {
        let changed = Locked<[OfflineVideoToken]>([])
        let purged = Locked<[OfflineVideoToken]>([])
        let playing = Locked<Set<OfflineVideoToken>>([])
        let owner = Locked(true)

        var seams: LicenseSeams {
            LicenseSeams(
                requireOwner: { [owner] () throws(OfflineVideoError) in
                    if !owner.withLock({ $0 }) { throw OfflineVideoError(.invalidParameter, .readOnly, "a reader") }
                },
                options: { OfflineVideoManagerOptions() },
                licenseChanged: { [changed] token in changed.withLock { $0.append(token) } },
                isPlaying: { [playing] token in playing.withLock { $0.contains(token) } },
                purgeExpired: { [purged] token in purged.withLock { $0.append(token) } })
        }
    }

    /// Licenses on a fresh store under `storage`, their clock `now`.
    struct Parts {
        let licenses: OfflineLicenses
        let store: OfflineStore
        let planner: DownloadPlanner
        let manager = Manager()
        let events: AsyncStream<OfflineVideoEvent>
        /// The licenses' network: `.none` holds queued reports back (the playback network policy).
        let network = ManualNetworkMonitor()

        init(_ storage: TemporaryDirectory, now: Locked<Date>) async throws {
            var configuration = testConfiguration(storage)
            configuration.clock = { now.withLock { $0 } }
            configuration.network = network
            // The device secret and the store, as the manager opens them: off the pool.
            let source = configuration.deviceSource, folder = storage.url
            let device = await BlockingWork.run { Result { () throws(OfflineVideoError) in try DeviceIdentity.load(source) } }
            store = try await BlockingWork.run { try OfflineStore(directory: folder, device: try device.get()) }
            let http = HTTPClient()
            planner = DownloadPlanner(client: http, retry: RetryPolicy())
            let client = FairPlayLicenseClient(store: store, device: device, client: http, clock: configuration.clock,
                                               keyExchange: Locked(nil))
            let hub = EventHub()
            events = hub.subscribe()
            licenses = OfflineLicenses(actorQueue: ActorQueue(label: "OfflineLicensesTests"), store: store, client: client,
                                       planner: planner, http: http, hub: hub, configuration: configuration)
            await licenses.connect(manager.seams)
        }

        /// The stored record of `token`, read off the pool.
        func record(_ token: OfflineVideoToken) async throws -> DownloadRecord? {
            try await BlockingWork.run { [store] in try store.download(token) }
        }

        /// The kinds of the reports waiting, read off the pool.
        func pendingReports() async throws -> [LicenseReport.Kind] {
            try await BlockingWork.run { [store] in try store.pendingReports().map(\.kind) }
        }

        /// A license of `video` under `terms`, stored as a preloaded record (what a preload stores).
        func preload(_ video: PlaybackVideo, _ terms: RequestedLicense, now: Date) async throws -> DownloadRecord {
            let fairPlay = try #require(DownloadPlanner.fairPlaySystem(of: video))
            let keyID = try #require(DownloadPlanner.fairPlayKeyID(try await planner.master(of: video).playlist.sessionKeys))
            let license = try await licenses.acquire(terms, fairPlay: fairPlay, contentKeyID: keyID, video: video)
            let sequence = try await BlockingWork.run { [store] in try store.nextSequence() }
            var record = try DownloadRecord.new(token: UUID().uuidString.lowercased(), video: video, state: .licensePreloaded,
                                                parameters: DownloadParameters(license: terms), requestedAt: now.timeIntervalSince1970,
                                                allowsCellular: true, sequence: sequence)
            license.apply(to: &record)
            let stored = record
            try await BlockingWork.run { [store] in try store.insert(stored, tracks: [], segments: []) }
            return try #require(try await self.record(stored.token))
        }
    }

    /// Runs `body` with licenses on a fresh store, their clock `now`, and the rental video, against
    /// a live backend; closes the licenses after.
    static func withLicenses(now: Locked<Date>, _ body: (Parts, PlaybackVideo) async throws -> Void) async throws {
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let parts = try await Parts(storage, now: now)
            let video = try await PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
                .findVideo(id: PlaybackTests.rentalVideo)
            try await body(parts, video)
        }
    }

    @Test("a license acquired, then invalidated: the expiry is the rental's end, the release is queued and sent, the video object is told")
    func acquireAndInvalidate() async throws {
        let now = Locked(Date())
        try await Self.withLicenses(now: now) { parts, video in
            let record = try await parts.preload(video, .rental(duration: 86400), now: now.withLock { $0 })
            let end = try #require(OfflineLicenses.expiration(of: record))
            // The server counts the day from its own (real) clock, when it issued the license.
            #expect(between(now.withLock { $0 }, Date(), plus: 86400).contains(end), "the rental ends a day from its issue: \(end)")
            #expect(try await parts.licenses.expiration(record.token) == end)

            parts.network.currentPath = .none  // the release stays queued until the network is back
            try await parts.licenses.invalidate(record.token)
            #expect(parts.manager.changed.withLock { $0 } == [record.token])
            #expect(try await parts.record(record.token)?.license == nil)
            #expect(try await parts.licenses.expiration(record.token) == nil, "a FairPlay video without a license has no expiry")
            #expect(try await parts.pendingReports() == [.release])
            #expect(await parts.licenses.sendPending() == 1, "no network: the release waits")
            parts.network.currentPath = .wired
            #expect(await parts.licenses.sendPending() == 0, "the server took the release")
            var events = parts.events.makeAsyncIterator()
            guard case .licenseExpirationChanged(record.token, nil)? = await events.next() else {
                Issue.record("expected the expiry to change to none")
                return
            }
        }
    }

    @Test("auto-purge asks the downloads to purge an expired license's video, not while a session plays it; nothing before its end")
    func purgeThroughTheSeam() async throws {
        let start = Date()
        let now = Locked(start)
        try await Self.withLicenses(now: now) { parts, video in
            let record = try await parts.preload(video, .rental(duration: 3600), now: start)
            let end = try #require(await parts.licenses.nextExpiry())
            #expect(between(start, Date(), plus: 3600).contains(end), "an hour from its issue: \(end)")

            await parts.licenses.purgeExpired()
            #expect(parts.manager.purged.withLock { $0 }.isEmpty, "not expired yet")
            now.withLock { $0 = start.addingTimeInterval(7200) }
            #expect(await parts.licenses.nextExpiry() == nil, "no expiry ahead")
            parts.manager.playing.withLock { _ = $0.insert(record.token) }
            await parts.licenses.purgeExpired()
            #expect(parts.manager.purged.withLock { $0 }.isEmpty, "a session has it open")
            parts.manager.playing.withLock { $0 = [] }
            await parts.licenses.purgeExpired()
            #expect(parts.manager.purged.withLock { $0 } == [record.token])
        }
    }

    @Test("a play window starts at the first play, which is stored with its report; a clock set back behind the mark is refused")
    func playWindowAndTrustedTime() async throws {
        let start = Date()
        let now = Locked(start)
        try await Self.withLicenses(now: now) { parts, video in
            let record = try await parts.preload(video, .rental(duration: 86400, playDuration: 3600), now: start)
            parts.network.currentPath = .none  // the first-play report stays queued

            let (at, mark) = await parts.licenses.observeClock()
            let key = try await parts.licenses.playbackKey(record, now: at, mark: mark)
            #expect(key.key.count == 16 && key.iv.count == 16)
            #expect(key.info.firstPlay == at)
            #expect(key.info.playRemaining == 3600)
            let played = try #require(try await parts.record(record.token))
            #expect(played.initialPlaybackAt == at.timeIntervalSince1970)
            #expect(try await parts.pendingReports() == [.firstPlay])
            #expect(OfflineLicenses.expiration(of: played).map { abs($0.timeIntervalSince(at) - 3600) < 1 } == true,
                    "the expiry is the play window's end")

            now.withLock { $0 = start.addingTimeInterval(1800) }
            _ = await parts.licenses.observeClock()  // the mark moves to +30 min
            now.withLock { $0 = start.addingTimeInterval(60) }
            let (back, raised) = await parts.licenses.observeClock()
            do throws(OfflineVideoError) {
                _ = try await parts.licenses.playbackKey(played, now: back, mark: raised)
                Issue.record("a clock set back 29 minutes played")
            } catch {
                #expect(error.code == .invalidLicense && error.reason == .clockRollback, "\(error)")
            }
        }
    }

    @Test("licenses no manager owns refuse every change (readOnly) and send nothing")
    func readerRefuses() async throws {
        let now = Locked(Date())
        try await Self.withLicenses(now: now) { parts, video in
            let record = try await parts.preload(video, .purchase, now: now.withLock { $0 })
            parts.manager.owner.withLock { $0 = false }
            let outcomes = [
                await attempt { () async throws(OfflineVideoError) in try await parts.licenses.invalidate(record.token) },
                await attempt { () async throws(OfflineVideoError) in try await parts.licenses.setAutoPurges(true) },
                await attempt { () async throws(OfflineVideoError) in
                    _ = try await parts.licenses.renew(record.token, video: video, authToken: nil, parameters: DownloadParameters(license: .purchase))
                },
            ]
            for outcome in outcomes {
                guard case .failure(let error) = outcome else {
                    Issue.record("a change went through")
                    continue
                }
                #expect(error.reason == .readOnly)
            }
            #expect(try await parts.record(record.token)?.license != nil, "the license is still there")
        }
    }
}
