import Foundation
import Locking
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// The task-style façade (Quickplay's Download To Go) against the live mock backend: tasks from
/// enqueue to playback, their observable properties and delegate, keys on their own, expiry and
/// purge on a movable clock, and the other façade on the same downloads.
@Suite("DownloadManager: tasks, keys and both façades on one store")
struct DownloadManagerTests {
    static let rentalVideo = "6415818918104"

    /// Records what the delegate hears, as lines.
    final class Recorder: DownloadManagerDelegate {
        let log = Locked<[String]>([])
        var lines: [String] { log.withLock { $0 } }
        func downloadManager(_ manager: DownloadManager, task: DownloadTask, didChangeStateFrom old: DownloadTaskState, to new: DownloadTaskState) {
            log.withLock { $0.append("\(task.contentId) \(old)→\(new)") }
        }
        func downloadManager(_ manager: DownloadManager, task: DownloadTask, didChangeExpirationTo expiration: Date?) {
            log.withLock { $0.append("\(task.contentId) expiration") }
        }
        func downloadManager(_ manager: DownloadManager, didAdd task: DownloadTask) {
            log.withLock { $0.append("\(task.contentId) added") }
        }
        func downloadManager(_ manager: DownloadManager, didPurge task: DownloadTask) {
            log.withLock { $0.append("\(task.contentId) purged") }
        }
    }

    /// A harness on the backend's clock with a download manager over its offline video manager.
    func withTasks(_ server: MockBackendServer, _ configure: @escaping (inout OfflineVideoManagerConfiguration) -> Void = { _ in },
                   _ body: (Harness, DownloadManager, Recorder) async throws -> Void) async throws {
        try await withHarness(server, { configuration in
            configuration.clock = { server.app.clock.now() }
            configure(&configuration)
        }) { h in
            let downloads = try await DownloadManager(manager: h.manager)
            let recorder = Recorder()
            downloads.delegate = recorder
            try await body(h, downloads, recorder)
        }
    }

    func enqueue(_ downloads: DownloadManager, _ request: DownloadRequest) async throws -> DownloadTask {
        try await downloads.enqueue(request: request).get()
    }

    /// FairPlay license requests the server answered.
    func licenseRequests(_ server: MockBackendServer) -> Int {
        server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/license/v1/fairplay/")).count
    }

    /// Segment requests the server answered.
    func segmentRequests(_ server: MockBackendServer) -> Int {
        server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media/")).count
    }

