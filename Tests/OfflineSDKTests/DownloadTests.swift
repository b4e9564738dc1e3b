import CurlTransfer
import Foundation
import MockBackend
import Locking
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

@Suite("OfflineVideoManager downloads, live")
struct DownloadTests {
    @Test("a clear video downloads end to end: every byte as served, events in order, a playable package")
    func clearEndToEnd() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let (manager, events) = (h.manager, h.events)
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            let bitrates = try await manager.variantBitrates(for: video)
            #expect(bitrates == bitrates.sorted() && bitrates.count == 3)
            let token = try await manager.requestVideoDownload(
                video, mediaSelections: MediaSelections(audioLanguages: ["en", "fr"], subtitleLanguages: ["de"]),
                parameters: DownloadParameters(requestedBitrate: bitrates[1]))
            #expect(try await events.finished(token) == nil)

            let status = try await manager.status(token)
            #expect(status.downloadState == .completed)
            #expect(status.downloadPercent == 100)
            #expect(status.downloadEndTime != nil && status.downloadEndTime! >= status.downloadStartTime)

            // Events: progress per track never reaches 100 before the track is done; each
            // track finishes once; images come before the end.
            let all = events.all
            let finishedTracks = all.compactMap { if case .mediaSelectionFinished(token, let s) = $0 { s } else { nil } }
            // Four media selections: the video, two audio languages and the sideband German subtitles (last).
            #expect(finishedTracks.count == 4 && Set(finishedTracks.map(\.description)).count == 4)
            #expect(finishedTracks.last?.kind == .subtitles && finishedTracks.last?.language == "de")
            #expect(Set(finishedTracks.filter { $0.kind == .audio }.compactMap(\.language)) == ["en", "fr"])
            for selection in finishedTracks {
                let percents = all.compactMap { event -> Double? in
                    if case .progress(token, let percent, selection) = event { percent } else { nil }
                }
                #expect(percents == percents.sorted(), "\(selection) progress went backwards: \(percents)")
                #expect(percents.last == 100)
                #expect(percents.dropLast().allSatisfy { $0 < 100 })
            }
            let imagesIndex = try #require(all.firstIndex(of: .staticImagesDownloaded(token)))
            let endIndex = try #require(all.firstIndex(of: .downloadFinished(token, error: nil)))
            #expect(imagesIndex < endIndex)

            // Every segment on disk is byte for byte what the server serves at its URL.
            let store = await manager.store
            let segments = try await store.offPool { try $0.segments(token) }
            #expect(segments.count == 18)
            #expect(segments.allSatisfy { $0.done })
            let folder = await manager.packageFolder(token)
            let client = HTTPClient()
            for segment in segments {
                let served = try await client.send(HTTPClientRequest(url: segment.url))
                let local = try Data(contentsOf: folder.appendingPathComponent(segment.file))
                #expect(served.status == 200)
                #expect(Array(local) == served.body, "\(segment.file) differs from \(segment.url)")
                #expect(segment.bytes == Int64(local.count))
            }

            // The offline video object: paths, sideband subtitles, playable.
            let offline = try #require(await manager.videoObject(fromOfflineVideoToken: token))
            #expect(offline.offlineVideoToken == token)
            #expect(offline.playableOffline)
            let master = try #require(offline.offlineMasterPlaylistPath)
            #expect(FileManager.default.fileExists(atPath: master))
            #expect(offline.properties[OfflineVideoManager.OfflineProperty.usesSidebandSubtitles] == .bool(true))
            #expect(offline.properties[OfflineVideoManager.OfflineProperty.sidebandSubtitleLanguages] == .array([.string("de")]))
            let subtitlePath = try #require(offline.properties[OfflineVideoManager.OfflineProperty.sidebandSubtitlePaths]?["de"]?.stringValue)
            #expect(try String(contentsOfFile: subtitlePath, encoding: .utf8).hasPrefix("WEBVTT"))
            let poster = try #require(offline.properties[OfflineVideoManager.OfflineProperty.posterPath]?.stringValue)
            #expect(try Data(contentsOf: URL(fileURLWithPath: poster)).prefix(2) == Data([0xFF, 0xD8]), "a JPEG")
            #expect(offline.properties[OfflineVideoManager.OfflineProperty.endTime]?.numberValue ?? 0 > 0)

