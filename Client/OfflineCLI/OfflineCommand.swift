import ArgumentParser
import Foundation
import OfflineSDK
import WireModels

/// `offline`: the SDK from the command line: find videos through the Playback API, download
/// them with the OfflineVideoManager, list, pause, resume, cancel and delete them.
@main
struct OfflineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offline",
        abstract: "Find and download videos for offline playback, against the mock backend or a real Playback API.",
        subcommands: [VideoCommand.self, PlaylistCommand.self, SearchCommand.self, DownloadCommand.self, ListCommand.self,
                      ResumeCommand.self, ControlCommand.self])
}

/// Where the Playback API is and who is asking.
struct ServiceOptions: ParsableArguments {
    @Option(name: .customLong("base-url"), help: "Scheme, host and port of the Playback API. [OFFLINE_BASE_URL]")
    var baseURLOption: String?

    @Option(help: "Account id. [OFFLINE_ACCOUNT]")
    var account: String?

    @Option(name: .customLong("policy-key"), help: "Policy key. [OFFLINE_POLICY_KEY]")
    var policyKey: String?

    @Option(help: "Playback-restriction JWT, sent as Authorization: Bearer. [OFFLINE_JWT]")
    var jwt: String?

    func service() throws -> PlaybackService {
        let environment = ProcessInfo.processInfo.environment
        guard let base = baseURLOption ?? environment["OFFLINE_BASE_URL"] else {
            throw ValidationError("give --base-url (or OFFLINE_BASE_URL), e.g. http://127.0.0.1:8080")
        }
        guard let account = account ?? environment["OFFLINE_ACCOUNT"] else { throw ValidationError("give --account") }
        let key = policyKey ?? environment["OFFLINE_POLICY_KEY"]
        let token = jwt ?? environment["OFFLINE_JWT"]
        guard key != nil || token != nil else { throw ValidationError("give --policy-key or --jwt") }
        return PlaybackService(baseURL: base, accountID: account, policyKey: key, authToken: token)
    }
}

struct VideoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "video", abstract: "Show one video.")
    @OptionGroup var options: ServiceOptions
    @Argument(help: "Video id, or ref:REFERENCE_ID.") var id: String

    func run() async throws {
        let service = try options.service()
        let video = id.hasPrefix("ref:") ? try await service.findVideo(referenceID: String(id.dropFirst(4)))
                                         : try await service.findVideo(id: id)
        print(Describe.video(video))
    }
}

struct PlaylistCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "playlist", abstract: "List a playlist's videos.")
    @OptionGroup var options: ServiceOptions
    @Argument(help: "Playlist id, or ref:REFERENCE_ID.") var id: String
    @Option var limit: Int?
    @Option var offset: Int?

    func run() async throws {
        let result = try await options.service().findPlaylist(id: id, limit: limit, offset: offset)
        print("\(result.playlist.name) (\(result.playlist.id)): \(result.videos.count) videos")
        for video in result.videos { print("  " + Describe.line(video)) }
    }
}

struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "search", abstract: "Search an account's videos.")
    @OptionGroup var options: ServiceOptions
    @Argument(help: "Query, e.g. 'tags:fairplay' or '+name:bars -tags:long'.") var query: String = ""
    @Option var sort: String?
    @Option var limit: Int?
    @Option var offset: Int?

    func run() async throws {
        let result = try await options.service().search(query: query, sort: sort, limit: limit, offset: offset)
        print("\(result.count) videos match" + (result.videos.count < result.count ? ", showing \(result.videos.count)" : ""))
        for video in result.videos { print("  " + Describe.line(video)) }
    }
}

/// Text for people.
enum Describe {
    static func line(_ video: PlaybackVideo) -> String {
        let protection = video.usesFairPlay ? "FairPlay" : (video.sources.first?.src.contains("/aes128/") == true ? "AES-128" : "clear")
        return "\(video.id)  \(video.name)  [\(String(format: "%.0f", video.duration)) s, \(protection)\(video.canBeDownloaded ? ", downloadable" : "")]"
    }

    static func video(_ video: PlaybackVideo) -> String {
        var lines = [line(video)]
        if let ref = video.referenceID { lines.append("  reference id: \(ref)") }
        if let description = video.video.description { lines.append("  \(description)") }
        for source in video.sources {
            lines.append("  source: \(source.type) \(source.src)")
            if let fairPlay = source.fairPlay {
                lines.append("    license: \(fairPlay.keyRequestURL ?? "-")")
                lines.append("    certificate: \(fairPlay.certificateURL ?? "-")")
            }
            if let expiry = URLToken.expiry(ofURL: source.src) { lines.append("    URL expires \(WireDate.string(from: expiry))") }
        }
        if !video.textTracks.isEmpty { lines.append("  sideband subtitles: " + video.textTracks.map(\.srclang).joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }
}
