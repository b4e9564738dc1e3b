import CurlTransfer
import Foundation
@testable import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import LicenseProtocol

/// The `offline` command driven as a person would: under a pseudo-terminal (tmux) for the
/// progress bars and Ctrl-C, without a terminal and with --json for the rest.
@Suite("The offline command, live")
struct CommandLineTests {
    /// `offline` against `server` with `storage`.
    struct CLI {
        let executable: String
        let server: MockBackendServer
        let storage: TemporaryDirectory

        var service: [String] { ["--base-url", server.baseURL, "--account", Catalog.account, "--policy-key", Catalog.playKey] }
        var store: [String] { ["--storage", storage.url.path, "--reserve-mb", "0"] }

        func run(_ arguments: [String]) async throws -> ProcessOutput {
            try await Run.process(executable, arguments)
        }

        /// A command's one JSON document.
        func json(_ arguments: [String]) async throws -> [String: Any] {
            let output = try await run(arguments + ["--json"])
            try #require(output.exitCode == 0, "\(arguments): \(output.stdoutText) \(output.stderrText)")
            return try #require(try JSONSerialization.jsonObject(with: Data(output.stdout)) as? [String: Any])
        }

        /// Downloads `video` with --json and returns its token.
        func download(_ video: String, _ extra: [String] = []) async throws -> String {
            let output = try await run(["download", video, "--json"] + service + store + extra)
            try #require(output.exitCode == 0, "\(output.stdoutText) \(output.stderrText)")
            let lines = output.stdoutText.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(lines.first?["event"] as? String == "requested")
            #expect(lines.last?["event"] as? String == "finished" && lines.last?["state"] as? String == "completed")
            return try #require(lines.first?["token"] as? String)
        }
    }

    func withCLI(_ configure: (inout BackendConfiguration) -> Void = { _ in }, _ body: (CLI) async throws -> Void) async throws {
        let executable = try offlineExecutable()
        try await withBackend(configure) { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            try await body(CLI(executable: executable, server: server, storage: storage))
        }
    }

    @Test("on a terminal: live bars per media selection; Ctrl-C pauses cleanly and says how to go on; resume finishes it")
    func terminalBarsAndCtrlC() async throws {
        // 20 ms a response, 2 segments at a time: over a minute for the whole video, so a busy
        // test pool reading the screen late still sees it mid-way.
        try await withCLI({ $0.addedLatencyMilliseconds = 20 }) { cli in
            let session = "offline-\(UUID().uuidString.prefix(8))"
            let command = ([cli.executable, "download", Catalog.marathonVideo, "--audio", "en,fr", "--parallel", "2"] + cli.service + cli.store)
                .map { "'\($0)'" }.joined(separator: " ") + "; echo EXIT=$?; sleep 120"  // the session ends by itself if the test stops early
            let started = try await Run.process("/usr/bin/tmux", ["new-session", "-d", "-s", session, "-x", "120", "-y", "20", command])
            try #require(started.exitCode == 0, "tmux: \(started.stderrText)")
            func screen() async throws -> String {
                try await Run.process("/usr/bin/tmux", ["capture-pane", "-p", "-t", session]).stdoutText
            }
            // The bars: one per selection, drawn in place (each label once on the screen).
            var seen = ""
            let drawing = try await eventually {
                seen = try await screen()
                return seen.contains("video 416x234") && seen.contains("audio fr") && seen.contains("█") && seen.contains("left")
            }
            #expect(drawing, "\(seen)")
            cli.server.addedLatencyMilliseconds = 60_000  // it cannot finish before Ctrl-C now
            #expect(seen.components(separatedBy: "audio en").count == 2, "redrawn in place, not scrolled: \(seen)")
            _ = try await Run.process("/usr/bin/tmux", ["send-keys", "-t", session, "C-c"])
            let paused = try await eventually { try await screen().contains("EXIT=130") }
            seen = try await screen()
            #expect(paused && seen.contains("Paused. Nothing is lost: continue with `offline resume"), "\(seen)")

            let list = try await cli.json(["list"] + cli.store)
            let video = try #require((list["videos"] as? [[String: Any]])?.first)
            #expect(video["state"] as? String == "suspended")
            cli.server.addedLatencyMilliseconds = 0
            let token = try #require(video["token"] as? String)
            let resumed = try await cli.run(["resume", String(token.prefix(8)), "--json"] + cli.store)
            #expect(resumed.exitCode == 0 && resumed.stdoutText.contains("\"state\":\"completed\""), "\(resumed.stdoutText) \(resumed.stderrText)")
            _ = try await Run.process("/usr/bin/tmux", ["kill-session", "-t", session])
        }
    }

