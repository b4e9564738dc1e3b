import ArgumentParser
import Foundation
import OfflineSDK
import WireModels
import LicenseProtocol

/// One offline video as the library commands show it.
struct LibraryEntry {
    var token: OfflineVideoToken
    var title: String
    var status: OfflineVideoStatus
    var fairPlay: Bool
    var license: OfflineLicenseInfo?
    var licenseProblem: OfflineVideoError?
    var size: Int64
    var path: String?
    var playable: Bool

    static func load(_ token: OfflineVideoToken, manager: OfflineVideoManager, storage: URL) async throws -> LibraryEntry? {
        guard let status = try await manager.offlineVideoStatus(forToken: token) else { return nil }
        let video = await manager.videoObject(fromOfflineVideoToken: token)
        var license: OfflineLicenseInfo?, problem: OfflineVideoError?
        do { license = try await manager.licenseInfo(token) } catch { problem = error }
        return LibraryEntry(token: token, title: video?.name ?? "?", status: status, fairPlay: video?.usesFairPlay ?? false,
                            license: license, licenseProblem: problem,
                            size: Storage.size(storage.appendingPathComponent("packages/\(token)")),
                            path: video?.offlineMasterPlaylistPath, playable: video?.playableOffline ?? false)
    }

    func licenseLine(now: Date) -> String {
        if let licenseProblem { return "license unusable (\(licenseProblem.reason.rawValue))" }
        return Format.license(license, fairPlay: fairPlay, now: now)
    }

    func json(now: Date) -> [String: Any] {
        var document: [String: Any] = ["token": token, "title": title, "state": status.downloadState.description,
                                       "percent": (status.downloadPercent * 10).rounded() / 10, "size_bytes": size,
                                       "playable_offline": playable, "license_summary": licenseLine(now: now)]
        if let path { document["path"] = path }
        if let error = status.error { document["error"] = ["code": error.code.rawValue, "reason": error.reason.rawValue, "message": error.message] }
        if let license { document["license"] = LicenseCommand.json(license) }
        return document
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List offline videos: state, progress, size and license.")
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try await runCommand(json: output.json) {
            let manager = try await storage.manager(role: .reader)
            let now = storage.configuration().clock()
            let tokens = try await manager.offlineVideoTokens
            var entries: [LibraryEntry] = []
            for token in tokens {
                if let entry = try await LibraryEntry.load(token, manager: manager, storage: storage.folder) { entries.append(entry) }
            }
            let free = Storage.freeSpace(storage.folder)
            if output.json {
                var document: [String: Any] = ["storage": storage.folder.path, "videos": entries.map { $0.json(now: now) }]
                if let free { document["free_bytes"] = free }
                JSONOutput.print(document)
                return
            }
            let terminal = Terminal.standard
            if entries.isEmpty {
                say("No offline videos in \(storage.folder.path).")
            } else {
                let short = shortTokens(tokens)
                let rows = entries.map { entry in
                    [short[entry.token] ?? entry.token, entry.title, entry.status.downloadState.description,
                     String(format: "%.0f%%", entry.status.downloadPercent), Format.bytes(entry.size), entry.licenseLine(now: now)]
                }
                let header = ["TOKEN", "TITLE", "STATE", "DONE", "SIZE", "LICENSE"]
                let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
                func render(_ row: [String]) -> String {
                    row.enumerated().map { index, cell in
                        index == row.count - 1 ? cell
                            : (index == 3 || index == 4 ? String(repeating: " ", count: widths[index] - cell.count) + cell
                                                        : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0))
                    }.joined(separator: "  ")
                }
                say(terminal.styled(render(header), .bold))
                for (row, entry) in zip(rows, entries) {
                    var line = render(row)
                    if entry.status.downloadState == .error || entry.license?.isExpired == true || entry.licenseProblem != nil {
                        line = terminal.styled(line, .red)
                    }
                    say(line)
                    if let error = entry.status.error, entry.status.downloadState == .error || entry.status.downloadState == .stale {
                        say("    " + terminal.styled(sentence(error.message), .dim))
                    }
                }
            }
            if let free { say("\(Format.bytes(free)) free in \(storage.folder.path)") }
        }
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show one offline video: its download by track, and its license.")
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The offline video's token (a unique prefix).") var token: String

