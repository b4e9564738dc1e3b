import ArgumentParser
import Foundation
import OfflineSDK
import WireModels

/// `offline`: the SDK from the command line. Find videos through the Playback API, download
/// them with the OfflineVideoManager, follow their progress, play them offline with the
/// license enforced, and watch licenses run out.
@main
struct OfflineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offline",
        abstract: "Find, download and play videos offline, against the mock backend or a real Playback API.",
        discussion: """
            Tokens may be shortened to any unique prefix, as `offline list` shows them. Every command \
            takes --json for one JSON document (JSON lines while downloading).
            Replaced spellings still work: `control pause|cancel|delete TOKEN` is `pause`, `cancel`, \
            `delete`; `--rental-hours H` and `--play-hours H` are `--rental Hh` and `--play-duration Hh`.
            \(ExitStatus.help)
            """,
        subcommands: [VideoCommand.self, PlaylistCommand.self, SearchCommand.self, EstimateCommand.self, DownloadCommand.self,
                      ListCommand.self, StatusCommand.self, LicenseCommand.self, PauseCommand.self, ResumeCommand.self,
                      CancelCommand.self, DeleteCommand.self, RetryCommand.self, RenewCommand.self, PlayCommand.self,
                      DemoCommand.self, ControlCommand.self])

    static func main() async {
        #if canImport(Glibc)
        // glibc's malloc, tuned for this process (`mallopt` is in malloc.h, which the Glibc
        // module leaves out, hence dlsym; the option numbers are malloc.h's):
        // - two arenas (M_ARENA_MAX, -8): the SDK's blocking work runs on dispatch's
        //   overcommitting threads, 30 to 40 in a long download, and each arena of its own keeps
        //   what was freed in it; two keep a 2-hour download's peak RSS within 10 % of a
        //   10-minute one's (the live heap peaks under 4 MB either way);
        // - segments (100 KB to 1 MB each, thousands in an export) come from the heap, not a fresh
        //   mmap each (M_MMAP_THRESHOLD, -3: 64 MiB), the heap grows in 64 MiB steps (M_TOP_PAD,
        //   -2) and freed memory is not handed back at every free (M_TRIM_THRESHOLD, -1: 256 MiB):
        //   page faults on fresh buffers were a sixth of the 960x540 export's CPU time. Pages are
        //   counted in RSS only once touched, so the peak RSS stays flat.
        typealias MallocOption = @convention(c) (Int32, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
            let mallopt = unsafeBitCast(symbol, to: MallocOption.self)
            _ = mallopt(-8, 2)
            _ = mallopt(-3, 64 << 20)
            _ = mallopt(-1, 256 << 20)
            _ = mallopt(-2, 64 << 20)
        }
        #endif
        await main(nil)
    }
}

/// `--json`.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print one JSON document (JSON lines while downloading) instead of text.") var json = false
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

    @Option(name: .customLong("ca-file"), help: ArgumentHelp(
        "PEM CA certificates to trust for HTTPS instead of the system's: the mock's local CA (`tls ca FILE` at its start). [OFFLINE_CA_FILE]",
        valueName: "file"))
    var caFile: String?

    /// --ca-file, else OFFLINE_CA_FILE.
    var trustedCAFile: URL? { caFile.map { URL(fileURLWithPath: $0) } ?? StorageOptions.environmentCAFile }

    /// Whether the service was described at all (by options or environment).
    var isGiven: Bool {
        baseURLOption != nil || ProcessInfo.processInfo.environment["OFFLINE_BASE_URL"] != nil
    }

    func service() throws -> PlaybackService {
        let environment = ProcessInfo.processInfo.environment
        guard let base = baseURLOption ?? environment["OFFLINE_BASE_URL"] else {
            throw CommandFailure(status: ExitStatus.refused, message: "No Playback API given.",
                                 hint: "Give --base-url (or OFFLINE_BASE_URL), e.g. http://127.0.0.1:8080, with --account and --policy-key.")
        }
        guard let account = account ?? environment["OFFLINE_ACCOUNT"] else {
            throw CommandFailure(status: ExitStatus.refused, message: "No account given.", hint: "Give --account (or OFFLINE_ACCOUNT).")
        }
        let key = policyKey ?? environment["OFFLINE_POLICY_KEY"]
        let token = jwt ?? environment["OFFLINE_JWT"]
        guard key != nil || token != nil else {
            throw CommandFailure(status: ExitStatus.refused, message: "No policy key or JWT given.",
                                 hint: "Give --policy-key (OFFLINE_POLICY_KEY) or --jwt (OFFLINE_JWT).")
        }
        if let trustedCAFile {
            return PlaybackService(baseURL: base, accountID: account, policyKey: key, authToken: token, trustedCAFile: trustedCAFile)
        }
        return PlaybackService(baseURL: base, accountID: account, policyKey: key, authToken: token)
    }

    /// A video by id, or `ref:REFERENCE_ID`.
    func video(_ id: String) async throws -> PlaybackVideo {
        let service = try service()
        return id.hasPrefix("ref:") ? try await service.findVideo(referenceID: String(id.dropFirst(4)))
                                    : try await service.findVideo(id: id)
    }
}

