import Foundation
import MockBackend
@testable import OfflineSDK
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
    @Test("a process killed with SIGKILL mid-download is continued by the next run, fetching only unfinished segments")
    func sigkill() async throws {
        // 50 ms per response and 2 segments at a time: the 7,200 segments would take the child
        // three minutes, however fast the machine, so a busy test pool reading its output late
        // still sees it mid-way (at 20 ms, a loaded whole-suite run read it after the child ended).
        try await withBackend({ $0.addedLatencyMilliseconds = 50 }) { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let offline = try offlineExecutable()
            let common = ["--base-url", server.baseURL, "--account", Catalog.account, "--policy-key", Catalog.playKey]
            let child = try RunningProcess(offline, ["download", "--json", "--parallel", "2"] + common + ["--storage", storage.url.path, "--reserve-mb", "0",
                                                                                      Catalog.marathonVideo])
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

            let store = try OfflineStore(directory: storage.url)
            let token = try #require(try store.allDownloads().first?.token)
            let folder = storage.url.appendingPathComponent("packages/\(token)")
            // Files on disk are complete (written under .part, renamed when whole); what the store
            // has not recorded yet is picked up from the disk on the next run.
            let onDisk = try store.segments(token).filter { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0.file).path) }
            #expect(!onDisk.isEmpty && onDisk.count < 7200)
            let inodes = try onDisk.map { try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($0.file).path)[.systemFileNumber] as? Int }
            #expect(try store.download(token)?.downloadState == .downloading)

            server.addedLatencyMilliseconds = 0
            let rerun = try await Run.process(offline, ["resume", "--json", "--storage", storage.url.path, "--reserve-mb", "0"])
            #expect(rerun.exitCode == 0, "\(rerun.stdoutText) \(rerun.stderrText)")
            #expect(rerun.stdoutText.contains("\"state\":\"completed\""))
            #expect(try store.download(token)?.downloadState == .completed)
            let after = try onDisk.map { try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($0.file).path)[.systemFileNumber] as? Int }
            #expect(after == inodes, "segments finished before the kill were not fetched again")
            let all = try store.segments(token)
            #expect(all.count == 7200 && all.allSatisfy { $0.done })
            let leftovers = try FileManager.default.subpathsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".part") }
            #expect(leftovers.isEmpty)
            let player = try await OfflineVideoManager(configuration: testConfiguration(storage))
            try await expectPlays(player, token)
            await player.close()
        }
    }

    @Test("a disk that fills during a download fails it with diskFull, keeps finished segments, and resumes once there is room")
    func diskFull() async throws {
        try await withTmpfs(size: "8m") { mountPoint in
            let network = ManualNetworkMonitor(path: .none)
            try await withBackend { server in
                var configuration = OfflineVideoManagerConfiguration(storageDirectory: mountPoint.appendingPathComponent("offline"))
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
                let free = try #require(OfflineVideoManager.freeSpace(at: mountPoint))
                try Data(count: Int(free) - 400_000).write(to: filler)
                network.currentPath = .wifi
                let error = try #require(try await events.finished(token))
                #expect(error.code == .downloadFailure)
                #expect(error.reason == .diskFull)
                let status = try await manager.status(token)
                // Recorded as failed, unless the store itself found no room for that write: then
                // it stays `downloading` and the next start continues it (OfflineVideoManager.finish).
                // Which one depends on how much the cut-short segments had taken when the disk filled.
                #expect(status.downloadState == .error || status.downloadState == .downloading, "\(status.downloadState)")
                #expect(status.downloadPercent < 100)
                let store = await manager.store
                let done = try store.segments(token).filter(\.done)
                let folder = await manager.packageFolder(token)
                #expect(done.allSatisfy { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0.file).path) })

                try FileManager.default.removeItem(at: filler)
                var resumer = manager
                if status.downloadState == .error {
                    try await manager.resumeVideoDownload(token)
                } else {
                    await manager.close()
                    resumer = try await OfflineVideoManager(configuration: configuration)
                }
                let completed = try await eventually { try await resumer.status(token).downloadState == .completed }
                let resumed = try await resumer.status(token)
                #expect(completed, """
                    after the resume: \(resumed.downloadState), \(resumed.downloadPercent) %, \(resumed.error.map(String.init(describing:)) ?? "no error"); \
                    free \(OfflineVideoManager.freeSpace(at: mountPoint).map(String.init) ?? "?") bytes; the tmpfs holds:
                    \(filesAndSizes(under: mountPoint))
                    """)
                try await expectPlays(resumer, token)
                await resumer.close()
            }
        }
    }
}