    @Test("a task starts suspended and fetches nothing; resumed, it runs to completed, observed in order, and plays")
    func wholeDownload() async throws {
        try await withBackend { server in try await withTasks(server) { h, downloads, recorder in
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            let task = try await enqueue(downloads, DownloadRequest(contentId: "clear-1", video: video, title: "Clear one",
                                                                    preferredVideoBitrate: 50_000, metadata: "season 1"))
            #expect(task.state.value == .suspended && task.progress.value == 0)
            #expect(task.contentId == "clear-1" && task.title == "Clear one" && task.metadata == "season 1" && task.videoID == video.id)
            #expect(downloads.allTasks.value == [task])
            #expect(await downloads.task(contentId: "clear-1") === task)
            #expect(try await h.manager.status(task.token).downloadState == .suspended, "the other façade sees the same download")
            #expect(segmentRequests(server) == 0, "nothing is fetched before resume")

            // Subscribed before the resume: each sequence starts with the value now.
            let stateValues = task.state.values, percentValues = task.progress.values
            // The sequences give the latest value: a step passed quickly may be skipped, never reordered.
            let states = Task { try await collect(stateValues.prefix { $0 != .completed }) }
            let percents = Task { try await collect(percentValues.prefix { $0 < 100 }) }
            try await task.resume()
            let before = try await states.value
            #expect(before.first == .suspended && [[.suspended], [.suspended, .running]].contains(before), "\(before)")
            #expect(task.state.value == .completed)
            let seen = try await percents.value
            #expect(seen == seen.sorted() && seen.allSatisfy { $0 < 100 }, "\(seen)")
            #expect(task.progress.value == 100)
            #expect(task.expiration.value == .distantFuture, "clear content never expires")
            // The delegate hears a change just after the property has it (so it skips the step the property skipped).
            #expect(try await eventually { recorder.lines.last?.hasSuffix("→completed") == true }, "\(recorder.lines)")
            #expect([["clear-1 added", "clear-1 suspended→running", "clear-1 running→completed"],
                     ["clear-1 added", "clear-1 suspended→completed"]].contains(recorder.lines), "\(recorder.lines)")

            let playback = try await downloads.openPlayback(task)
            let segments = try await collect(playback.segments(of: playback.tracks[0])).map(\.bytes)
            try #expect(segments == ClearFixture.segments("video/416x234"), "the lowest rendition, as 50 kbps asks")
            await playback.close()

            // A content id names one task; a failed enqueue is a result, not a throw.
            let again = await downloads.enqueue(request: DownloadRequest(contentId: "clear-1", video: video, title: "Again"))
            #expect((try? again.get()) == nil)
            if case .failure(let error) = again { #expect(error.reason == .alreadyDownloaded, "\(error)") }
            // Two requests for one content id at once (different videos): one task, one refusal.
            let other = try await h.service.findVideo(id: Catalog.englishOnlyVideo), third = try await h.service.findVideo(id: Catalog.marathonVideo)
            async let first = downloads.enqueue(request: DownloadRequest(contentId: "twice", video: other))
            async let second = downloads.enqueue(request: DownloadRequest(contentId: "twice", video: third))
            let outcomes = await [first, second]
            #expect(outcomes.filter { (try? $0.get()) != nil }.count == 1)
            #expect(outcomes.contains { if case .failure(let error) = $0 { error.reason == .alreadyDownloaded } else { false } }, "\(outcomes)")
            let blank = await downloads.enqueue(request: DownloadRequest(contentId: " ", video: video))
            if case .failure(let error) = blank { #expect(error.reason == .invalidParameter) } else { Issue.record("an empty content id was taken") }
        } }
    }

