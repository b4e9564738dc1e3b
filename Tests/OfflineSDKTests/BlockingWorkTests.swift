import CurlTransfer
import Foundation
@testable import MockBackend
@testable import OfflineSDK
import SQLiteSupport
import Testing
import Synchronization
import TestKit
import WireModels

/// The store is synchronous SQLite: none of its statements may run on Swift's cooperative pool
/// (`BlockingWork`).
@Suite("Blocking work off the cooperative pool, live")
struct BlockingWorkTests {
    /// The reports waiting, read as the SDK reads its store: off the pool.
    static func pendingReports(_ manager: OfflineVideoManager) async throws -> [LicenseReport] {
        let store = await manager.store
        return try await BlockingWork.run { try store.pendingReports() }
    }

    @Test("a flow through every part of the SDK (downloads clear and FairPlay, the task façade, status, licenses, playback over loopback, renewal, deletion) runs no store statement on the cooperative pool")
    func noStoreStatementOnThePool() async throws {
        let check = PoolCheck()
        try await withBackend { server in try await withHarness(server, { $0.poolCheck = check }) { h in
            let clear = try await h.request(Catalog.clearVideo, MediaSelections(audioLanguages: ["fr"], subtitleLanguages: ["de"]))
            let rented = try await h.request(PlaybackTests.rentalVideo, nil, DownloadParameters(license: .rental(duration: 86400, playDuration: 3600)))
            #expect(try await h.events.finished(clear) == nil)
            #expect(try await h.events.finished(rented) == nil)
            _ = try await h.manager.status(clear)
            _ = try await h.manager.offlineVideoTokens
            _ = try await h.manager.licenseInfo(rented)
            _ = try await h.manager.fairPlayLicenseExpiration(rented)
            _ = await h.manager.videoObject(fromOfflineVideoToken: clear)

            for token in [clear, rented] {
                let playback = try await h.manager.openPlayback(token)
                let url = try playback.serve()
                let video = try #require(playback.reader.tracks.first)
                let segment = try await Curl.fetch(url.deletingLastPathComponent().absoluteString + video.folder + "/" + video.names[0])
                #expect(segment.status == 200)
                _ = try await collect(playback.segments(of: playback.tracks[0]))
                try await playback.reportPlay(at: 0)
                await playback.close()
            }
            #expect(try await eventually { try await Self.pendingReports(h.manager).isEmpty }, "the first-play report went out")

            let downloads = try await DownloadManager(manager: h.manager)
            #expect(downloads.allTasks.value.count == 2)
            _ = try await h.manager.renewFairPlayLicense(rented, video: try await h.service.findVideo(id: PlaybackTests.rentalVideo),
                                                         parameters: DownloadParameters(license: .purchase))
            try await h.manager.invalidateFairPlayLicense(rented)
            try await h.manager.deleteOfflineVideo(clear)
            try await h.manager.deleteOfflineVideo(rented)
            #expect(try await eventually { try await Self.pendingReports(h.manager).isEmpty }, "the release went out")
        } }
        #expect(check.violations.isEmpty, "store statements on the cooperative pool: \(check.violations)")
    }

