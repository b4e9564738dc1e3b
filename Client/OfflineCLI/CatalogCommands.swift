import ArgumentParser
import Foundation
import OfflineSDK
import WireModels
import SystemFiles

struct VideoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "video", abstract: "Show one video of the Playback API.")
    @OptionGroup var service: ServiceOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Video id, or ref:REFERENCE_ID.") var id: String

    func run() async throws {
        try await runCommand(json: output.json) {
            let video = try await service.video(id)
            if output.json {
                JSONOutput.print(Describe.json(video))
            } else {
                say(Describe.video(video))
            }
        }
    }
}

struct PlaylistCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "playlist", abstract: "List a playlist's videos.")
    @OptionGroup var service: ServiceOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Playlist id, or ref:REFERENCE_ID.") var id: String
    @Option var limit: Int?
    @Option var offset: Int?

    func run() async throws {
        try await runCommand(json: output.json) {
            let playback = try service.service()
            let result = id.hasPrefix("ref:") ? try await playback.findPlaylist(referenceID: String(id.dropFirst(4)), limit: limit, offset: offset)
                                              : try await playback.findPlaylist(id: id, limit: limit, offset: offset)
            if output.json {
                JSONOutput.print(["id": result.playlist.id, "name": result.playlist.name, "videos": result.videos.map(Describe.json)])
            } else {
                say("\(result.playlist.name) (\(result.playlist.id)): \(result.videos.count) videos")
                for video in result.videos { say("  " + Describe.line(video)) }
            }
        }
    }
}

struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "search", abstract: "Search an account's videos (needs a search-enabled policy key).")
    @OptionGroup var service: ServiceOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Query, e.g. 'tags:fairplay' or '+name:bars -tags:long'.") var query: String = ""
    @Option var sort: String?
    @Option var limit: Int?
    @Option var offset: Int?

    func run() async throws {
        try await runCommand(json: output.json) {
            let result = try await service.service().search(query: query, sort: sort, limit: limit, offset: offset)
            if output.json {
                JSONOutput.print(["count": result.count, "videos": result.videos.map(Describe.json)])
            } else {
                say("\(result.count) videos match" + (result.videos.count < result.count ? ", showing \(result.videos.count)" : ""))
                for video in result.videos { say("  " + Describe.line(video)) }
            }
        }
    }
}

/// What to download of a video: bitrate, audio and subtitle languages, the thumbnail track.
struct SelectionOptions: ParsableArguments {
    @Option(help: "Bitrate in bits/s: the largest rendition at or below it (default: the lowest).") var bitrate: Int?
    @Option(help: "Audio languages, comma-separated (default: the default audio).") var audio: String?
    @Option(help: "Subtitle languages, comma-separated.") var subtitles: String?
    @Flag(help: "Also download the thumbnail track (scrubbing previews), when the video has one.") var thumbnails = false

    var selections: MediaSelections {
        MediaSelections(audioLanguages: Self.list(audio), subtitleLanguages: Self.list(subtitles), thumbnails: thumbnails)
    }

    static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

struct EstimateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "estimate", abstract: "Estimate a download's size and check it against the free space.")
    @OptionGroup var service: ServiceOptions
    @OptionGroup var storage: StorageOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var selection: SelectionOptions
    @Argument(help: "Video id, or ref:REFERENCE_ID.") var id: String

    func run() async throws {
        try await runCommand(json: output.json) {
            let video = try await service.video(id)
            let manager = try await storage.manager(role: .reader, trustedCAFile: service.trustedCAFile)
            // What `offline download` with the same options would fetch (without --bitrate, the lowest variant).
            let megabytes = try await manager.estimateDownloadSize(video, mediaSelections: selection.selections,
                                                                   parameters: DownloadParameters(requestedBitrate: selection.bitrate))
            let needed = Int64(megabytes * OfflineVideoManager.bytesPerMegabyte)
            let free = Storage.freeSpace(storage.folder)
            let reserve = Int64(storage.reserveMB) * 1_048_576
            let fits = free.map { $0 - needed >= reserve }
            if output.json {
                var document: [String: Any] = ["video": video.id, "estimated_bytes": needed, "reserve_bytes": reserve]
                if let free { document["free_bytes"] = free }
                if let fits { document["fits"] = fits }
                JSONOutput.print(document)
            } else {
                say("\(video.name): about \(Format.bytes(needed))")
                if let free, let fits {
                    say("\(Format.bytes(free)) free in \(storage.folder.path); \(Format.bytes(reserve)) must stay free: "
                        + (fits ? "it fits" : "it does not fit"))
                }
            }
        }
    }
}

/// Text and JSON for people and scripts.
enum Describe {
    static func protection(_ video: PlaybackVideo) -> String {
        video.usesFairPlay ? "FairPlay" : (video.sources.first?.src.contains("/aes128/") == true ? "AES-128" : "clear")
    }

    static func line(_ video: PlaybackVideo) -> String {
        "\(video.id)  \(video.name)  [\(Format.duration(video.duration)), \(protection(video))\(video.canBeDownloaded ? ", downloadable" : "")]"
    }

    static func video(_ video: PlaybackVideo) -> String {
        var lines = [line(video)]
        if let ref = video.referenceID { lines.append("  reference id: \(ref)") }
        if let description = video.video.description { lines.append("  \(description)") }
        for source in video.sources {
            lines.append("  source: \(source.type ?? source.container ?? "file") \(source.src)")
            if let fairPlay = source.fairPlay {
                lines.append("    license: \(fairPlay.keyRequestURL ?? "-")")
                lines.append("    certificate: \(fairPlay.certificateURL ?? "-")")
            }
            if let expiry = URLToken.expiry(ofURL: source.src) { lines.append("    URL expires \(WireDate.string(from: expiry))") }
        }
        let subtitles = video.textTracks.filter { !$0.isThumbnailTrack }
        if !subtitles.isEmpty { lines.append("  sideband subtitles: " + subtitles.map(\.srclang).joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }

    static func json(_ video: PlaybackVideo) -> [String: Any] {
        var document: [String: Any] = ["id": video.id, "name": video.name, "duration": video.duration, "protection": protection(video),
                                       "offline_enabled": video.canBeDownloaded]
        if let ref = video.referenceID { document["reference_id"] = ref }
        document["sources"] = video.sources.map { $0.src }
        document["sideband_subtitles"] = video.textTracks.filter { !$0.isThumbnailTrack }.map(\.srclang)
        return document
    }
}

/// The storage folder's free space.
enum Storage {
    static func freeSpace(_ folder: URL) -> Int64? {
        var path = folder
        while !FileManager.default.fileExists(atPath: path.path), path.pathComponents.count > 1 { path.deleteLastPathComponent() }
        return FileSystemSpace.available(at: path.path)
    }

    /// Bytes of every file under `folder`.
    static func size(_ folder: URL) -> Int64 {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey]) else { return 0 }
        var total: Int64 = 0
        for case let url as URL in enumerator {
            total += Int64((try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
        }
        return total
    }
}