/// Where the SDK keeps its offline store and packages, and how it downloads.
struct StorageOptions: ParsableArguments {
    @Option(help: "Storage folder of the offline store. [OFFLINE_STORAGE, default ~/.local/share/OfflineSDK]")
    var storage: String?

    @Option(help: "Segments fetched in parallel per download.")
    var parallel: Int = 6

    @Flag(help: "Allow downloads over cellular (the SDK's default is no).")
    var allowCellular = false

    @Option(name: .customLong("reserve-mb"), help: "Refuse a download that would leave less free space than this (MiB).")
    var reserveMB: Int = 1024

    @Option(name: .customLong("source-format"),
            help: "Which HLS source to download when a video has both: first (as listed, the default), cmaf or ts. [OFFLINE_SOURCE_FORMAT]")
    var sourceFormat: SourceFormatArgument?

    @Option(name: .customLong("unplayable-codec"),
            help: "A codec this device cannot play, never downloaded (repeatable).")
    var unplayableCodecs: [CodecArgument] = []

    @Option(name: .customLong("clock-offset"),
            help: "Run the device clock this far ahead (e.g. 7h) to match a mock backend whose clock was moved. [OFFLINE_CLOCK_OFFSET]")
    var clockOffset: DurationArgument?

    func validate() throws {
        if sourceFormat == nil, let value = ProcessInfo.processInfo.environment["OFFLINE_SOURCE_FORMAT"], !value.isEmpty,
           SourceFormatArgument(argument: value) == nil {
            throw ValidationError("OFFLINE_SOURCE_FORMAT is '\(value)'; it must be one of first, cmaf, ts.")
        }
    }

    var folder: URL {
        if let folder = storage ?? ProcessInfo.processInfo.environment["OFFLINE_STORAGE"] { return URL(fileURLWithPath: folder) }
        return OfflineVideoManagerConfiguration.defaultStorageDirectory
    }

    var offset: TimeInterval {
        clockOffset?.seconds ?? ProcessInfo.processInfo.environment["OFFLINE_CLOCK_OFFSET"].flatMap(DurationArgument.parse) ?? 0
    }

