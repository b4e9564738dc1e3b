import ArgumentParser
import Foundation
import OfflineSDK
import WireModels

/// Where the SDK keeps its offline store and packages.
struct StorageOptions: ParsableArguments {
    @Option(help: "Storage folder of the offline store. [OFFLINE_STORAGE, default ~/.local/share/OfflineSDK]")
    var storage: String?

    @Option(help: "Segments fetched in parallel per download.")
    var parallel: Int = 6

    @Flag(help: "Allow downloads over cellular (the SDK's default is no).")
    var allowCellular = false

    @Option(name: .customLong("reserve-mb"), help: "Refuse a download that would leave less free space than this (MiB).")
    var reserveMB: Int = 1024

    func manager(delegate: (any OfflineVideoManagerDelegate)? = nil, role: StorageRole = .owner) async throws -> OfflineVideoManager {
        var configuration = OfflineVideoManagerConfiguration()
        configuration.role = role
        if let folder = storage ?? ProcessInfo.processInfo.environment["OFFLINE_STORAGE"] {
            configuration.storageDirectory = URL(fileURLWithPath: folder)
        }
        configuration.segmentsInParallel = max(1, parallel)
        configuration.minimumFreeSpace = Int64(max(0, reserveMB)) * 1_048_576
        configuration.options.allowsCellularDownload = allowCellular
        return try await OfflineVideoManager(configuration: configuration, delegate: delegate)
    }
}

struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download", abstract: "Download a video for offline playback and wait until it is done.")
    @OptionGroup var service: ServiceOptions
    @OptionGroup var storage: StorageOptions
    @Argument(help: "Video id, or ref:REFERENCE_ID.") var id: String
    @Option(help: "Bitrate in bits/s: the largest rendition at or below it (default: the lowest).") var bitrate: Int?
    @Option(help: "Audio languages, comma-separated (default: the default audio).") var audio: String?
    @Option(help: "Subtitle languages, comma-separated.") var subtitles: String?
    @Flag(help: "Print one line per progress event instead of a status line.") var verbose = false
    @OptionGroup var license: LicenseOptions

    func run() async throws {
        let playback = try service.service()
        // The store opens while the Playback API answers.
        async let opened = storage.manager()
        let video = id.hasPrefix("ref:") ? try await playback.findVideo(referenceID: String(id.dropFirst(4)))
                                         : try await playback.findVideo(id: id)
        let manager = try await opened
        let events = manager.events()
        let selections = MediaSelections(audioLanguages: Self.list(audio), subtitleLanguages: Self.list(subtitles))
        let token = try await manager.requestVideoDownload(video, mediaSelections: selections,
                                                           parameters: DownloadParameters(requestedBitrate: bitrate, license: try license.requested()))
        print("downloading \(video.name) as \(token)")
        try await Progress.follow(events, tokens: [token], manager: manager, verbose: verbose)
        await manager.close()
    }

    static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// The license terms of a FairPlay download.
struct LicenseOptions: ParsableArguments {
    @Flag(help: "FairPlay: buy the video (the license never expires).") var purchase = false
    @Option(name: .customLong("rental-hours"), help: "FairPlay: rent the video for this many hours.") var rentalHours: Double?
    @Option(name: .customLong("play-hours"), help: "FairPlay rentals: the license also ends this many hours after the first playback.")
    var playHours: Double?