    func run() async throws {
        try await runCommand(json: output.json) {
            let (manager, token, now) = try await storage.lookUp(token)
            guard let entry = try await LibraryEntry.load(token, manager: manager, storage: storage.folder) else { return }
            let tracks = try await manager.downloadProgress(token)
            if output.json {
                var document = entry.json(now: now)
                document["tracks"] = tracks.map { ["selection": Format.selection($0.selection), "percent": ($0.percent * 10).rounded() / 10,
                                                   "bytes": $0.bytesDone, "expected_bytes": $0.bytesExpected] as [String: Any] }
                JSONOutput.print(document)
                return
            }
            say(Terminal.standard.styled(entry.title, .bold) + "  \(token)")
            say("  state     \(entry.status.downloadState), \(String(format: "%.1f", entry.status.downloadPercent))%, \(Format.bytes(entry.size)) on disk")
            say("  started   \(Format.date(entry.status.downloadStartTime))" + (entry.status.downloadEndTime.map { ", ended \(Format.date($0))" } ?? ""))
            for track in tracks {
                say("  \(Format.selection(track.selection).padding(toLength: 18, withPad: " ", startingAt: 0))"
                    + String(format: "%5.1f%%", track.percent) + "  \(Format.bytes(track.bytesDone)) of ~\(Format.bytes(track.bytesExpected))")
            }
            say("  license   \(entry.licenseLine(now: now))")
            if let path = entry.path { say("  playlist  \(path)" + (entry.playable ? "" : " (not playable offline yet)")) }
            if let error = entry.status.error { say("  error     \(error.code.rawValue) \(error.reason.rawValue): \(sentence(error.message))") }
        }
    }
}

struct LicenseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "license", abstract: "Show an offline video's license: kind, rental end, play window, first play, what is left.")
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The offline video's token (a unique prefix).") var token: String

    func run() async throws {
        try await runCommand(json: output.json) {
            let (manager, token, now) = try await storage.lookUp(token)
            let fairPlay = await manager.videoObject(fromOfflineVideoToken: token)?.usesFairPlay ?? false
            let info = try await manager.licenseInfo(token)
            if output.json {
                JSONOutput.print(["token": token, "fairplay": fairPlay, "license": info.map(Self.json) as Any? ?? NSNull(),
                                  "summary": Format.license(info, fairPlay: fairPlay, now: now)])
                return
            }
            say(Format.license(info, fairPlay: fairPlay, now: now))
            guard let info else { return }
            say("  kind           \(info.kind.rawValue) (license \(info.licenseID))")
            say("  issued         \(Format.date(info.issuedAt))")
            if let end = info.rentalEnd { say("  rental ends    \(Format.date(end))" + (info.rentalRemaining.map { ", \(Format.duration($0)) \($0 >= 0 ? "left" : "ago")" } ?? "")) }
            if let window = info.playDuration { say("  play window    \(Format.duration(window)) from the first play") }
            say("  first play     " + (info.firstPlay.map(Format.date) ?? "not yet"))
            if let remaining = info.playRemaining, info.playDuration != nil { say("  window left    \(remaining >= 0 ? Format.duration(remaining) : "none")") }
            say("  expires        " + (info.expiration.map(Format.date) ?? "never") + (info.isExpired ? " (expired)" : ""))
        }
    }

    static func json(_ info: OfflineLicenseInfo) -> [String: Any] {
        var document: [String: Any] = ["kind": info.kind.rawValue, "license_id": info.licenseID, "issued_at": Format.date(info.issuedAt),
                                       "expired": info.isExpired]
        if let value = info.rentalEnd { document["rental_end"] = Format.date(value) }
        if let value = info.playDuration { document["play_duration_seconds"] = value }
        if let value = info.firstPlay { document["first_play"] = Format.date(value) }
        if let value = info.expiration { document["expires_at"] = Format.date(value) }
        if let value = info.rentalRemaining { document["rental_remaining_seconds"] = value.rounded() }
        if let value = info.playRemaining { document["play_remaining_seconds"] = value.rounded() }
        return document
    }
}

struct RenewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "renew", abstract: "Renew an offline video's FairPlay license (or get a new one after it was given back).",
        discussion: "The video is fetched again from the Playback API it was downloaded from, unless --base-url and friends name another.")
    @OptionGroup var service: ServiceOptions
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var license: LicenseOptions
    @Argument(help: "The offline video's token (a unique prefix).") var token: String

    func run() async throws {
        try await runCommand(json: output.json) {
            guard let terms = try license.requested() else {
                throw ValidationError("give --purchase or --rental DURATION")
            }
            let manager = try await storage.manager(trustedCAFile: service.trustedCAFile)
            let token = try await resolveToken(token, in: manager)
            guard let offline = await manager.videoObject(fromOfflineVideoToken: token) else { return }
            let playback: PlaybackService
            if service.isGiven {
                playback = try service.service()
            } else if let origin = offline.origin {
                playback = service.trustedCAFile.map {
                    PlaybackService(baseURL: origin.baseURL, accountID: origin.accountID, policyKey: origin.policyKey,
                                    authToken: origin.authToken, trustedCAFile: $0)
                } ?? PlaybackService(origin: origin)
            } else {
                throw CommandFailure(status: ExitStatus.refused, message: "The download does not say which Playback API it came from.",
                                     hint: "Give --base-url, --account and --policy-key.")
            }
            let fresh = try await playback.findVideo(id: offline.id)
            _ = try await manager.renewFairPlayLicense(token, video: fresh, parameters: DownloadParameters(license: terms))
            let info = try await manager.licenseInfo(token)
            await finish(manager)
            let now = storage.configuration().clock()
            if output.json {
                JSONOutput.print(["token": token, "license": info.map(LicenseCommand.json) as Any? ?? NSNull()])
            } else {
                say("Renewed: \(Format.license(info, fairPlay: true, now: now)).")
            }
        }
    }
}
