import ArgumentParser
import CurlTransfer
import Foundation
import OfflineSDK
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// `offline demo`: the whole flow against a mock backend, narrated step by step. `make demo`
/// starts a mock on a free port with a throwaway data folder and runs this.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Walk through the whole flow against a mock backend: find, estimate, license, download, play, expire, renew, crash and resume.",
        discussion: "It moves the mock backend's clock (/_admin/v1/clock) and puts it back. Exits non-zero if any step fails.")
    @Option(name: .customLong("base-url"), help: "The mock backend. [OFFLINE_BASE_URL]") var baseURL: String?
    @Option(help: "A storage folder to use (default: a temporary one, removed afterwards). [OFFLINE_STORAGE]") var storage: String?
    @Option(name: .customLong("admin-token"), help: "The mock backend's admin token, to move its clock (mock-backend prints it at start). [OFFLINE_ADMIN_TOKEN]")
    var adminToken: String?

    static let account = "6415818918001"
    static let playKey = "BCpkADawqM1northwindPLAYkey000002"
    static let searchKey = "BCpkADawqM1northwindSEARCHkey0001"
    static let rental = "6415818918104"
    static let marathon = "6415818918106"

    func run() async throws {
        guard let base = baseURL ?? ProcessInfo.processInfo.environment["OFFLINE_BASE_URL"] else {
            throw ValidationError("give --base-url (OFFLINE_BASE_URL): a running mock backend, e.g. from `make serve`")
        }
        let temporary = storage == nil && ProcessInfo.processInfo.environment["OFFLINE_STORAGE"] == nil
        let folder = URL(fileURLWithPath: storage ?? ProcessInfo.processInfo.environment["OFFLINE_STORAGE"]
                         ?? NSTemporaryDirectory() + "offline-demo-\(getpid())")
        guard let token = adminToken ?? ProcessInfo.processInfo.environment["OFFLINE_ADMIN_TOKEN"] else {
            throw ValidationError("give --admin-token (OFFLINE_ADMIN_TOKEN): the second line mock-backend prints at start")
        }
        let demo = Demo(base: base, folder: folder, adminToken: token)
        defer { if temporary { try? FileManager.default.removeItem(at: folder) } }
        do {
            try await demo.run()
        } catch {
            await demo.restoreClock()
            let failure = describe(error, refusal: ExitStatus.failure)
            warn(Terminal.standard.styled("The demo failed: ", .red) + failure.message + (failure.hint.map { " " + $0 } ?? ""))
            throw ExitCode(failure.status == 0 ? 1 : failure.status)
        }
    }
}

/// The demo's steps and what they share: the mock backend, the storage folder, and a device
/// clock that follows the backend's when the demo moves it.
final class Demo: Sendable {
    let base: String
    let folder: URL
    let terminal = Terminal.standard
    let client = HTTPClient()
    private let clock = DeviceClock()
    private let stepNumber = Locked(0)
    static let steps = 10

    let adminToken: String

    init(base: String, folder: URL, adminToken: String) {
        self.base = base
        self.folder = folder
        self.adminToken = adminToken
    }

    var service: PlaybackService { PlaybackService(baseURL: base, accountID: DemoCommand.account, policyKey: DemoCommand.playKey) }

    func configuration() -> OfflineVideoManagerConfiguration {
        var configuration = OfflineVideoManagerConfiguration(storageDirectory: folder)
        configuration.minimumFreeSpace = 0
        let clock = self.clock
        configuration.clock = { clock.now() }
        return configuration
    }

    func now() -> Date { configuration().clock() }

    func step(_ title: String) {
        let number = stepNumber.withLock { value -> Int in
            value += 1
            return value
        }
        say("")
        say(terminal.styled("[\(number)/\(Demo.steps)] \(title)", .bold))
    }

    func detail(_ text: String) { say("      " + text) }

    func check(_ condition: Bool, _ what: String) throws {
        guard condition else { throw CommandFailure(status: ExitStatus.failure, message: "Check failed: \(what).") }
        detail(terminal.styled("✔ ", .green) + what)
    }

