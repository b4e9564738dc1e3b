import ArgumentParser
import Foundation
import OfflineSDK
import WireModels

/// The license terms of a FairPlay download or renewal.
struct LicenseOptions: ParsableArguments {
    @Flag(help: "FairPlay: buy the video (the license never expires).") var purchase = false
    @Option(help: "FairPlay: rent the video for this long (30d, 48h, 90m, 45s).") var rental: DurationArgument?
    @Option(name: .customLong("play-duration"), help: "FairPlay rentals: the license also ends this long after the first playback.")
    var playDuration: DurationArgument?
    @Option(name: .customLong("rental-hours"), help: ArgumentHelp("Replaced by --rental Nh.", visibility: .hidden)) var rentalHours: Double?
    @Option(name: .customLong("play-hours"), help: ArgumentHelp("Replaced by --play-duration Nh.", visibility: .hidden)) var playHours: Double?

    func requested() throws -> RequestedLicense? {
        let rentalSeconds = rental?.seconds ?? rentalHours.map { $0 * 3600 }
        let play = playDuration?.seconds ?? playHours.map { $0 * 3600 }
        switch (purchase, rentalSeconds) {
        case (true, nil):
            if play != nil { throw ValidationError("--play-duration goes with --rental, not --purchase") }
            return .purchase
        case (false, let seconds?): return .rental(duration: seconds, playDuration: play)
        case (false, nil):
            if play != nil { throw ValidationError("--play-duration needs --rental DURATION") }
            return nil
        case (true, _?): throw ValidationError("give --purchase or --rental, not both")
        }
    }

    /// `rental 48 h, 6 h play window` or `purchase`.
    static func describe(_ license: RequestedLicense?) -> String? {
        guard let license else { return nil }
        switch license.kind {
        case .purchase: return "purchase"
        case .rental:
            return "rental \(Format.duration(license.rentalDuration ?? 0))" + (license.playDuration.map { ", \(Format.duration($0)) play window" } ?? "")
        }
    }
}

struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download", abstract: "Download a video for offline playback and follow it until it is done.",
        discussion: "Ctrl-C pauses the download (nothing is lost; `offline resume` continues it); a second Ctrl-C quits.")
    @OptionGroup var service: ServiceOptions
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var selection: SelectionOptions
    @OptionGroup var license: LicenseOptions
    @Flag(help: ArgumentHelp("Replaced by the live progress display.", visibility: .hidden)) var verbose = false
    @Argument(help: "Video id, or ref:REFERENCE_ID.") var id: String

    func run() async throws {
        try await runCommand(json: output.json) {
            let terms = try license.requested()
            // The store opens while the Playback API answers.
            async let opened = storage.manager(trustedCAFile: service.trustedCAFile)
            let video = try await service.video(id)
            let manager = try await opened
            let events = manager.events()
            let token = try await manager.requestVideoDownload(video, mediaSelections: selection.selections,
                                                               parameters: DownloadParameters(requestedBitrate: selection.bitrate, license: terms))
            if output.json {
                JSONOutput.print(["event": "requested", "token": token, "video": video.id, "name": video.name])
            } else {
                say("Downloading \(video.name) (\(Describe.protection(video))" + (LicenseOptions.describe(terms).map { ", \($0)" } ?? "") + ")")
            }
            try await follow(manager, events, [(token, video.name)], json: output.json)
        }
    }
}

