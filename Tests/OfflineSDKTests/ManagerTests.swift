import Foundation
import MockBackend
@testable import OfflineSDK
import Locking
import TestKit
import Testing
import WireModels

@Suite("OfflineVideoManager queries, queue and delegate, live")
struct ManagerTests {
    @Test("a download retried the moment its failure is announced runs again, though its task may still be ending")
    func retryAtTheAnnouncement() async throws {
        try await withBackend { server in
            try await withHarness(server, { $0.timeWithoutProgress = .milliseconds(200); $0.failuresWithoutProgress = 1 }) { h in
                // Several rounds: the retry must win whether or not the failed task has let go of its slot yet
                // (it announces the failure first; most rounds land before it does).
                for round in 1...5 {
                    _ = try server.app.faults.add(FaultRule(id: "gone", route: .segment, status: 404))
                    let events = h.manager.events()
                    let token = try await h.request(Catalog.clearVideo)
                    // Retries as it hears the failure; the wait below is the ceiling (were no failure
                    // announced, this task would wait for ever: it is cancelled after).
                    let retrier = Task { () -> Result<OfflineVideoError?, OfflineVideoError>? in
                        for await event in events {
                            guard case .downloadFinished(token, let error) = event else { continue }
                            server.app.faults.removeAll()
                            return await attempt { () async throws(OfflineVideoError) in
                                try await h.manager.retryVideoDownload(token)
                                return error
                            }
                        }
                        return nil
                    }
                    let completed = try await eventually { try await h.manager.status(token).downloadState == .completed }
                    retrier.cancel()
                    let retried = await retrier.value
                    let status = try await h.manager.status(token)
                    #expect(completed, "round \(round): \(status.downloadState), \(status.downloadPercent) %; the retry: \(String(describing: retried))")
                    guard case .success(let failure) = retried else {
                        Issue.record("round \(round): no failure heard, or the retry was refused: \(String(describing: retried))")
                        return
                    }
                    #expect(failure?.code == .downloadFailure, "round \(round): \(String(describing: failure))")
                    try await h.manager.deleteOfflineVideo(token)
                }
            }
        }
    }