    /// OFFLINE_CA_FILE: what HTTPS trusts when no --ca-file is given.
    static var environmentCAFile: URL? {
        ProcessInfo.processInfo.environment["OFFLINE_CA_FILE"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
    }

    /// The manager's configuration; its HTTPS trusts `trustedCAFile` (default OFFLINE_CA_FILE).
    func configuration(role: StorageRole = .owner, trustedCAFile: URL? = StorageOptions.environmentCAFile) -> OfflineVideoManagerConfiguration {
        var configuration = OfflineVideoManagerConfiguration(storageDirectory: folder)
        configuration.role = role
        configuration.trustedCAFile = trustedCAFile
        configuration.segmentsInParallel = max(1, parallel)
        configuration.minimumFreeSpace = Int64(max(0, reserveMB)) * 1_048_576
        configuration.options.allowsCellularDownload = allowCellular
        let format = sourceFormat ?? ProcessInfo.processInfo.environment["OFFLINE_SOURCE_FORMAT"].flatMap(SourceFormatArgument.init(argument:))
        configuration.sourcePreference = format?.preference ?? .firstListed
        configuration.unplayableCodecs = Set(unplayableCodecs.map(\.codec))
        let offset = self.offset
        configuration.clock = { Date().addingTimeInterval(offset) }
        return configuration
    }

    /// The manager: `owner` runs downloads (one per folder), `reader` only looks.
    func manager(role: StorageRole = .owner, trustedCAFile: URL? = StorageOptions.environmentCAFile) async throws -> OfflineVideoManager {
        try await OfflineVideoManager(configuration: configuration(role: role, trustedCAFile: trustedCAFile))
    }

    /// The owner, or, while another process owns the folder (an `offline download` running), a
    /// reader beside it: for commands a reader can do too, such as playing.
    func ownerOrReader() async throws -> OfflineVideoManager {
        do {
            return try await manager()
        } catch let error as OfflineVideoError where error.reason == .storageInUse {
            return try await manager(role: .reader)
        }
    }
}

/// `--source-format`: `first`, `cmaf` or `ts`.
enum SourceFormatArgument: String, ExpressibleByArgument, CaseIterable, Sendable {
    case first, cmaf, ts

    var preference: HLSSourcePreference {
        switch self {
        case .first: .firstListed
        case .cmaf: .prefer(.cmaf)
        case .ts: .prefer(.transportStream)
        }
    }
}

/// `--unplayable-codec`: a `MediaCodec` by its name.
struct CodecArgument: ExpressibleByArgument, Sendable {
    let codec: MediaCodec

    init?(argument: String) {
        guard let codec = MediaCodec(rawValue: argument.lowercased()) else { return nil }
        self.codec = codec
    }

    static var allValueStrings: [String] { MediaCodec.allCases.map(\.rawValue) }
}

extension StorageOptions {
    /// A reader of the storage folder, the token `prefix` names, and the device clock now.
    func lookUp(_ prefix: String) async throws -> (manager: OfflineVideoManager, token: OfflineVideoToken, now: Date) {
        let manager = try await manager(role: .reader)
        return (manager, try await resolveToken(prefix, in: manager), configuration().clock())
    }
}

/// Closes an owner's manager once the license reports it queued (releases, first plays) and its
/// analytics events have been sent, or could not be: the process ends next, and the servers
/// should not wait for the next `offline` command to learn of them.
func finish(_ manager: OfflineVideoManager) async {
    _ = await manager.sendPendingLicenseReports()
    _ = await manager.sendPendingAnalytics()
    await manager.close()
}

/// Finds the one offline video whose token starts with `prefix`.
func resolveToken(_ prefix: String, in manager: OfflineVideoManager) async throws -> OfflineVideoToken {
    let tokens = try await manager.offlineVideoTokens
    if tokens.contains(prefix) { return prefix }
    let matches = tokens.filter { $0.hasPrefix(prefix.lowercased()) }
    switch matches.count {
    case 1: return matches[0]
    case 0:
        throw CommandFailure(status: ExitStatus.refused, message: "No offline video has a token starting with \(prefix).",
                             hint: "`offline list` shows the tokens.")
    default:
        throw CommandFailure(status: ExitStatus.refused,
                             message: "\(prefix) is the start of \(matches.count) tokens (\(matches.map { String($0.prefix(12)) }.joined(separator: ", "))).",
                             hint: "Give more of the token.")
    }
}

/// The shortest prefix (at least 8 characters) of each token that no other token starts with.
func shortTokens(_ tokens: [OfflineVideoToken]) -> [OfflineVideoToken: String] {
    var result: [OfflineVideoToken: String] = [:]
    for token in tokens {
        var length = min(8, token.count)
        while length < token.count, tokens.contains(where: { $0 != token && $0.hasPrefix(token.prefix(length)) }) { length += 1 }
        result[token] = String(token.prefix(length))
    }
    return result
}
