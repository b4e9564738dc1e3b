public import Foundation

/// Everything the backend needs to know at start-up. Flags and environment variables of
/// `mock-backend` fill it in; tests build one directly.
public struct BackendConfiguration: Sendable {
    /// The address to bind.
    public var host = "127.0.0.1"
    /// The port to bind; 0 picks a free one.
    public var port = 8080
    /// The scheme, host and port clients use to reach the server, e.g. "https://videos.example.com":
    /// every answer's links start with it, over plain HTTP and HTTPS alike (`PublicBaseURL`).
    /// Nil means each listener's own "http://{host}:{bound port}" (or https://), without a default port.
    public var publicBaseURL: String?
    /// Where the SQLite database (unless `databaseURL` names PostgreSQL) and the
    /// encrypted-segment cache live.
    public var dataDirectory: URL
    /// A PostgreSQL URL (`postgres://user:password@host:5432/database`, any libpq connection
    /// string) to keep the state in, shared with every other instance pointed at it; nil keeps
    /// it in SQLite in `dataDirectory`, for this process alone.
    public var databaseURL: String?
    /// The catalog file; media assets are looked up in `media/` beside it.
    public var catalogFile: URL
    /// Threads in the HTTP server's pool.
    public var threadCount = 2
    /// Manifest-URL token lifetime for accounts that do not set their own (seconds, at least 60).
    public var defaultManifestTokenTTL: TimeInterval = 6 * 3600
    /// Media-URL (segments, keys) token lifetime in seconds.
    public var mediaTokenTTL: TimeInterval = 6 * 3600
    /// Milliseconds added to every response.
    public var addedLatencyMilliseconds = 0
    /// Media files (fixtures, encrypted-segment cache) mapped into memory and sent from there,
    /// in bytes; 0 sends every file with sendfile.
    public var mappedFileBytesLimit = 512 * 1024 * 1024
    /// The token every `/_admin` request must carry (`Authorization: Bearer …` or
    /// `X-Admin-Token: …`), at least `minimumAdminTokenLength` characters. Nil: one made on
    /// first start and kept in the data directory.
    public var adminToken: String?
    /// Requests the admin API's request log keeps (the newest).
    public var requestLogSize = 1000
    /// Fault rules in force from the start (more come and go through the admin API).
    public var faultRules: [FaultRule] = []
    /// The seed of every random choice faults make: the same seed, the same faults.
    public var faultSeed: UInt64 = 1
    /// Forget the admin API's catalog edits, and every license and device, before starting
    /// (`mock-backend --reset`): the catalog file's catalog again.
    public var resetAtStart = false
    /// HTTPS (`mock-backend --tls`); nil serves plain HTTP only.
    public var tls: TLSSettings?
    /// The largest request body accepted.
    public var maxBodySize = 64 * 1024
    /// TEST ONLY, never for real use: FairPlay media playlists name a plain HTTP key URL
    /// (identity key format) instead of `skd://`, and `/license/v1/sample-aes-test-key/…`
    /// hands out the raw content key, so tools without FairPlay (ffmpeg) can decode the
    /// SAMPLE-AES media. It gives the key to anyone holding a media URL. Default off; the
    /// key endpoint answers 404 while it is off.
    public var plainSampleAESKeysForTesting = false
    /// Where Dynamic Ingest writes the media of ingested videos (`--media-dir`); nil:
    /// `media/` in `dataDirectory`. Instances sharing a PostgreSQL database share this folder.
    public var mediaDirectory: URL?
    /// The folders `file://` ingest sources may be read from (`--ingest-allow-dir`, repeatable);
    /// none by default, so a shared mock cannot be made to read arbitrary files.
    public var ingestAllowedDirectories: [URL] = []
    /// Ingest jobs this instance runs at once (`--ingest-workers`); 0 runs none (the instance
    /// only serves what others ingest).
    public var ingestWorkers = 1
    /// Jobs queued or running, across instances sharing the store, beyond which Dynamic Ingest
    /// answers 429 (reference §3.6: 200 running plus 10,000 queued).
    public var ingestQueueLimit = 10_200

    /// The media folder in use: `mediaDirectory`, else `media/` in the data directory.
    public var effectiveMediaDirectory: URL { mediaDirectory ?? dataDirectory.appendingPathComponent("media") }

    /// Creates a configuration with the given data directory and catalog and defaults elsewhere.
    public init(dataDirectory: URL = BackendConfiguration.defaultDataDirectory,
                catalogFile: URL = BackendConfiguration.defaultCatalogFile) {
        self.dataDirectory = dataDirectory
        self.catalogFile = catalogFile
    }

    /// The fewest characters an admin token may have: a shorter one (an empty `--admin-token
    /// "$UNSET"`, a word) is guessed, and it opens everything the admin API does.
    public static let minimumAdminTokenLength = 16

    /// Why `token` cannot be an admin token (`option` names where it came from), or nil when
    /// it can. The one check of the flag, the environment and `MockBackendApp`.
    public static func adminTokenProblem(_ token: String, option: String = "the admin token") -> String? {
        if token.isEmpty {
            return "\(option) is empty: give one of at least \(minimumAdminTokenLength) characters, or leave it out to use the one made on first start"
        }
        if token.count < minimumAdminTokenLength {
            return "\(option) has \(token.count) characters: it must have at least \(minimumAdminTokenLength) (e.g. openssl rand -hex 16)"
        }
        if token.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) {
            return "\(option) must not contain spaces or control characters: HTTP headers cannot carry them intact"
        }
        return nil
    }

    /// `$XDG_DATA_HOME/mock-backend`, else `~/.local/share/mock-backend`.
    public static var defaultDataDirectory: URL {
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("mock-backend")
        }
        return FileManager.default.homeDirectoryForCurrentUser
            .appendingPathComponent(".local/share/mock-backend")
    }

    /// The catalog shipped in the repository's `fixtures/` folder (found from this source
    /// file's location, so it works from any working directory of a source checkout).
    public static var defaultCatalogFile: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("fixtures/catalog.json")
    }
}

/// How the backend serves HTTPS.
public struct TLSSettings: Sendable {
    /// Nil: HTTPS on `BackendConfiguration.port` in place of HTTP. A port (0 picks a free
    /// one): HTTPS there, beside plain HTTP on `BackendConfiguration.port`.
    public var port: Int?
    /// A PEM certificate (then any intermediates) and its PEM key. Nil: a certificate from
    /// the local CA kept in the data directory's `tls/` folder, made on first start.
    public var certificateFile: URL?
    public var privateKeyFile: URL?
    /// Names the local CA's certificate covers besides localhost, 127.0.0.1, ::1, the host
    /// name and the bound address.
    public var extraNames: [String] = []
    public init(port: Int? = nil) {
        self.port = port
    }
}

/// A configuration the backend refuses to start with (an admin token too short), with the
/// sentence saying what to change.
public struct BackendConfigurationError: Error, Sendable, CustomStringConvertible {
    /// What to change, for a person.
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
