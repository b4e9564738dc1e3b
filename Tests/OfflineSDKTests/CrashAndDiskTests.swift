import Foundation
import GRDB
import Locking
import MockBackend
@testable import OfflineSDK
import SQLiteSupport
import TestKit
import Testing
import WireModels

/// The `offline` executable built beside the tests: in the test bundle's own build folder
/// (whatever the scratch path, e.g. `.build-tsan`), else the package's `.build`.
func offlineExecutable() throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    let candidates = [beside.appendingPathComponent("offline").path]
        + [".build/debug/offline", ".build/release/offline"].map { root.appendingPathComponent($0).path }
    if let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return path }
    Issue.record("the offline executable is not built (swift build --build-tests builds it)")
    throw CancellationError()
}

@Suite("Crashes and full disks")
struct CrashAndDiskTests {
    @Test("a process killed with SIGKILL mid-download is continued by the next run, fetching only unfinished segments",
          arguments: PackageFormat.allCases)
    func sigkill(_ format: PackageFormat) async throws {
        // 50 ms per response and 2 segments at a time: the 7,200 segments would take the child
        // three minutes, however fast the machine, so a busy test pool reading its output late
        // still sees it mid-way (at 20 ms, a loaded whole-suite run read it after the child ended).
        try await withBackend({ $0.addedLatencyMilliseconds = 50 }) { server in
            try await format.prepare(server)
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let offline = try offlineExecutable()
            let common = ["--base-url", server.baseURL, "--account", Catalog.account, "--policy-key", Catalog.playKey]
            let child = try RunningProcess(offline, ["download", "--json", "--parallel", "2"] + common + format.commandLineArguments
                                             + ["--storage", storage.url.path, "--reserve-mb", "0", Catalog.marathonVideo])
            // Progress is read from the child's own output (nothing opens its store while it
            // runs). Once it is past 2 %, every new response is held for a minute: the child
            // cannot finish the remaining thousands of segments before it is killed.
            let midway = try await child.waitForOutput { output in
                output.split(separator: "\n").contains { line in
                    let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    return event?["event"] as? String == "progress" && (event?["percent"] as? Double ?? 0) > 2
                }
            }
            server.addedLatencyMilliseconds = 60_000
            try #require(midway, "the child showed no progress: \(child.stdoutSoFar)")
            child.kill(SIGKILL)
            let killed = await child.wait()
            #expect(killed.exitCode != 0, "killed, not finished: \(killed.stdoutText)")

            let store = try await BlockingWork.run { try OfflineStore(directory: storage.url) }
            let token = try #require(try await store.offPool { try $0.allDownloads() }.first?.token)
            let folder = storage.url.appendingPathComponent("packages/\(token)")
            // Files on disk are complete (written under .part, renamed when whole); what the store
            // has not recorded yet is picked up from the disk on the next run.
            let onDisk = try await store.offPool { try $0.segments(token) }.filter { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0.file).path) }
            #expect(!onDisk.isEmpty && onDisk.filter { $0.sequence >= 0 }.count < 7200)
            let inodes = try onDisk.map { try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($0.file).path)[.systemFileNumber] as? Int }
            #expect(try await store.offPool { try $0.download(token) }?.downloadState == .downloading)

            server.addedLatencyMilliseconds = 0
            let rerun = try await Run.process(offline, ["resume", "--json", "--storage", storage.url.path, "--reserve-mb", "0"])
            #expect(rerun.exitCode == 0, "\(rerun.stdoutText) \(rerun.stderrText)")
            #expect(rerun.stdoutText.contains("\"state\":\"completed\""))
            #expect(try await store.offPool { try $0.download(token) }?.downloadState == .completed)
            let after = try onDisk.map { try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($0.file).path)[.systemFileNumber] as? Int }
            #expect(after == inodes, "segments finished before the kill were not fetched again")
            let all = try await store.offPool { try $0.segments(token) }
            #expect(all.filter { $0.sequence >= 0 }.count == 7200 && all.allSatisfy { $0.done })
            #expect(all.contains { $0.sequence < 0 } == format.isCMAF, "init segments are CMAF's")
            #expect(all.contains { $0.range != nil } == (format == .cmafByteRanges))
            let leftovers = try FileManager.default.subpathsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".part") }
            #expect(leftovers.isEmpty)
            let player = try await OfflineVideoManager(configuration: testConfiguration(storage))
            try await expectPlays(player, token)
            await player.close()
        }
    }

    @Test("a failure the store cannot record is still the app's: status and task say error, a resume records it first, then continues",
          arguments: PackageFormat.allCases)
    func unrecordedFailure(_ format: PackageFormat) async throws {
        try await withBackend { server in
            try await format.prepare(server)
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            // Another connection holds the store's write lock (as another process could) from the
            // first segment's commit on, past the manager's busy timeout: the download's progress and
            // then its failure cannot be written, the way a disk with no room left for the store fails them.
            var patient = GRDB.Configuration()
            patient.busyMode = .timeout(60)
            let other = try DatabaseQueue(path: storage.url.appendingPathComponent("offline.sqlite").path, configuration: patient)
            let locked = Gate(), release = Gate()
            let holder = Locked<ThreadWork<Void>?>(nil)
            var configuration = testConfiguration(storage)
            format.configure(&configuration)
            configuration.storeSetup.busyTimeout = 0.2
            configuration.beforeCommit = {
                holder.withLock { work in
                    guard work == nil else { return }
                    work = ThreadWork {
                        try other.writeWithoutTransaction { db in
                            try db.execute(sql: "BEGIN IMMEDIATE")
                            locked.open()
                            release.waitBlocking()
                            try db.execute(sql: "ROLLBACK")
                        }
                    }
                }
                await locked.wait()
            }
            let manager = try await OfflineVideoManager(configuration: configuration)
            let events = EventRecorder(manager)
            let tasks = try await DownloadManager(manager: manager)
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            let token = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo), mediaSelections: nil, parameters: nil)

            let failure = try #require(try await events.finished(token))
            #expect(failure.reason == .storageBusy, "\(failure)")
            // Not written: the store still says downloading. What the app reads says what it was told.
            let stored = try await BlockingWork.run { try OfflineStore(directory: storage.url).download(token) }
            #expect(stored?.downloadState == .downloading)
            let status = try await manager.status(token)
            #expect(status.downloadState == .error)
            #expect(status.error == failure)
            #expect(status.downloadEndTime != nil, "a failed download says when it ended")
            let task = try #require(tasks.allTasks.value.first { $0.token == token })
            #expect(try await eventually { task.state.value == .failed }, "task state \(task.state.value)")

            // While the store still cannot write, a resume says why, and changes nothing.
            let refused = await attempt { () async throws(OfflineVideoError) in try await manager.resumeVideoDownload(token) }
            guard case .failure(let refusal) = refused else { Issue.record("a resume went through while the store could not write"); return }
            #expect(refusal.reason == .storageBusy, "\(refusal)")
            #expect(try await manager.status(token).downloadState == .error)

            // Once it can, the resume records the failure (when it happened), then continues the download.
            release.open()
            try await #require(holder.withLock { $0 }).value
            try await manager.resumeVideoDownload(token)
            #expect(try await eventually { try await manager.status(token).downloadState == .completed })
            // The recorder reads the events on a task of its own: wait for it to see the completion.
            try await events.wait { if case .downloadFinished(token, nil) = $0 { true } else { false } }
            let ends = events.all.compactMap { event -> OfflineVideoError?? in
                if case .downloadFinished(token, let error) = event { error } else { nil }
            }
            #expect(ends == [failure, nil], "the failure announced once, then the completion: \(ends)")
            try await expectPlays(manager, token)
            await manager.close()
        }
    }

    @Test("a disk that fills during a download fails it with diskFull, keeps finished segments, and resumes once there is room",
          arguments: PackageFormat.allCases)
    func diskFull(_ format: PackageFormat) async throws {
        try await withTmpfs(size: "8m") { mountPoint in
            let network = ManualNetworkMonitor(path: .none)
            try await withBackend { server in
                try await format.prepare(server)
                var configuration = OfflineVideoManagerConfiguration(storageDirectory: mountPoint.appendingPathComponent("offline"))
                format.configure(&configuration)
                configuration.minimumFreeSpace = 0
                configuration.retryInitialDelay = .milliseconds(20)
                configuration.network = network
                let manager = try await OfflineVideoManager(configuration: configuration)
                let events = EventRecorder(manager)
                let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
                let token = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo), mediaSelections: nil,
                                                                   parameters: DownloadParameters(requestedBitrate: 10_000_000))
                // Leave room for about one 960x540 segment, then let the download run.
                let filler = mountPoint.appendingPathComponent("filler")
                let free = try #require(OfflineDownloads.freeSpace(at: mountPoint))
                try Data(count: Int(free) - 400_000).write(to: filler)
                network.currentPath = .wifi
                let error = try #require(try await events.finished(token))
                #expect(error.code == .downloadFailure)
                #expect(error.reason == .diskFull)
                // Failed, whether or not the full disk left the store room to record it (a failure
                // not recorded is the app's all the same: OfflineVideoManager.finish).
                let status = try await manager.status(token)
                #expect(status.downloadState == .error, "\(status.downloadState)")
                #expect(status.downloadPercent < 100)
                let store = await manager.store
                let done = try await store.offPool { try $0.segments(token) }.filter(\.done)
                let folder = await manager.packageFolder(token)
                #expect(done.allSatisfy { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0.file).path) })

                try FileManager.default.removeItem(at: filler)
                try await manager.resumeVideoDownload(token)
                let completed = try await eventually { try await manager.status(token).downloadState == .completed }
                let resumed = try await manager.status(token)
                #expect(completed, """
                    after the resume: \(resumed.downloadState), \(resumed.downloadPercent) %, \(resumed.error.map(String.init(describing:)) ?? "no error"); \
                    free \(OfflineDownloads.freeSpace(at: mountPoint).map(String.init) ?? "?") bytes; the tmpfs holds:
                    \(filesAndSizes(under: mountPoint))
                    """)
                try await expectPlays(manager, token)
                await manager.close()
            }
        }
    }
}