    func run() async throws {
        say(terminal.styled("offline demo", .bold) + " against \(base), storage \(folder.path)")

        step("Find a FairPlay rental in the catalog (Playback API search)")
        let search = PlaybackService(baseURL: base, accountID: DemoCommand.account, policyKey: DemoCommand.searchKey)
        let found = try await search.search(query: "tags:fairplay", sort: "name")
        for video in found.videos { detail(Describe.line(video)) }
        let video = try await service.findVideo(id: DemoCommand.rental)
        detail("chosen: \(video.name) (\(video.id))")

        step("Estimate its size with English and French audio and German subtitles, and check the free space")
        var manager = try await OfflineVideoManager(configuration: configuration())
        let selections = MediaSelections(audioLanguages: ["en", "fr"], subtitleLanguages: ["de"])
        let megabytes = try await manager.estimateDownloadSize(video, mediaSelections: selections, parameters: DownloadParameters())
        let free = Storage.freeSpace(folder) ?? 0
        detail("about \(Format.bytes(Int64(megabytes * OfflineVideoManager.bytesPerMegabyte))); \(Format.bytes(free)) free in \(folder.path)")
        try check(Double(free) > megabytes * OfflineVideoManager.bytesPerMegabyte, "it fits")

        step("Preload a rental license: 48 h, with a 6 h play window from the first play")
        let token = try await manager.preloadFairPlayLicense(video, parameters: DownloadParameters(license: .rental(duration: 48 * 3600, playDuration: 6 * 3600)))
        detail("token \(token.prefix(8)); license: \(try await licenseLine(manager, token))")

        step("Download it (the preloaded license is used; no media byte before it)")
        let events = manager.events()
        _ = try await manager.requestVideoDownload(video, mediaSelections: selections, parameters: nil)
        let follower = DownloadFollower(manager: manager, json: false)
        await follower.follow(events, [(token, video.name)])
        try check(follower.outcomes[token] == .some(nil), "downloaded")
        detail("license: \(try await licenseLine(manager, token))")

        step("Play it offline: the license is checked on this device, the media served clear on loopback")
        let playback = try await manager.openPlayback(token)
        let url = try playback.serve()
        detail("\(url.absoluteString)")
        try await probe(url)
        detail("license now: \(try await licenseLine(manager, token))")
        try check(playback.license?.firstPlay != nil, "the first play started the 6 h window: the license now ends 6 h from now, not in 48 h")
        await playback.close()

        step("Seven hours later: the backend's clock (and the device's) move past the play window")
        try await moveClock(by: 7 * 3600)
        detail("license: \(try await licenseLine(manager, token))")
        do {
            let refused = try await manager.openPlayback(token)
            await refused.close()
            try check(false, "playback refused once the license expired")
        } catch let error as OfflineVideoError {
            detail("openPlayback: \(error.code.rawValue) \(error.reason.rawValue): \(sentence(error.message))")
            try check(error.code == .expiredLicense, "refused with \"license expired\" (69303)")
        }

        step("Renew it as a purchase: it plays again, without downloading it again")
        _ = try await manager.renewFairPlayLicense(token, video: try await service.findVideo(id: video.id),
                                                   parameters: DownloadParameters(license: .purchase))
        detail("license: \(try await licenseLine(manager, token))")
        let again = try await manager.openPlayback(token)
        var segments = 0
        for try await _ in again.segments(of: again.tracks[0]) { segments += 1 }
        await again.close()
        try check(segments > 0, "\(segments) clear video segments read again")
        try await restoreClockOrThrow()

        step("A 2-hour download in another process, killed with SIGKILL halfway")
        await manager.close()
        let (token2, percent) = try await killedDownload()
        detail("killed at \(String(format: "%.0f", percent))% (token \(token2.prefix(8)))")

        step("A new manager continues it where it stopped")
        manager = try await OfflineVideoManager(configuration: configuration())
        let resumeEvents = manager.events()
        let resumed = DownloadFollower(manager: manager, json: false)
        await resumed.follow(resumeEvents, [(token2, "The Two-Hour Marathon")])
        try check(resumed.outcomes[token2] == .some(nil), "completed after the crash")

        step("Clean up")
        let all = try await manager.offlineVideoTokens
        for each in all { try await manager.deleteOfflineVideo(each) }
        await manager.close()
        try check(try await OfflineVideoManager(configuration: readerConfiguration()).offlineVideoTokens.isEmpty,
                  "\(all.count) offline videos and their licenses deleted")
        say("")
        say(terminal.styled("Done: every step worked.", .green))
    }