/// Follows downloads with a progress display; Ctrl-C pauses them. Throws exit status 4 when one failed.
func follow(_ manager: OfflineVideoManager, _ events: AsyncStream<OfflineVideoEvent>,
            _ downloads: [(token: OfflineVideoToken, title: String)], json: Bool) async throws {
    let tokens = downloads.map(\.token)
    let interrupt = Interrupt {
        for token in tokens { try? await manager.pauseVideoDownload(token) }
        await manager.close()
        let short = shortTokens(tokens)
        if json {
            JSONOutput.print(["event": "paused", "tokens": tokens])
        } else {
            say("")
            say("Paused. Nothing is lost: continue with `offline resume" + (tokens.count == 1 ? " \(short[tokens[0]] ?? tokens[0])" : "") + "`.")
        }
        exit(ExitStatus.interrupted)
    }
    let follower = DownloadFollower(manager: manager, json: json)
    await follower.follow(events, downloads)
    withExtendedLifetime(interrupt) {}
    await finish(manager)
    if follower.outcomes.values.contains(where: { $0 != nil }) { throw ExitCode(ExitStatus.downloadFailed) }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Continue a paused or failed download, or with no token every interrupted one, and follow them.")
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: ArgumentHelp("Replaced by the live progress display.", visibility: .hidden)) var verbose = false
    @Option(name: .customLong("ca-file"), help: ArgumentHelp("PEM CA certificates to trust for HTTPS (as for download). [OFFLINE_CA_FILE]", valueName: "file"))
    var caFile: String?
    @Argument(help: "A paused or failed download (a unique token prefix).") var token: String?

    func run() async throws {
        try await runCommand(json: output.json) {
            let manager = try await storage.manager(trustedCAFile: caFile.map { URL(fileURLWithPath: $0) } ?? StorageOptions.environmentCAFile)
            let events = manager.events()
            if let token {
                try await manager.resumeVideoDownload(try await resolveToken(token, in: manager))
            }
            let active = try await manager.offlineVideoStatus().filter { $0.downloadState.isActive }
            if active.isEmpty {
                if output.json { JSONOutput.print(["resumed": [String]()]) } else { say("Nothing to resume.") }
                await finish(manager)
                return
            }
            var downloads: [(token: OfflineVideoToken, title: String)] = []
            for status in active {
                downloads.append((status.token, await manager.videoObject(fromOfflineVideoToken: status.token)?.name ?? status.token))
            }
            try await follow(manager, events, downloads, json: output.json)
        }
    }
}

/// pause, cancel, delete and retry: one token, one change.
struct TokenAction {
    enum Action: String { case pause, cancel, delete, retry }

    static func run(_ action: Action, token prefix: String, storage: StorageOptions, json: Bool) async throws {
        try await runCommand(json: json) {
            let manager = try await storage.manager()
            let token = try await resolveToken(prefix, in: manager)
            let name = await manager.videoObject(fromOfflineVideoToken: token)?.name ?? token
            switch action {
            case .pause: try await manager.pauseVideoDownload(token)
            case .cancel: try await manager.cancelVideoDownload(token)
            case .delete: try await manager.deleteOfflineVideo(token)
            case .retry: try await manager.retryVideoDownload(token)
            }
            let state = try await manager.offlineVideoStatus(forToken: token)?.downloadState.description ?? "deleted"
            await finish(manager)
            if json {
                JSONOutput.print(["token": token, "action": action.rawValue, "state": state])
            } else {
                let done = switch action {
                case .pause: "Paused \(name). `offline resume \(prefix)` continues it."
                case .cancel: "Cancelled \(name): its files are gone; `offline delete \(prefix)` forgets it."
                case .delete: "Deleted \(name) and its license."
                case .retry: "Queued \(name) again; `offline resume` follows it."
                }
                say(done)
            }
        }
    }
}

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause a download (finished segments are kept).")
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The download's token (a unique prefix).") var token: String
    func run() async throws { try await TokenAction.run(.pause, token: token, storage: storage, json: output.json) }
}

struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Cancel a download and remove its files.")
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The download's token (a unique prefix).") var token: String
    func run() async throws { try await TokenAction.run(.cancel, token: token, storage: storage, json: output.json) }
}

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete an offline video, its files and its license.")
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The offline video's token (a unique prefix).") var token: String
    func run() async throws { try await TokenAction.run(.delete, token: token, storage: storage, json: output.json) }
}

struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry", abstract: "Retry a failed download, keeping the segments it already has (then `offline resume` follows it).")
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The failed download's token (a unique prefix).") var token: String
    func run() async throws { try await TokenAction.run(.retry, token: token, storage: storage, json: output.json) }
}

/// The old spelling: `offline control pause|cancel|delete TOKEN`.
struct ControlCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "control", abstract: "Replaced by `offline pause|cancel|delete TOKEN` (still works).", shouldDisplay: false)
    enum Action: String, ExpressibleByArgument, CaseIterable { case pause, cancel, delete }
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "pause, cancel or delete") var action: Action
    @Argument(help: "The offline video token.") var token: String

    func run() async throws {
        let mapped: TokenAction.Action = switch action {
        case .pause: .pause
        case .cancel: .cancel
        case .delete: .delete
        }
        try await TokenAction.run(mapped, token: token, storage: storage, json: output.json)
    }
}