            // ffprobe plays the package from disk: one video stream at the chosen size, two audio.
            let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width,height",
                                                                  "-of", "json", master])
            #expect(probe.exitCode == 0, "\(probe.stderrText)")
            #expect(probe.stderrText.isEmpty, "ffprobe complained: \(probe.stderrText)")
            let streams = try JSONDecoder().decode(JSONValue.self, from: Data(probe.stdout))["streams"]
            guard case .array(let list)? = streams else { Issue.record("no streams: \(probe.stdoutText)"); return }
            let videos = list.filter { $0["codec_type"]?.stringValue == "video" }
            #expect(videos.count == 1)
            #expect(videos.first?["width"]?.numberValue == 640 && videos.first?["height"]?.numberValue == 360)
            #expect(list.filter { $0["codec_type"]?.stringValue == "audio" }.count == 2)
        } }
    }

    @Test("requests that cannot work are refused before anything is stored, with the reference's codes")
    func refusals() async throws {
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            var configuration = testConfiguration(storage)
            let manager = try await OfflineVideoManager(configuration: configuration)
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            let contoso = PlaybackService(baseURL: server.baseURL, accountID: Catalog.contoso, policyKey: Catalog.contosoKey)
            let clear = try await service.findVideo(id: Catalog.clearVideo)

            let streamOnly = await #expect(throws: OfflineVideoError.self) {
                try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.streamOnlyVideo), mediaSelections: nil, parameters: nil)
            }
            #expect(streamOnly?.code == .unsupported)
            #expect(streamOnly?.reason == .notEligible)

            let hlse = await #expect(throws: OfflineVideoError.self) {
                try await manager.requestVideoDownload(try await contoso.findVideo(id: Catalog.contosoAESVideo), mediaSelections: nil, parameters: nil)
            }
            #expect(hlse?.code == .unsupported)
            #expect(hlse?.reason == .hlseNotSupported && hlse?.message.contains("not supported for download") == true)

            let language = await #expect(throws: OfflineVideoError.self) {
                try await manager.requestVideoDownload(clear, mediaSelections: MediaSelections(audioLanguages: ["ja"]), parameters: nil)
            }
            #expect(language?.code == .invalidParameter)
            #expect(language?.reason == .noMatchingRendition)

            let bitrate = await #expect(throws: OfflineVideoError.self) {
                try await manager.requestVideoDownload(clear, mediaSelections: nil, parameters: DownloadParameters(requestedBitrate: -1))
            }
            #expect(bitrate?.code == .invalidParameter)
            #expect(try await manager.offlineVideoStatus().isEmpty, "nothing stored for refused requests")
            await manager.close()

            configuration.minimumFreeSpace = Int64.max / 4
            let full = try await OfflineVideoManager(configuration: configuration)
            let space = await #expect(throws: OfflineVideoError.self) {
                try await full.requestVideoDownload(clear, mediaSelections: nil, parameters: nil)
            }
            #expect(space?.reason == .insufficientStorage)
            #expect(space?.message.contains("must stay free") == true)
            #expect(try await full.offlineVideoStatus().isEmpty)
            await full.close()

            configuration.minimumFreeSpace = 0
            let again = try await OfflineVideoManager(configuration: configuration)
            let events = EventRecorder(again)
            let token = try await again.requestVideoDownload(clear, mediaSelections: nil, parameters: nil)
            let twice = await #expect(throws: OfflineVideoError.self) {
                try await again.requestVideoDownload(clear, mediaSelections: nil, parameters: nil)
            }
            #expect(twice?.reason == .alreadyDownloaded)
            #expect(try await events.finished(token) == nil)
            let after = await #expect(throws: OfflineVideoError.self) {
                try await again.requestVideoDownload(clear, mediaSelections: nil, parameters: nil)
            }
            #expect(after?.reason == .alreadyDownloaded)
            await again.close()
        }
    }

    @Test("pause keeps what is done and stops fetching; resume finishes with the same token")
    func pauseResume() async throws {
        let network = ManualNetworkMonitor(path: .wifi)
        try await withBackend { server in try await withHarness(server, { $0.network = network }) { h in
            let (manager, events) = (h.manager, h.events)
            let token = try await h.request(Catalog.marathonVideo)
            #expect(try await eventually { try await manager.status(token).downloadPercent > 3 })
            // No new request starts from here (those under way finish): the download cannot
            // complete before the pause, however fast this machine is.
            network.currentPath = .none
            try await manager.pauseVideoDownload(token)
            #expect(try await manager.status(token).downloadState == .suspended)
            await manager.downloads.waitUntilStopped(token)
            #expect(await manager.downloads.isDownloading(token) == false, "no task runs for it")
            network.currentPath = .wifi
            let store = await manager.store
            let doneAtPause = try await store.offPool { try $0.segments(token) }.filter(\.done).count
            #expect(doneAtPause > 0 && doneAtPause < 7200)
            #expect(!events.all.contains { if case .downloadFinished = $0 { true } else { false } })

            try await manager.resumeVideoDownload(token)
            #expect(try await events.finished(token, timeout: .seconds(180)) == nil)
            let status = try await manager.status(token)
            #expect(status.downloadState == .completed)
            #expect(try await store.offPool { try $0.segments(token) }.count == 7200)
            try await expectPlays(manager, token)
        } }
    }

    @Test("a manager closed mid-download is continued by the next one on the same storage, refetching only unfinished segments")
    func restartContinues() async throws {
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            var configuration = testConfiguration(storage)
            let network = ManualNetworkMonitor(path: .wifi)
            configuration.network = network
            let first = try await OfflineVideoManager(configuration: configuration)
            let token = try await first.requestVideoDownload(try await service.findVideo(id: Catalog.marathonVideo),
                                                             mediaSelections: nil, parameters: nil)
            #expect(try await eventually { try await first.status(token).downloadPercent > 5 })
            network.currentPath = .none  // it cannot finish before it is closed
            await first.close()  // returns once its tasks have ended
            let folder = await first.packageFolder(token)
            let store = await first.store
            let before = try await store.offPool { try $0.segments(token) }.filter(\.done)
            let inodes = try Dictionary(uniqueKeysWithValues: before.map {
                ($0.file, try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($0.file).path)[.systemFileNumber] as? Int)
            })
            #expect(!before.isEmpty)
            #expect(try await first.status(token).downloadState == .downloading, "closing changes nothing stored")

            let second = try await OfflineVideoManager(configuration: testConfiguration(storage))
            let events = EventRecorder(second)
            #expect(try await events.finished(token, timeout: .seconds(180)) == nil)
            for (file, inode) in inodes {
                let now = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(file).path)[.systemFileNumber] as? Int
                #expect(now == inode, "\(file) was fetched again")
            }
            #expect(try await second.status(token).downloadState == .completed)
            try await expectPlays(second, token)
            await second.close()
        }
    }

    @Test("expired URLs (403) are renewed from the Playback API and the download goes on without losing progress")
    func expiredURLs() async throws {
        let network = ManualNetworkMonitor(path: .none)
        try await withBackend { server in try await withHarness(server, { $0.network = network }) { h in
            let (manager, events) = (h.manager, h.events)
            let token = try await h.request(Catalog.clearVideo)
            let store = await manager.store
            let oldURLs = try await store.offPool { try $0.segments(token) }.map(\.url)
            server.app.clock.offset = 7 * 3600  // every URL handed out so far has expired
            network.currentPath = .wifi
            #expect(try await events.finished(token) == nil)
            let newURLs = try await store.offPool { try $0.segments(token) }.map(\.url)
            #expect(newURLs.count == oldURLs.count)
            #expect(zip(oldURLs, newURLs).allSatisfy { $0 != $1 }, "every segment URL was renewed")
            #expect(try await manager.status(token).downloadState == .completed)
        } }
    }

    @Test("without an allowed network the download waits, then continues")
    func networkPolicy() async throws {
        let network = ManualNetworkMonitor(path: .cellular)
        try await withBackend { server in try await withHarness(server, { $0.network = network }) { h in
            let (manager, events) = (h.manager, h.events)
            let token = try await h.request(Catalog.clearVideo)
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await manager.status(token).downloadPercent == 0, "cellular is not allowed by default")
            network.currentPath = .none
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await manager.status(token).downloadPercent == 0)
            network.currentPath = .wifi
            #expect(try await events.finished(token) == nil)
        } }
    }

    @Test("a server that stops answering fails the download once it made no progress for failuresWithoutProgress tries and timeWithoutProgress, saying so")
    func failsAfterRetries() async throws {
        let storage = try TemporaryDirectory()
        defer { storage.remove() }
        var configuration = testConfiguration(storage)
        let network = ManualNetworkMonitor(path: .none)
        configuration.network = network
        configuration.timeWithoutProgress = .seconds(1)
        let manager = try await OfflineVideoManager(configuration: configuration)
        defer { Task { await manager.close() } }
        let events = EventRecorder(manager)
        var token = ""
        try await withBackend { server in
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            token = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo),
                                                           mediaSelections: nil, parameters: nil)
        }
        network.currentPath = .wifi  // the server is gone now
        let error = try #require(try await events.finished(token))
        #expect(error.code == .downloadFailure)
        #expect(error.reason == .network)
        #expect(error.message.hasPrefix("The download made no progress: "), "\(error.message)")
        #expect(error.message.contains("failures on") && error.message.contains("the last: segment"), "\(error.message)")
        let status = try await manager.status(token)
        #expect(status.downloadState == .error)
        #expect(status.error == error || status.error?.reason == .network)
        #expect(status.downloadPercent < 100)
    }

    @Test("cancel removes the files and keeps the record; delete forgets the token")
    func cancelAndDelete() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let (manager, events) = (h.manager, h.events)
            let marathon = try await h.request(Catalog.marathonVideo)
            try await manager.cancelVideoDownload(marathon)
            let cancelled = try await manager.status(marathon)
            #expect(cancelled.downloadState == .cancelled)
            #expect(try await events.finished(marathon)?.reason == .cancelled, "didFinishDownloadWithError, cancelled")
            let again = await #expect(throws: OfflineVideoError.self) { try await manager.cancelVideoDownload(marathon) }
            #expect(again?.reason == .invalidState)
            #expect(cancelled.downloadEndTime != nil)
            #expect(!FileManager.default.fileExists(atPath: await manager.packageFolder(marathon).path))

            let clear = try await h.request(Catalog.clearVideo)
            #expect(try await events.finished(clear) == nil)
            try await manager.deleteOfflineVideo(clear)
            #expect(try await manager.offlineVideoStatus(forToken: clear) == nil)
            #expect(!FileManager.default.fileExists(atPath: await manager.packageFolder(clear).path))
            #expect(await manager.videoObject(fromOfflineVideoToken: clear) == nil)
            let unknown = await #expect(throws: OfflineVideoError.self) { try await manager.pauseVideoDownload("no-such-token") }
            #expect(unknown?.reason == .unknownToken)
        } }
    }

    @Test("at start: stranded package folders this store made go (unless the delegate keeps them), other stores' stay and are listed, vanished files make a download stale")
    func recovery() async throws {
        final class Delegate: OfflineVideoManagerDelegate {
            let keep: String
            let asked = Locked<[String]>([])
            let storageChanges = Locked(0)
            init(keep: String) { self.keep = keep }
            func shouldDeleteVideoPackage(_ videoPackagePath: String) -> Bool {
                asked.withLock { $0.append(videoPackagePath) }
                return !videoPackagePath.hasSuffix(keep)
            }
            func offlineVideoStorageDidChange() { storageChanges.withLock { $0 += 1 } }
        }
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            let first = try await OfflineVideoManager(configuration: testConfiguration(storage))
            let events = EventRecorder(first)
            let token = try await first.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo),
                                                             mediaSelections: nil, parameters: nil)
            #expect(try await events.finished(token) == nil)
            await first.close()
            let packages = storage.url.appendingPathComponent("packages")
            // Stranded: folders this store made (its stamp, the first file a request writes) and never recorded.
            let stamp = try Data(contentsOf: packages.appendingPathComponent(token).appendingPathComponent(".store"))
            for name in ["stranded", "mine"] {
                try FileManager.default.createDirectory(at: packages.appendingPathComponent(name), withIntermediateDirectories: true)
                try stamp.write(to: packages.appendingPathComponent(name).appendingPathComponent(".store"))
            }
            // Another store's folder and one without a stamp: media this store cannot claim, never deleted.
            for (name, other) in [("foreign", Data("0123".utf8)), ("unstamped", nil)] {
                let folder = packages.appendingPathComponent(name)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Data(repeating: 0x47, count: 188).write(to: folder.appendingPathComponent("0-video-416x234-000.ts"))
                if let other { try other.write(to: folder.appendingPathComponent(".store")) }
            }
            let segment = try #require(try await first.store.offPool { try $0.segments(token) }.last)
            try FileManager.default.removeItem(at: packages.appendingPathComponent(token).appendingPathComponent(segment.file))

            let delegate = Delegate(keep: "mine")
            let second = try await OfflineVideoManager(configuration: testConfiguration(storage), delegate: delegate)
            #expect(Set(delegate.asked.withLock { $0 }.map { ($0 as NSString).lastPathComponent }) == ["stranded", "mine"])
            #expect(!FileManager.default.fileExists(atPath: packages.appendingPathComponent("stranded").path))
            #expect(FileManager.default.fileExists(atPath: packages.appendingPathComponent("mine").path))
            #expect(await second.unclaimedPackageFolders.map { ($0 as NSString).lastPathComponent } == ["foreign", "unstamped"])
            for name in ["foreign", "unstamped"] {
                #expect(FileManager.default.fileExists(atPath: packages.appendingPathComponent(name).appendingPathComponent("0-video-416x234-000.ts").path))
            }
            let stale = try await second.status(token)
            #expect(stale.downloadState == .stale)
            #expect(stale.error?.reason == .filesMissing)
            #expect(try await eventually { delegate.storageChanges.withLock { $0 } == 1 })
            #expect(await second.videoObject(fromOfflineVideoToken: token)?.playableOffline == false)
            await second.close()
        }
    }

    @Test("an offline store cut to nothing, or removed, beside its packages deletes no media: the next start keeps every folder and lists it")
    func lostStoreKeepsMedia() async throws {
        try await withBackend { server in
            for loss in ["truncated", "removed"] {
                let storage = try TemporaryDirectory()
                defer { storage.remove() }
                let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
                // The first manager gone, as after the app quits (its store connections closed).
                let token = try await Self.completedDownload(storage, service)
                let folder = storage.url.appendingPathComponent("packages").appendingPathComponent(token)
                let files = try FileManager.default.subpathsOfDirectory(atPath: folder.path).sorted()
                #expect(files.contains { $0.hasSuffix(".ts") })
                let store = storage.url.appendingPathComponent("offline.sqlite")
                for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
                if loss == "truncated" { try Data().write(to: store) } else { try FileManager.default.removeItem(at: store) }

                let second = try await OfflineVideoManager(configuration: testConfiguration(storage))
                #expect(try await second.offlineVideoStatus().isEmpty, "\(loss): the new store knows no download")
                #expect(await second.unclaimedPackageFolders.map { ($0 as NSString).lastPathComponent } == [token], "\(loss)")
                #expect(try FileManager.default.subpathsOfDirectory(atPath: folder.path).sorted() == files, "\(loss): every file kept")
                // Checking again deletes nothing either.
                #expect(try await second.checkStorage() == false)
                #expect(FileManager.default.fileExists(atPath: folder.path))
                await second.close()
            }
        }
    }

    /// A clear download completed by a manager that is closed and gone when this returns.
    static func completedDownload(_ storage: TemporaryDirectory, _ service: PlaybackService) async throws -> OfflineVideoToken {
        let manager = try await OfflineVideoManager(configuration: testConfiguration(storage))
        let events = EventRecorder(manager)
        let token = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo), mediaSelections: nil, parameters: nil)
        #expect(try await events.finished(token) == nil)
        await manager.close()
        return token
    }
}