    @Test("pause and resume, cancel then purge; only a suspended task resumes; observers can be removed")
    func pauseCancelPurge() async throws {
        try await withBackend { server in try await withTasks(server, { $0.progressInterval = .milliseconds(20) }) { h, downloads, recorder in
            let video = try await h.service.findVideo(id: Catalog.marathonVideo)
            let task = try await enqueue(downloads, DownloadRequest(contentId: "marathon", video: video, title: "Marathon"))
            final class Watcher: Sendable { let changes = Locked<[DownloadTaskState]>([]) }
            let watcher = Watcher()
            task.state.add(watcher) { _, new in watcher.changes.withLock { $0.append(new) } }

            try await task.resume()
            #expect(try await eventually { task.progress.value > 1 })
            try await task.pause()
            #expect(task.state.value == .suspended)
            let paused = await #expect(throws: OfflineVideoError.self) { try await task.pause() }
            #expect(paused?.reason == .invalidState)
            let notFailed = await downloads.retry(task)
            if case .failure(let error) = notFailed { #expect(error.reason == .invalidState) } else { Issue.record("a suspended task was retried") }

            try await task.resume()
            #expect(task.state.value == .running)
            task.state.remove(watcher)
            try await task.cancel()
            #expect(task.state.value == .cancelled)
            #expect(watcher.changes.withLock { $0 } == [.running, .suspended, .running], "no change is told after remove")
            #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(task.token).path), "a cancelled task's files are removed")
            #expect(downloads.allTasks.value == [task], "a cancelled task stays until purged")

            let stateValues = task.state.values
            let ended = Task { try await collect(stateValues) }  // ends when the task is purged
            try await downloads.purge(task)
            #expect(downloads.allTasks.value.isEmpty)
            #expect(try await ended.value == [.cancelled])
            #expect(try await h.manager.offlineVideoStatus(forToken: task.token) == nil, "no key: the record goes too")
            #expect(recorder.lines.last == "marathon purged")
            let gone = await #expect(throws: OfflineVideoError.self) { try await task.resume() }
            #expect(gone?.reason == .unknownToken)

            // The content id is free again.
            let next = try await enqueue(downloads, DownloadRequest(contentId: "marathon", video: video, title: "Marathon"))
            #expect(next !== task && downloads.allTasks.value == [next])
            try await downloads.purge(next)
        } }
    }

    @Test("a failed task is retried (and only retried): it continues where it stopped and completes")
    func failureAndRetry() async throws {
        // Gives up after 2 s without progress, not the default 30 s (which a loaded run stretched past the wait below).
        try await withBackend { server in try await withTasks(server, { $0.timeWithoutProgress = .seconds(2) }) { h, downloads, recorder in
            _ = try server.app.faults.add(FaultRule(id: "gone", route: .segment, status: 404))
            let task = try await enqueue(downloads, DownloadRequest(contentId: "flaky", video: try await h.service.findVideo(id: Catalog.clearVideo),
                                                                    title: "Flaky"))
            try await task.resume()
            #expect(try await eventually { task.state.value == .failed })
            #expect(task.error.value?.code == .downloadFailure, "\(String(describing: task.error.value))")
            let resumed = await #expect(throws: OfflineVideoError.self) { try await task.resume() }
            #expect(resumed?.reason == .invalidState && resumed?.message.contains("retry") == true)

            server.app.faults.removeAll()
            try await downloads.retry(task).get()
            let completed = try await eventually { task.state.value == .completed }
            let status = try await h.manager.status(task.token)
            #expect(completed, """
                task \(task.state.value), \(String(describing: task.error.value)); store: \(status.downloadState), \
                \(status.downloadPercent) %, \(String(describing: status.error)); heard: \(recorder.lines)
                """)
            #expect(task.error.value == nil)
            // Each change the property took is heard (a quick step may be skipped: suspended→failed, failed→completed).
            #expect(recorder.lines.contains { $0.hasPrefix("flaky ") && $0.hasSuffix("→failed") }, "\(recorder.lines)")
            #expect(recorder.lines.contains { $0.hasPrefix("flaky failed→") }, "\(recorder.lines)")
            try await expectPlays(h.manager, task.token)
        } }
    }

    @Test("a key fetched ahead is used by the download; dual expiry moves the expiration at first play; an expired key is replaced without downloading again; purge keeps the key")
    func keysAndExpiry() async throws {
        try await withBackend { server in try await withTasks(server) { h, downloads, recorder in
            let video = try await h.service.findVideo(id: Self.rentalVideo)
            let now = server.app.clock.now()
            let request = DownloadRequest(contentId: "rental", video: video, title: "Rental", expiration: now.addingTimeInterval(86400),
                                          playbackExpiryDuration: 3600)
            let fetcher = downloads.licenseFetcher
            let key = try await fetcher.fetchLicense(for: request)
            #expect(!key.hasDownload && key.contentId == "rental" && key.license.playDuration == 3600)
            #expect(downloads.allTasks.value.isEmpty, "a key alone is no task")
            let held = await #expect(throws: OfflineVideoError.self) { try await fetcher.fetchLicense(for: request) }
            #expect(held?.reason == .keyAlreadyHeld)
            let wrongKey = await #expect(throws: OfflineVideoError.self) {
                var other = request
                other.contentId = "rental-2"
                other.skd = "skd://not-the-key"
                _ = try await downloads.enqueue(request: other).get()
            }
            #expect(wrongKey?.reason == .invalidParameter && wrongKey?.message.contains("not-the-key") == true, "\(String(describing: wrongKey))")
            #expect(try await h.manager.status(key.token).downloadState == .licensePreloaded, "the refused request left the key as it was")

            #expect(try await eventually { licenseRequests(server) == 1 })
            var enqueued = request
            enqueued.skd = "skd://\(key.keyID)"
            let task = try await enqueue(downloads, enqueued)
            try await task.resume()
            #expect(try await eventually { task.state.value == .completed })
            #expect(licenseRequests(server) == 1, "the download used the key fetched ahead")
            let rentalEnd = try #require(key.license.rentalEnd)
            #expect(task.expiration.value == rentalEnd)
            #expect(try await fetcher.persistentKey(forKeyID: key.keyID)?.hasDownload == true)

            // First play: the play window starts and the expiration moves to it.
            // The first play is recorded while the playback opens: between these two readings of the
            // clock, however long a loaded machine takes over it.
            let beforeOpen = server.app.clock.now()
            let playback = try await downloads.openPlayback(task)
            let afterOpen = server.app.clock.now()
            let window = between(beforeOpen, afterOpen, plus: 3600)
            #expect(try await eventually { task.expiration.value.map(window.contains) == true }, "\(String(describing: task.expiration.value)) not in \(window)")
            await playback.close()
            #expect(try await eventually { recorder.lines.contains("rental expiration") })

            // Two hours on, the key has expired; a new one replaces it and nothing is downloaded again.
            server.app.clock.offset += 7200
            let expired = await #expect(throws: OfflineVideoError.self) { try await downloads.openPlayback(task) }
            #expect(expired?.code == .expiredLicense)
            let segments = try await h.manager.store.offPool { try $0.segments(task.token) }.count
            #expect(try await eventually { segmentRequests(server) == segments })
            var renewal = request
            renewal.expiration = server.app.clock.now().addingTimeInterval(86400)
            renewal.playbackExpiryDuration = nil
            let replaced = try await fetcher.fetchLicense(for: renewal)
            #expect(replaced.keyID == key.keyID && replaced.hasDownload && replaced.license.playDuration == nil)
            try await expectPlays(h.manager, task.token)
            #expect(segmentRequests(server) == segments, "played again without downloading again")
            #expect(try await eventually { task.expiration.value == replaced.license.rentalEnd })

            // Purge: the task and its files go, the key stays (a preloaded license again).
            try await downloads.purge(task)
            #expect(downloads.allTasks.value.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(task.token).path))
            let kept = try #require(try await fetcher.persistentKey(forKeyID: key.keyID))
            #expect(!kept.hasDownload && kept.license.rentalEnd == replaced.license.rentalEnd)
            #expect(try await h.manager.status(task.token).downloadState == .licensePreloaded)
            #expect(try await h.manager.store.offPool { try $0.segments(task.token) }.isEmpty, "the purged plan is forgotten")

            // Enqueued again with the first request's terms: refused, the kept key has the renewal's.
            let stale = await downloads.enqueue(request: request)
            if case .failure(let error) = stale { #expect(error.reason == .invalidLicenseParameters) } else {
                Issue.record("a request naming other terms than the kept key's was accepted")
            }
            // Enqueued again with the key's terms, the kept key serves; deleting the key afterwards leaves the media.
            let again = try await enqueue(downloads, renewal)
            try await again.resume()
            #expect(try await eventually { again.state.value == .completed })
            #expect(again.token == task.token)
            try await fetcher.deleteLicense(forKeyID: key.keyID)
            #expect(try await fetcher.persistentKeys().isEmpty)
            #expect(try await eventually { again.expiration.value == nil })
            let invalid = await #expect(throws: OfflineVideoError.self) { try await downloads.openPlayback(again) }
            #expect(invalid?.code == .invalidLicense)
            let unknown = await #expect(throws: OfflineVideoError.self) { try await fetcher.deleteLicense(forKeyID: key.keyID) }
            #expect(unknown?.reason == .unknownKey)
        } }
    }

    @Test("auto-purge on expiry removes expired tasks with didPurge; off by default")
    func autoPurge() async throws {
        try await withBackend { server in try await withTasks(server) { h, downloads, recorder in
            #expect(await downloads.downloadAutoPurgeOnExpiry == false)
            let video = try await h.service.findVideo(id: Self.rentalVideo)
            let task = try await enqueue(downloads, DownloadRequest(contentId: "short", video: video, title: "Short",
                                                                    expiration: server.app.clock.now().addingTimeInterval(3600)))
            try await task.resume()
            #expect(try await eventually { task.state.value == .completed })
            server.app.clock.offset += 7200
            try await downloads.setDownloadAutoPurgeOnExpiry(true)
            #expect(await downloads.downloadAutoPurgeOnExpiry)
            #expect(try await eventually { downloads.allTasks.value.isEmpty })
            #expect(try await eventually { recorder.lines.last == "short purged" })
            #expect(try await h.manager.offlineVideoStatus(forToken: task.token) == nil)
            try await downloads.setDownloadAutoPurgeOnExpiry(false)
        } }
    }

    @Test("playing a running task pauses it and the end of playback resumes it; off, it keeps running")
    func pauseDuringPlayback() async throws {
        try await withBackend { server in try await withTasks(server, { $0.progressInterval = .milliseconds(20) }) { h, downloads, _ in
            let task = try await enqueue(downloads, DownloadRequest(contentId: "long", video: try await h.service.findVideo(id: Catalog.marathonVideo),
                                                                    title: "Long"))
            try await task.resume()
            #expect(try await eventually { task.progress.value > 1 })
            let playback = try await downloads.openPlayback(task)
            #expect(task.state.value == .suspended, "paused while it plays")
            let base = try playback.serve().deletingLastPathComponent().absoluteString
            let first = try await Curl.fetch(base + "0-video/00000.ts")
            try #expect(first.status == 200 && first.body == ClearFixture.bytes("video/416x234/seg_000.ts"))
            await playback.close()
            #expect(try await eventually { task.state.value == .running }, "resumed when playback stopped")

            // Paused by the app during playback: it stays paused afterwards.
            let second = try await downloads.openPlayback(task)
            try await task.resume()
            try await task.pause()
            await second.close()
            #expect(task.state.value == .suspended)

            downloads.pausesTasksDuringPlayback = false
            try await task.resume()
            let third = try await downloads.openPlayback(task)
            #expect(task.state.value == .running)
            await third.close()
            try await task.cancel()
        } }
    }

    @Test("both façades see the same downloads: one requests and pauses, the other resumes; a download started as a task finishes and plays after a restart with the other")
    func bothFacades() async throws {
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            var configuration = testConfiguration(storage)
            configuration.progressInterval = .milliseconds(20)
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)

            let manager = try await OfflineVideoManager(configuration: configuration)
            let downloads = try await DownloadManager(manager: manager)
            // Requested through OfflineVideoManager: a task here, named by its video id. (The ten-minute
            // video, each segment held a second: its 600 requests take over a minute, not all done
            // before the pause however long a loaded machine keeps this test from running; with 60 ms
            // one run under load finished first.)
            try server.app.faults.add(FaultRule(id: "slow", route: .segment, video: Catalog.tenMinuteVideo, latencyMs: 1000))
            let token = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.tenMinuteVideo), mediaSelections: nil, parameters: nil)
            #expect(try await eventually { downloads.allTasks.value.map(\.token) == [token] })
            let clear = try #require(await downloads.task(contentId: Catalog.tenMinuteVideo))
            try await manager.pauseVideoDownload(token)
            #expect(try await eventually { clear.state.value == .suspended })
            _ = server.app.faults.remove(id: "slow")  // paused: the rest may come at full speed
            try await clear.resume()
            #expect(try await eventually { clear.state.value == .completed })
            try await expectPlays(manager, token)

            // Started as a task; the process ends while it runs.
            let task = try await enqueue(downloads, DownloadRequest(contentId: "long", video: try await service.findVideo(id: Catalog.marathonVideo),
                                                                    title: "Long"))
            try await task.resume()
            #expect(try await eventually { task.progress.value > 1 })
            await manager.close()

            // The next start uses the other façade only: it continues the download and plays it.
            let restarted = try await OfflineVideoManager(configuration: configuration)
            #expect(try await eventually { try await restarted.status(task.token).downloadState == .completed })
            #expect(try await restarted.status(task.token).displayName == "Long")
            try await expectPlays(restarted, task.token)
            // And a task manager over it knows the task by its content id.
            let again = try await DownloadManager(manager: restarted)
            #expect(await again.task(contentId: "long")?.state.value == .completed)
            #expect(Set(again.allTasks.value.map(\.contentId)) == [Catalog.tenMinuteVideo, "long"])
            await restarted.close()
        }
    }

    @Test("an HLS URL is downloaded as a task, FairPlay too with its key system's URLs; a URL that is not http(s), an expiry in the past and FairPlay without a license server are refused")
    func contentURL() async throws {
        try await withBackend { server in try await withTasks(server) { h, downloads, _ in
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            let source = try #require(video.sources.first { $0.isHLS }?.src)
            let url = try #require(URL(string: source))
            let task = try await enqueue(downloads, DownloadRequest(contentId: "by-url", contentUrl: url, title: "By URL"))
            #expect(task.videoID == "by-url")
            try await task.resume()
            #expect(try await eventually { task.state.value == .completed })
            try await expectPlays(h.manager, task.token)

            let file = await downloads.enqueue(request: DownloadRequest(contentId: "file", contentUrl: URL(fileURLWithPath: "/etc/passwd"), title: "F"))
            if case .failure(let error) = file { #expect(error.reason == .invalidParameter) } else { Issue.record("a file URL was taken") }
            let past = await downloads.enqueue(request: DownloadRequest(contentId: "past", video: try await h.service.findVideo(id: Self.rentalVideo),
                                                                        expiration: server.app.clock.now().addingTimeInterval(-1)))
            if case .failure(let error) = past { #expect(error.reason == .invalidLicenseParameters) } else { Issue.record("a past expiry was taken") }

            // FairPlay by URL: with the key system's URLs it is licensed and plays; without, it is refused before any media byte.
            let protected = try #require(try await h.service.findVideo(id: Catalog.fairPlayVideo).sources.first { $0.fairPlay != nil })
            let protectedURL = try #require(URL(string: protected.src))
            let bare = await downloads.enqueue(request: DownloadRequest(contentId: "bare", contentUrl: protectedURL, title: "Bare"))
            if case .failure(let error) = bare { #expect(error.code == .unsupported && error.reason == .license, "\(error)") } else {
                Issue.record("FairPlay content without a license server was taken")
            }
            let keySystem = try #require(protected.fairPlay)
            let fairPlay = DownloadRequest.FairPlaySource(licenseURL: try #require(URL(string: keySystem.keyRequestURL ?? "")),
                                                          certificateURL: try #require(URL(string: keySystem.certificateURL ?? "")),
                                                          accountID: Catalog.account, videoID: Catalog.fairPlayVideo)
            let licensed = try await enqueue(downloads, DownloadRequest(contentId: "licensed", contentUrl: protectedURL, title: "Licensed",
                                                                        fairPlay: fairPlay))
            try await licensed.resume()
            #expect(try await eventually { licensed.state.value == .completed })
            #expect(licensed.expiration.value == .distantFuture, "no expiration: a purchase")
            #expect(licensed.contentId == "licensed" && licensed.videoID == Catalog.fairPlayVideo)
            try await expectPlays(h.manager, licensed.token)
        } }
    }
}