    @Test("while another process holds the store's write lock, the downloads' store writes wait on dispatch threads: other async work, a status query and the loopback server go on; released, the downloads go on")
    func writeLockHeldElsewhere() async throws {
        try await withBackend { server in try await withHarness(server, {
            $0.maxConcurrentDownloads = 2
            // The writes wait out the holder: however long a loaded machine takes over the checks
            // below, not the store's 10 s (a write that waited that long fails its download).
            $0.storeSetup.busyTimeout = 600
        }) { h in
            let clear = try await h.request(Catalog.clearVideo)
            #expect(try await h.events.finished(clear) == nil)
            let playback = try await h.manager.openPlayback(clear)
            let base = try playback.serve().deletingLastPathComponent().absoluteString
            let video = try #require(playback.reader.tracks.first)
            // Each segment of the two answered after 200 ms: neither download can end before the
            // other process holds the lock, however fast (or slow) this machine is.
            for video in [Catalog.marathonVideo, Catalog.tenMinuteVideo] {
                try server.app.faults.add(FaultRule(id: "slow-\(video)", route: .segment, video: video, latencyMs: 200))
            }
            let long = try await h.request(Catalog.marathonVideo)
            let shorter = try await h.request(Catalog.tenMinuteVideo)
            #expect(try await eventually { try await h.manager.status(long).downloadPercent > 0 })
            #expect(try await eventually { try await h.manager.status(shorter).downloadPercent > 0 })
            // The two requests' analytics events uploaded and deleted: the manager itself has no
            // write to make until a download ends (one under the lock below would hold its queue,
            // and the status query would wait for the lock too).
            let store = await h.manager.store
            #expect(try await eventually { try await BlockingWork.run { try store.analyticsCount() } == 0 })

            // Another process takes the write lock and keeps it until it is killed (or 3 minutes pass: a
            // hang here fails the checks below instead of holding the run for the store's busy timeout).
            let database = h.storage.url.appendingPathComponent("offline.sqlite").path
            let holder = try RunningProcess("/usr/bin/python3", ["-c", """
                import sqlite3, sys, time
                c = sqlite3.connect(sys.argv[1], isolation_level=None)
                c.execute("BEGIN IMMEDIATE")
                print("locked", flush=True)
                time.sleep(180)
                """, database])
            defer { holder.kill() }
            #expect(try await holder.waitForOutput { $0.contains("locked") })
            #expect(try await eventually { store.writesInFlight.load(ordering: .relaxed) >= 2 }, "both downloads wait for the lock")

            // Both wait on dispatch threads: the cooperative pool runs other work to its end.
            let sum = await withTaskGroup(of: Int.self) { group in
                for n in 0..<64 { group.addTask { await Task.yield(); return n } }
                return await group.reduce(0, +)
            }
            #expect(sum == 2016)
            // The manager answers (WAL reads pass a writer's lock), and the loopback server serves.
            #expect(try await h.manager.status(long).downloadState == .downloading)
            let segment = try await Curl.fetch(base + video.folder + "/" + video.names[0])
            #expect(segment.status == 200)
            #expect(store.writesInFlight.load(ordering: .relaxed) >= 1, "a write was still waiting: the work above ran beside it")

            holder.kill()
            server.app.faults.removeAll()
            #expect(try await h.events.finished(shorter) == nil, "released, the download goes on and completes")
            try await h.manager.pauseVideoDownload(long)
            await playback.close()
        } }
    }
}

/// `PoolCheck` itself: it catches what it is for.
@Suite("The pool check catches blocking calls on the cooperative pool")
struct PoolCheckTests {
    @Test("a file read and a store statement made on purpose on the pool are recorded; the same through BlockingWork are not")
    func catchesDeliberateCalls() async throws {
        let storage = try TemporaryDirectory()
        defer { storage.remove() }
        let file = storage.url.appendingPathComponent("segment.ts").path
        try Data([0x47, 1, 2, 3]).write(to: URL(fileURLWithPath: file))
        let store = try await BlockingWork.run { try OfflineStore(directory: storage.url) }
        #expect(BlockingWork.onCooperativePool, "a test body runs on the cooperative pool")

        let check = PoolCheck()
        try await PoolCheck.$recorder.withValue(check) {
            #expect(OfflinePlaybackSessions.readFile(file) == [0x47, 1, 2, 3])
            _ = try store.allDownloads()
            #expect(check.violations.count == 2, "\(check.violations)")
            #expect(check.violations.first == "readFile(_:)")

            #expect(await OfflinePlaybackSessions.readFileOffPool(file) == [0x47, 1, 2, 3])
            _ = try await BlockingWork.run { try store.allDownloads() }
            #expect(check.violations.count == 2, "off the pool nothing more is recorded: \(check.violations)")
        }
    }
}