    @Test("a storage folder that cannot be made is a storage error naming the folder and the system's reason")
    func unusableStorage() async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let file = scratch.url.appendingPathComponent("a-file")
        try Data().write(to: file)
        var configuration = OfflineVideoManagerConfiguration()
        configuration.storageDirectory = file.appendingPathComponent("store", isDirectory: true)
        do {
            _ = try await OfflineVideoManager(configuration: configuration)
            Issue.record("a manager opened a store under a file")
        } catch {
            #expect(error.code == .invalidParameter && error.reason == .storage)
            #expect(error.message == "Cannot open the offline store in \(file.path)/store: Not a directory")
        }
    }

    @Test("two requests for one video at once: one download, one alreadyDownloaded; the same for two preloads")
    func concurrentRequests() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            async let first = attempt { () async throws(OfflineVideoError) in
                try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: nil)
            }
            async let second = attempt { () async throws(OfflineVideoError) in
                try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: nil)
            }
            let results = await [first, second]
            let tokens = results.compactMap { try? $0.get() }
            let refusals = results.compactMap { if case .failure(let error) = $0 { error } else { nil } }
            #expect(tokens.count == 1 && refusals.count == 1)
            #expect(refusals.first?.reason == .alreadyDownloaded)
            #expect(try await h.manager.offlineVideoStatus().count == 1)
            #expect(try await h.events.finished(try #require(tokens.first)) == nil)

            let fairPlay = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let terms = DownloadParameters(license: .purchase)
            async let preload1 = attempt { () async throws(OfflineVideoError) in try await h.manager.preloadFairPlayLicense(fairPlay, parameters: terms) }
            async let preload2 = attempt { () async throws(OfflineVideoError) in try await h.manager.preloadFairPlayLicense(fairPlay, parameters: terms) }
            let preloads = await [preload1, preload2]
            #expect(preloads.compactMap { try? $0.get() }.count == 1)
            #expect(try await h.manager.offlineVideoStatus().filter { $0.downloadState == .licensePreloaded }.count == 1)
        } }
    }

    @Test("one owner per storage folder: a second is refused naming the holder's pid, a reader reads beside it and changes nothing")
    func ownership() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let token = try await h.request(Catalog.clearVideo)
            #expect(try await h.events.finished(token) == nil)
            do {
                _ = try await OfflineVideoManager(configuration: testConfiguration(h.storage))
                Issue.record("a second owner opened the folder")
            } catch let error as OfflineVideoError {
                #expect(error.reason == .storageInUse)
                #expect(error.message.contains("in use by process \(getpid())"), "\(error.message)")
            }
            var configuration = testConfiguration(h.storage)
            configuration.role = .reader
            let reader = try await OfflineVideoManager(configuration: configuration)
            #expect(try await reader.status(token).downloadState == .completed)
            #expect(await reader.videoObject(fromOfflineVideoToken: token)?.playableOffline == true)
            let refused = await #expect(throws: OfflineVideoError.self) { try await reader.deleteOfflineVideo(token) }
            #expect(refused?.reason == .readOnly)
            #expect(try await h.manager.status(token).downloadState == .completed)

            // Closing the owner lets another take over.
            await h.manager.close()
            let next = try await OfflineVideoManager(configuration: testConfiguration(h.storage))
            #expect(try await next.status(token).downloadState == .completed)
            await next.close()
        } }
    }

    @Test("playlist queries: bitrates ascending, every STREAM-INF and EXT-X-MEDIA attribute, size estimates in MB")
    func queries() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            let bitrates = try await h.manager.variantBitrates(for: video)
            #expect(bitrates.count == 3 && bitrates == bitrates.sorted())
            let variants = try await h.manager.variantAttributesDictionaries(for: video)
            #expect(variants.count == 3)
            #expect(variants.allSatisfy { $0["BANDWIDTH"] != nil && $0["CODECS"] != nil && $0["RESOLUTION"] != nil && $0["AUDIO"] == "audio" })
            #expect(Set(variants.compactMap { $0["RESOLUTION"] }) == ["416x234", "640x360", "960x540"])
            let renditions = try await h.manager.alternativeRenditionAttributesDictionaries(for: video)
            #expect(renditions.filter { $0["TYPE"] == "AUDIO" }.compactMap { $0["LANGUAGE"] }.sorted() == ["en", "es", "fr"])
            #expect(renditions.filter { $0["TYPE"] == "SUBTITLES" }.compactMap { $0["LANGUAGE"] }.sorted() == ["de", "en", "fr"])
            #expect(renditions.allSatisfy { $0["NAME"] != nil && $0["GROUP-ID"] != nil && $0["URI"] != nil })

            // Estimates: the largest rendition by default, the requested one otherwise, more with more audio.
            let largest = try await h.manager.estimateDownloadSize(video)
            let smallest = try await h.manager.estimateDownloadSize(video, requestedBitrate: bitrates[0])
            let withFrench = try await h.manager.estimateDownloadSize(video, requestedBitrate: bitrates[0],
                                                                      mediaSelections: MediaSelections(audioLanguages: ["en", "fr"]))
            #expect(largest > smallest && withFrench > smallest)
            let expectedLargest = Double(bitrates[2]) * 12 / 8 / 1_000_000 + 128_000.0 * 12 / 8 / 1_000_000
            #expect(abs(largest - expectedLargest) < 0.05, "\(largest) MB, expected about \(expectedLargest)")
            // A download configuration is estimated as it would download: no qualifier, the largest;
            // its variant qualifier and auxiliary audio as the same bitrate and selections.
            #expect(try await h.manager.estimateDownloadSize(video, downloadConfiguration: DownloadConfiguration(title: "t")) == largest)
            let bottom = bitrates[0]
            let primary = ContentConfiguration(variantQualifiers: [.predicate { $0.peakBitRate <= bottom }],
                                               mediaSelections: MediaSelections(audioLanguages: ["en"]))
            let configured = DownloadConfiguration(title: "t", primaryContentConfiguration: primary,
                                                   auxiliaryContentConfigurations: [ContentConfiguration(mediaSelections: MediaSelections(audioLanguages: ["fr"]))])
            #expect(try await h.manager.estimateDownloadSize(video, downloadConfiguration: configured) == withFrench)
            let untitled = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.estimateDownloadSize(video, downloadConfiguration: DownloadConfiguration(title: ""))
            }
            #expect(untitled?.reason == .invalidParameter)
            #expect(try await h.manager.offlineVideoStatus().isEmpty, "queries store nothing")
            #expect(try h.manager.offlineSource(for: video).src.contains("/clear/"))
        } }
    }

    @Test("at most maxConcurrentDownloads run at once; the rest wait in the order requested")
    func queue() async throws {
        try await withBackend({ $0.addedLatencyMilliseconds = 20 }) { server in
            try await withHarness(server, { $0.maxConcurrentDownloads = 1 }) { h in
                let first = try await h.request(Catalog.marathonVideo)
                let second = try await h.request(Catalog.clearVideo)
                let third = try await h.request(Catalog.englishOnlyVideo)
                #expect(try await eventually { try await h.manager.status(first).downloadPercent > 0 })
                #expect(try await h.manager.status(first).downloadState == .downloading)
                #expect(try await h.manager.status(second).downloadState == .requested)
                #expect(try await h.manager.status(third).downloadState == .requested)
                try await Task.sleep(for: .milliseconds(200))
                #expect(!h.events.all.contains { if case .progress(second, _, _) = $0 { true } else { false } },
                        "nothing of the second download is fetched while the first holds the only slot")

                try await h.manager.pauseVideoDownload(first)  // frees the slot: the next in line goes
                #expect(try await h.events.finished(second) == nil)
                #expect(try await h.events.finished(third) == nil)
                let all = h.events.all
                let secondEnd = try #require(all.firstIndex(of: .downloadFinished(second, error: nil)))
                let thirdStart = try #require(all.firstIndex { if case .progress(third, _, _) = $0 { true } else { false } })
                #expect(secondEnd < thirdStart, "the third starts only when the second has ended")
                #expect(try await h.manager.status(first).downloadState == .suspended)
            }
        }
    }

    @Test("the delegate gets what events() gets, in the same order; the shared manager is made once and updated after")
    func delegate() async throws {
        final class Recorder: OfflineVideoManagerDelegate {
            let log = Locked<[OfflineVideoEvent]>([])
            func offlineVideoToken(_ token: OfflineVideoToken, didProgressTo percent: TimeInterval, for mediaSelection: OfflineMediaSelection) {
                log.withLock { $0.append(.progress(token, percent: percent, mediaSelection: mediaSelection)) }
            }
            func offlineVideoToken(_ token: OfflineVideoToken, didFinishMediaSelectionDownload mediaSelection: OfflineMediaSelection) {
                log.withLock { $0.append(.mediaSelectionFinished(token, mediaSelection)) }
            }
            func offlineVideoToken(_ token: OfflineVideoToken, didFinishDownloadWithError error: (any Error)?) {
                log.withLock { $0.append(.downloadFinished(token, error: error as? OfflineVideoError)) }
            }
            func didDownloadStaticImages(withOfflineVideoToken token: OfflineVideoToken) {
                log.withLock { $0.append(.staticImagesDownloaded(token)) }
            }
            func offlineVideoToken(_ token: OfflineVideoToken, didChangeStateTo state: OfflineVideoDownloadState?) {
                log.withLock { $0.append(.downloadStateChanged(token, state: state)) }
            }
        }
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let recorder = Recorder()
            let manager = try await OfflineVideoManager(configuration: testConfiguration(storage), delegate: recorder)
            let events = EventRecorder(manager)
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            let token = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo), mediaSelections: nil, parameters: nil)
            #expect(try await events.finished(token) == nil)
            #expect(try await eventually { recorder.log.withLock { $0.count } == events.all.count })
            #expect(recorder.log.withLock { $0 } == events.all)

            // Options change for downloads started later; the delegate can be replaced.
            await manager.update(delegate: nil, options: OfflineVideoManagerOptions(allowsCellularDownload: true))
            #expect(await manager.options.allowsCellularDownload)
            #expect(OfflineVideoManagerOptions(analyticsStorageLimit: 10).analyticsStorageLimit == 1024 * 1024, "at least 1 MiB")
            await manager.close()
        }
    }

    @Test("forceStopAllDownloadTasks ends running and queued downloads with an error and their files; completed ones stay")
    func forceStop() async throws {
        try await withBackend({ $0.addedLatencyMilliseconds = 20 }) { server in
            try await withHarness(server, { $0.maxConcurrentDownloads = 1 }) { h in
                let done = try await h.request(Catalog.englishOnlyVideo)
                #expect(try await h.events.finished(done) == nil)
                let running = try await h.request(Catalog.marathonVideo)
                let queued = try await h.request(Catalog.clearVideo)
                #expect(try await eventually { try await h.manager.status(running).downloadPercent > 0 })
                try await h.manager.forceStopAllDownloadTasks()
                for token in [running, queued] {
                    let status = try await h.manager.status(token)
                    #expect(status.downloadState == .error)
                    #expect(status.error?.reason == .cancelled)
                    let announced = try await h.events.finished(token)
                    #expect(announced?.reason == .cancelled, "the end is announced, as the platform does")
                    #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(token).path))
                }
                #expect(try await h.manager.status(done).downloadState == .completed)
                #expect(await h.manager.videoObject(fromOfflineVideoToken: done)?.playableOffline == true)
                // The queued one never started: stopping the running one first gave it the slot, and a loaded
                // machine let it finish while the stopped task wound down.
                #expect(!h.events.all.contains(.downloadStateChanged(queued, state: .downloading)), "the queued download never started")

                // Resumed after the force-stop removed its folder: the package is made whole again and plays.
                server.addedLatencyMilliseconds = 0
                try await h.manager.resumeVideoDownload(queued)
                #expect(try await h.events.wait { $0 == .downloadFinished(queued, error: nil) } == .downloadFinished(queued, error: nil))
                #expect(await h.manager.videoObject(fromOfflineVideoToken: queued)?.playableOffline == true)
                let playback = try await h.manager.openPlayback(queued)
                #expect(try await collect(playback.segments(of: playback.tracks[0])).count == 6)
                await playback.close()
            }
        }
    }
}