    func readerConfiguration() -> OfflineVideoManagerConfiguration {
        var configuration = configuration()
        configuration.role = .reader
        return configuration
    }

    func licenseLine(_ manager: OfflineVideoManager, _ token: OfflineVideoToken) async throws -> String {
        Format.license(try await manager.licenseInfo(token), fairPlay: true, now: now())
    }

    /// ffprobe on the loopback URL: the duration and the streams a player sees.
    func probe(_ url: URL) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_type,codec_name,width,height",
                             "-of", "compact=p=0", url.absoluteString]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            detail("(ffprobe is not installed: skipping the probe)")
            return
        }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        for line in Set(output.split(separator: "\n")).sorted() { detail("ffprobe: \(line)") }
        try check(process.terminationStatus == 0 && output.contains("h264"), "ffprobe reads the offline video from the loopback URL")
    }

    /// Moves the backend's clock and the device's by `seconds`.
    func moveClock(by seconds: TimeInterval) async throws {
        let offset = clock.offset.withLock { value -> TimeInterval in
            value += seconds
            return value
        }
        try await setServerClock(offset)
        detail("backend clock: +\(Format.duration(offset))")
    }

    func restoreClockOrThrow() async throws {
        clock.offset.withLock { $0 = 0 }
        try await setServerClock(0)
    }

    /// Puts the backend's clock back (after a failure too).
    func restoreClock() async {
        try? await restoreClockOrThrow()
    }

    private func setServerClock(_ offset: TimeInterval) async throws {
        let body = Array("{\"offset_seconds\": \(Int(offset))}".utf8)
        let response = try await client.send(HTTPClientRequest(url: base + "/_admin/v1/clock", method: .post,
                                                               headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(adminToken)")],
                                                               body: body))
        guard response.status == 200 else {
            throw CommandFailure(status: ExitStatus.failure, message: "The backend refused to move its clock (HTTP \(response.status)).")
        }
    }

    /// Runs `offline download` of the 2-hour video in a child process, kills it with SIGKILL once
    /// it is past 5 %, and returns its token and the percent it had reached.
    func killedDownload() async throws -> (OfflineVideoToken, Double) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["download", DemoCommand.marathon, "--json", "--reserve-mb", "0", "--storage", folder.path,
                           "--base-url", base, "--account", DemoCommand.account, "--policy-key", DemoCommand.playKey]
        let pipe = Pipe()
        child.standardOutput = pipe
        child.standardError = FileHandle.nullDevice
        try child.run()
        var token = "", percent = 0.0
        var buffer = Data()
        let handle = pipe.fileHandleForReading
        reading: while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else { continue }
                if let value = object["token"] as? String { token = value }
                if object["event"] as? String == "progress", let value = object["percent"] as? Double {
                    percent = value
                    if value > 5 {
                        kill(child.processIdentifier, SIGKILL)
                        break reading
                    }
                }
            }
        }
        child.waitUntilExit()
        try check(child.terminationReason == .uncaughtSignal, "the downloading process was killed (SIGKILL) mid-download")
        return (token, percent)
    }
}

/// The device clock of the demo: the wall clock plus the offset the backend's clock was moved by.
final class DeviceClock: Sendable {
    let offset = Locked<TimeInterval>(0)
    func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }
}