    @Test("offline play beside a download that another process runs in the same folder: it plays as a reader, serves the segments on disk while the download runs, and the download then completes byte-identical")
    func playBesideADownload() async throws {
        try await withCLI { cli in
            // The owner is this test process (another process to the command): its download runs,
            // and is held mid-way (no network) until the test has played beside it.
            let network = ManualNetworkMonitor(path: .wifi)
            var configuration = testConfiguration(cli.storage)
            configuration.network = network
            configuration.segmentsInParallel = 2
            let owner = try await OfflineVideoManager(configuration: configuration)
            let events = EventRecorder(owner)
            let service = PlaybackService(baseURL: cli.server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            // Each segment held 300 ms: the download takes over 20 s, so it is still running when the network goes.
            try cli.server.app.faults.add(FaultRule(id: "slow", route: .segment, video: Catalog.tenMinuteVideo, latencyMs: 300))
            let token = try await owner.requestVideoDownload(try await service.findVideo(id: Catalog.tenMinuteVideo), mediaSelections: nil,
                                                             parameters: nil)
            #expect(try await eventually { try await owner.status(token).downloadPercent > 1 })
            network.currentPath = .none
            _ = cli.server.app.faults.remove(id: "slow")  // held long enough: what comes later may come at full speed

            let player = try RunningProcess(cli.executable, ["play", String(token.prefix(8)), "--json"] + cli.store)
            var url: String?
            let serving = try await player.waitForOutput { text in
                url = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["url"] as? String
                return url != nil
            }
            try #require(serving, "offline play: \(player.stdoutSoFar)")
            let base = try #require(url.flatMap(URL.init(string:))).deletingLastPathComponent().absoluteString
            let first = try await Curl.fetch(base + "0-video/00000.ts")
            let folder = await owner.packageFolder(token)
            let stored = try Data(contentsOf: folder.appendingPathComponent("0-video/00000.ts"))
            #expect(first.status == 200 && first.body == Array(stored), "\(first.status)")
            #expect(try await owner.status(token).downloadState == .downloading, "played while the download runs")
            player.kill(SIGINT)
            let stopped = await player.wait()
            #expect(stopped.exitCode == 0, "\(stopped.stdoutText) \(stopped.stderrText)")

            network.currentPath = .wifi
            #expect(try await events.finished(token, timeout: .seconds(600)) == nil)
            let client = HTTPClient()
            for segment in try await owner.store.offPool({ try $0.segments(token) }) {
                let served = try await client.send(HTTPClientRequest(url: segment.url))
                let local = Array(try Data(contentsOf: folder.appendingPathComponent(segment.file)))
                #expect(served.status == 200 && local == served.body, "\(segment.file)")
            }
            await owner.close()
        }
    }

    @Test("without a terminal: plain lines at most once a second, no escape codes; --json documents for every command")
    func plainAndJSON() async throws {
        try await withCLI { cli in
            let plain = try await cli.run(["download", Catalog.clearVideo, "--audio", "en,fr", "--subtitles", "de"] + cli.service + cli.store)
            #expect(plain.exitCode == 0, "\(plain.stderrText)")
            #expect(!plain.stdoutText.contains("\u{1B}"), "no escape codes off a terminal")
            #expect(plain.stdoutText.contains("Downloading Color Bars (clear)") && plain.stdoutText.contains("✔ Color Bars (clear)"))

            let video = try await cli.json(["video", Catalog.fairPlayVideo] + cli.service)
            #expect(video["protection"] as? String == "FairPlay")
            let estimate = try await cli.json(["estimate", Catalog.clearVideo, "--audio", "en"] + cli.service + cli.store)
            #expect((estimate["estimated_bytes"] as? Int ?? 0) > 100_000 && estimate["fits"] as? Bool == true)
            let rental = try await cli.download("6415818918104", ["--rental", "2d", "--play-duration", "6h"])
            let license = try await cli.json(["license", String(rental.prefix(10))] + cli.store)
            #expect(license["summary"] as? String == "rental, 48 h left, 6 h play window not started")
            let licenseID = try #require((license["license"] as? [String: Any])?["license_id"] as? String)
            let list = try await cli.json(["list"] + cli.store)
            #expect((list["videos"] as? [[String: Any]])?.count == 2 && (list["free_bytes"] as? Int ?? 0) > 0)

            let file = cli.storage.url.appendingPathComponent("out.ts").path
            let play = try await cli.json(["play", rental, "--output", file] + cli.store)
            #expect(play["output"] as? String == file && (play["bytes"] as? Int ?? 0) > 100_000)
            let after = try await cli.json(["license", rental] + cli.store)
            #expect((after["summary"] as? String)?.contains("of the 6 h play window left") == true, "the first play started the window")
            #expect(try cli.server.app.licenses.license(id: licenseID)?.terms.firstPlay != nil, "reported before the command ended")
            let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", file])
            #expect(probe.stdoutText.contains("h264") && probe.stdoutText.contains("aac"))

            let status = try await cli.json(["status", rental] + cli.store)
            #expect((status["tracks"] as? [[String: Any]])?.count == 2 && status["playable_offline"] as? Bool == true, "video and the default audio")
            let renew = try await cli.json(["renew", rental, "--purchase"] + cli.store)
            #expect((renew["license"] as? [String: Any])?["kind"] as? String == "purchase", "renewed through the stored origin")
            let deleted = try await cli.json(["delete", rental] + cli.store)
            #expect(deleted["state"] as? String == "deleted")
            #expect(try cli.server.app.licenses.license(id: licenseID)?.releasedAt != nil, "released before the command ended")
            let old = try await cli.run(["control", "pause", "zzz"] + cli.store)
            #expect(old.exitCode == 3, "the old spelling still parses")
        }
    }

    @Test("errors are sentences with the next step and distinct exit codes: refused 3, download failed 4, playback refused 5")
    func errorsAndExitCodes() async throws {
        try await withCLI { cli in
            let clear = try await cli.download(Catalog.clearVideo)
            let rented = try await cli.download("6415818918104", ["--rental", "1h"])

            func expectFailure(_ arguments: [String], status: Int32, _ words: String) async throws {
                let output = try await cli.run(arguments)
                #expect(output.exitCode == status, "\(arguments): \(output.exitCode) \(output.stderrText)")
                #expect(output.stderrText.contains(words), "\(arguments): \(output.stderrText)")
                #expect(!output.stderrText.contains("OfflineVideoError(") && !output.stderrText.contains("Swift."), "no type dumps")
            }
            try await expectFailure(["status", "ffffffff"] + cli.store, status: 3, "No offline video has a token starting with ffffffff.")
            try await expectFailure(["pause", clear] + cli.store, status: 3, "is completed and cannot be paused")
            try await expectFailure(["download", Catalog.fairPlayVideo] + cli.service + cli.store, status: 3, "--purchase or --rental")
            try await expectFailure(["download", Catalog.clearVideo] + cli.service + cli.store, status: 3, "has already been downloaded")
            try await expectFailure(["download", "6415818918102"] + cli.service + cli.store, status: 3, "not eligible")
            try await expectFailure(["video", "1"], status: 3, "No Playback API given.")
            try await expectFailure(["video", "1", "--base-url", "http://127.0.0.1:9", "--account", "1", "--policy-key", "k"], status: 3,
                                    "Is the backend running")
            // Two days later the hour-long rental has expired: playback is refused.
            try await expectFailure(["play", rented, "--clock-offset", "2d"] + cli.store, status: 5, "expired")
            let json = try await cli.run(["play", rented, "--clock-offset", "2d", "--json"] + cli.store)
            let document = try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [String: Any]
            #expect(json.exitCode == 5 && document?["reason"] as? String == "license_expired" && document?["code"] as? String == "69303")
            // A second process cannot change what the first one runs.
            let holder = try RunningProcess(cli.executable, ["play", clear, "--serve", "--json"] + cli.store)
            #expect(try await holder.waitForOutput { $0.contains("\"url\"") })
            try await expectFailure(["delete", clear] + cli.store, status: 3, "is in use by process")
            holder.kill(SIGINT)
            _ = await holder.wait()
        }
    }

    @Test("over HTTPS: refused with a sentence naming --ca-file without the CA; with --ca-file a FairPlay rental downloads and its license shows")
    func https() async throws {
        try await withCLI({ $0.tls = TLSSettings() }) { cli in
            let caFile = try #require(cli.server.caFile).path
            let refused = try await cli.run(["video", Catalog.clearVideo] + cli.service)
            #expect(refused.exitCode == 3, "\(refused.stderrText)")
            #expect(refused.stderrText.contains("HTTPS certificate is not trusted") && refused.stderrText.contains("--ca-file"), "\(refused.stderrText)")
            let token = try await cli.download("6415818918104", ["--rental", "1h", "--ca-file", caFile])
            let license = try await cli.json(["license", token] + cli.store)
            #expect((license["license"] as? [String: Any])?["kind"] as? String == "rental", "\(license)")
        }
    }

    @Test("a download the server stops answering ends with exit code 4 and its reason")
    func failedDownload() async throws {
        let executable = try offlineExecutable()
        let storage = try TemporaryDirectory()
        defer { storage.remove() }
        var child: RunningProcess?
        // 20 ms a response, one segment at a time: the 7,200 segments would take the child over
        // two minutes, so it is still downloading when the backend goes, however late this
        // test gets to stop it.
        try await withBackend({ $0.addedLatencyMilliseconds = 20 }) { server in
            child = try RunningProcess(executable, ["download", Catalog.marathonVideo, "--json", "--parallel", "1",
                                                    "--storage", storage.url.path, "--reserve-mb", "0",
                                                    "--base-url", server.baseURL, "--account", Catalog.account, "--policy-key", Catalog.playKey])
            #expect(try await child!.waitForOutput { $0.contains("\"event\":\"requested\"") })
        }  // the backend is gone from here on
        let output = try #require(await child?.wait())
        #expect(output.exitCode == 4, "\(output.stdoutText.suffix(500))")
        #expect(output.stdoutText.contains("\"reason\":\"network\""))
    }

    @Test("--source-format cmaf --thumbnails: a CMAF package with its thumbnail track; play names its loopback WebVTT, --output writes a clear MP4 and says so")
    func cmafWithThumbnails() async throws {
        try await withCLI { cli in
            let token = try await cli.download(Catalog.clearVideo, ["--source-format", "cmaf", "--thumbnails", "--audio", "en"])
            let folder = cli.storage.url.appendingPathComponent("packages/\(token)")
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("0-video/init-0.mp4").path), "a CMAF package")
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("thumbnails/thumbnails.vtt").path))

            let file = cli.storage.url.appendingPathComponent("out.mp4").path
            let written = try await cli.run(["play", String(token.prefix(8)), "--output", file, "--audio", "en"] + cli.store)
            #expect(written.exitCode == 0 && written.stdoutText.contains("clear MP4 with en audio"), "\(written.stdoutText) \(written.stderrText)")
            let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", file])
            // The lowest variant of the CMAF source, which lists HEVC beside H.264.
            #expect((probe.stdoutText.contains("hevc") || probe.stdoutText.contains("h264")) && probe.stdoutText.contains("aac"), "\(probe.stdoutText)")

            let player = try RunningProcess(cli.executable, ["play", String(token.prefix(8)), "--json"] + cli.store)
            var thumbnails: String?
            let serving = try await player.waitForOutput { text in
                thumbnails = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["thumbnails"] as? String
                return thumbnails != nil
            }
            try #require(serving, "offline play: \(player.stdoutSoFar)")
            let vtt = try await Curl.fetch(try #require(thumbnails))
            #expect(vtt.status == 200 && vtt.text.hasPrefix("WEBVTT") && vtt.text.contains("sprite-1.jpg#xywh=0,0,160,90"), "\(vtt.text)")
            player.kill(SIGINT)
            #expect(await player.wait().exitCode == 0)
        }
    }

    @Test("offline play with the license server unreachable writes its output and exits without retrying the first-play report (one try per pass; it stays queued); the next command sends it")
    func playOfflineExitsPromptly() async throws {
        try await withCLI { cli in
            let rental = try await cli.download("6415818918104", ["--rental", "2d", "--play-duration", "6h"])
            let license = try await cli.json(["license", String(rental.prefix(10))] + cli.store)
            let licenseID = try #require((license["license"] as? [String: Any])?["license_id"] as? String)
            // The license server answers nothing but 503 (the request not carried out): the first-play report cannot go out.
            try cli.server.app.faults.add(FaultRule(id: "unreachable", route: .license, status: 503))
            let file = cli.storage.url.appendingPathComponent("out.ts").path
            let play = try await cli.json(["play", rental, "--output", file] + cli.store)
            #expect((play["bytes"] as? Int ?? 0) > 100_000)
            let tries = cli.server.app.faults.rules.first { $0.rule.id == "unreachable" }?.applied ?? 0
            // One try per pass (the open's, the outbox's backed-off ones while the export runs, the one
            // before exit), never the license client's ten retries over 30 s within a pass.
            #expect(tries >= 1 && tries < 10, "the report was tried \(tries) times before the command exited")
            #expect(try cli.server.app.licenses.license(id: licenseID)?.terms.firstPlay == nil)
            _ = cli.server.app.faults.remove(id: "unreachable")
            let after = try await cli.json(["license", rental] + cli.store)
            #expect((after["summary"] as? String)?.contains("of the 6 h play window left") == true, "the local first play stands")
            _ = try await cli.json(["play", rental, "--output", file] + cli.store)
            #expect(try cli.server.app.licenses.license(id: licenseID)?.terms.firstPlay != nil, "the queued report went out with the next play")
        }
    }

    @Test("offline demo runs every step against a fresh mock backend")
    func demo() async throws {
        try await withCLI { cli in
            let output = try await cli.run(["demo", "--base-url", cli.server.baseURL, "--admin-token", cli.server.app.adminToken,
                                            "--storage", cli.storage.url.path])
            #expect(output.exitCode == 0, "\(output.stdoutText) \(output.stderrText)")
            #expect(output.stdoutText.contains("[10/10] Clean up") && output.stdoutText.contains("Done: every step worked."))
            #expect(output.stdoutText.contains("refused with \"license expired\" (69303)"))
        }
    }
}