    func requested() throws -> RequestedLicense? {
        switch (purchase, rentalHours) {
        case (true, nil): return .purchase
        case (false, let hours?): return .rental(duration: hours * 3600, playDuration: playHours.map { $0 * 3600 })
        case (false, nil): return nil
        case (true, _?): throw ValidationError("give --purchase or --rental-hours, not both")
        }
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List offline videos and their state.")
    @OptionGroup var storage: StorageOptions

    func run() async throws {
        let manager = try await storage.manager(role: .reader)
        let statuses = try await manager.offlineVideoStatus()
        if statuses.isEmpty { print("no offline videos") }
        for status in statuses {
            let name = await manager.videoObject(fromOfflineVideoToken: status.token)?.name ?? "?"
            var line = "\(status.token)  \(status.downloadState)  \(String(format: "%5.1f", status.downloadPercent)) %  \(name)"
            switch try await manager.fairPlayLicenseExpiration(status.token) {
            case nil: line += "  [no license]"
            case Date.distantFuture?: break
            case let expiry?: line += "  [license until \(WireDate.string(from: expiry))]"
            }
            if let error = status.error { line += "  error \(error.code.rawValue) \(error.reason.rawValue): \(error.message)" }
            print(line)
        }
    }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Continue interrupted downloads (and a suspended or failed one by token) and wait for them.")
    @OptionGroup var storage: StorageOptions
    @Argument(help: "A suspended or failed download to resume too.") var token: String?
    @Flag(help: "Print one line per progress event.") var verbose = false

    func run() async throws {
        let manager = try await storage.manager()
        let events = manager.events()
        if let token { try await manager.resumeVideoDownload(token) }
        let active = try await manager.offlineVideoStatus().filter { $0.downloadState == .requested || $0.downloadState == .downloading }
        if active.isEmpty { print("nothing to resume") }
        try await Progress.follow(events, tokens: active.map(\.token), manager: manager, verbose: verbose)
        await manager.close()
    }
}

struct ControlCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "control", abstract: "Pause, cancel or delete an offline video.")
    enum Action: String, ExpressibleByArgument, CaseIterable { case pause, cancel, delete }
    @OptionGroup var storage: StorageOptions
    @Argument(help: "pause, cancel or delete") var action: Action
    @Argument(help: "The offline video token.") var token: String

    func run() async throws {
        let manager = try await storage.manager()
        switch action {
        case .pause: try await manager.pauseVideoDownload(token)
        case .cancel: try await manager.cancelVideoDownload(token)
        case .delete: try await manager.deleteOfflineVideo(token)
        }
        print("\(action.rawValue): \(token)")
    }
}

/// Follows downloads on the terminal until each has finished.
enum Progress {
    static func follow(_ events: AsyncStream<OfflineVideoEvent>, tokens: [OfflineVideoToken], manager: OfflineVideoManager,
                       verbose: Bool) async throws {
        var open = Set(tokens)
        guard !open.isEmpty else { return }
        var failures: [String] = []
        var lastLine = ContinuousClock.now - .seconds(1)
        for await event in events {
            switch event {
            case .progress(let token, let percent, let selection):
                guard open.contains(token) else { continue }
                if verbose {
                    say("\(token.prefix(8))  \(selection)  \(String(format: "%5.1f", percent)) %")
                } else if ContinuousClock.now - lastLine > .milliseconds(500) {
                    lastLine = ContinuousClock.now
                    let overall = (try? await manager.offlineVideoStatus(forToken: token))?.downloadPercent ?? percent
                    say("\(token.prefix(8))  \(String(format: "%5.1f", overall)) %")
                }
            case .mediaSelectionFinished(let token, let selection):
                if open.contains(token) { say("\(token.prefix(8))  \(selection) done") }
            case .staticImagesDownloaded(let token):
                if open.contains(token) { say("\(token.prefix(8))  poster and thumbnail fetched") }
            case .downloadFinished(let token, let error):
                guard open.remove(token) != nil else { continue }
                if let error {
                    say("\(token.prefix(8))  failed: \(error)")
                    failures.append(token)
                } else {
                    let path = await manager.videoObject(fromOfflineVideoToken: token)?.offlineVideoPath ?? "?"
                    say("\(token.prefix(8))  completed: \(path)")
                }
            case .storageChanged:
                say("offline storage changed while the manager was not running")
            case .licenseExpirationChanged, .downloadPurged:
                break
            }
            if open.isEmpty { break }
        }
        if !failures.isEmpty { throw ExitCode(1) }
    }
}

/// Prints a line and flushes it at once, so a log file or a pipe sees progress as it happens.
func say(_ line: String) {
    print(line)
    fflush(nil)  // every output stream; `stdout` itself is a C global Swift 6 will not touch
}
