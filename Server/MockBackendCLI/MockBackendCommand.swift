import ArgumentParser
import Dispatch
import Foundation
import Logging
import MockBackend

/// `mock-backend`: the mock video cloud, on libmicrohttpd. Every option also reads an
/// environment variable, so containers and scripts can configure it without flags.
@main
struct MockBackendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-backend",
        abstract: "A mock video cloud: Playback API, HLS packaging, keys and licenses, on your machine.",
        discussion: """
            Prints "listening on http://HOST:PORT" (https:// with --tls) on stdout once it accepts requests, then \
            "admin token TOKEN" (what /_admin requests send as Authorization: Bearer TOKEN); with --tls-port also \
            "https on https://HOST:PORT", and with the local CA "tls ca FILE" (the file to trust). Logs go to stderr.
            HTTPS: --tls serves HTTPS instead of HTTP on --port; --tls-port N serves HTTPS on N beside HTTP. Without \
            --tls-cert/--tls-key a local CA is made on first start in DATA-DIR/tls/ and a certificate it signs for \
            localhost, 127.0.0.1, ::1, this host's name, the bound address and every --tls-name; both are kept and reused.
            Stop it with Ctrl-C or SIGTERM: requests in flight are finished first.
            Every option can also be set by the environment variable in brackets; a flag wins over the variable.
            `mock-backend ingest FILE --account A` puts a video file into a running mock (see `mock-backend ingest --help`).
            """,
        subcommands: [IngestCommand.self])

    @Option(help: "Address to bind. [MOCK_BACKEND_HOST]")
    var host: String = env("MOCK_BACKEND_HOST") ?? "127.0.0.1"

    @Option(help: "Port to bind; 0 picks a free one. [MOCK_BACKEND_PORT]")
    var port: Int = env("MOCK_BACKEND_PORT").flatMap(Int.init) ?? 8080

    @Option(name: .customLong("public-base-url"),
            help: "Scheme, host and port every answer's URLs start with, over HTTP and HTTPS alike, if not the listener's own (e.g. behind a proxy). [MOCK_BACKEND_PUBLIC_BASE_URL]")
    var publicBaseURLOption: String?

    @Option(name: .customLong("data-dir"),
            help: "Folder for the SQLite database and the encrypted-segment cache; created if missing. [MOCK_BACKEND_DATA_DIR] (default: $XDG_DATA_HOME/mock-backend or ~/.local/share/mock-backend)")
    var dataDirectoryOption: String?

    @Option(name: .customLong("database"), help: ArgumentHelp(
        "PostgreSQL to keep the state in, shared by every instance pointed at it (postgres://user:password@host:5432/db); without it, SQLite in --data-dir. [MOCK_BACKEND_DATABASE_URL]",
        valueName: "url"))
    var databaseOption: String?

    @Option(name: .customLong("catalog"), help: "Catalog file (accounts, policy keys, videos, playlists); media is read from media/ beside it. [MOCK_BACKEND_CATALOG] (default: the repository's fixtures/catalog.json)")
    var catalogOption: String?

    @Option(help: "Threads in the HTTP server's pool. [MOCK_BACKEND_THREADS]")
    var threads: Int = env("MOCK_BACKEND_THREADS").flatMap(Int.init) ?? 2

    @Option(name: .customLong("token-ttl"),
            help: "Seconds manifest URLs stay valid, for accounts that set none (60-21600). [MOCK_BACKEND_TOKEN_TTL]")
    var tokenTTL: Int = env("MOCK_BACKEND_TOKEN_TTL").flatMap(Int.init) ?? 21600

    @Option(name: .customLong("media-token-ttl"),
            help: "Seconds segment and key URLs stay valid (60-21600). [MOCK_BACKEND_MEDIA_TOKEN_TTL]")
    var mediaTokenTTL: Int = env("MOCK_BACKEND_MEDIA_TOKEN_TTL").flatMap(Int.init) ?? 21600

    @Option(name: .customLong("latency-ms"),
            help: "Milliseconds added to every response, without holding a server thread. [MOCK_BACKEND_LATENCY_MS]")
    var latencyMilliseconds: Int = env("MOCK_BACKEND_LATENCY_MS").flatMap(Int.init) ?? 0

    @Option(name: .customLong("log-level"),
            help: "trace, debug, info (one line per request), notice, warning, error or critical. [MOCK_BACKEND_LOG_LEVEL]")
    var logLevel: String = env("MOCK_BACKEND_LOG_LEVEL") ?? "info"

    @Option(name: .customLong("log-format"), help: "text or json (one JSON object per line). [MOCK_BACKEND_LOG_FORMAT]")
    var logFormat: String = env("MOCK_BACKEND_LOG_FORMAT") ?? "text"

    var publicBaseURL: String? { publicBaseURLOption ?? env("MOCK_BACKEND_PUBLIC_BASE_URL") }
    @Option(name: .customLong("admin-token"),
            help: "The token the admin API (/_admin) asks for, at least \(BackendConfiguration.minimumAdminTokenLength) characters. [MOCK_BACKEND_ADMIN_TOKEN] (default: made on first start and kept in the data directory)")
    var adminTokenOption: String?

    @Option(name: .customLong("fault"), help: ArgumentHelp(
        "A fault rule as JSON, e.g. '{\"route\":\"segment\",\"probability\":0.1,\"status\":503}' (repeatable; see docs/running-the-mock.md: Faults).",
        valueName: "json"))
    var faults: [String] = []

    @Option(name: .customLong("faults-file"), help: "A JSON file with an array of fault rules, in force from the start. [MOCK_BACKEND_FAULTS_FILE]")
    var faultsFileOption: String?

    @Option(name: .customLong("fault-seed"), help: "Seed of every random choice faults make: the same seed, the same faults. [MOCK_BACKEND_FAULT_SEED]")
    var faultSeedOption: UInt64?

    @Option(name: .customLong("request-log-size"), help: "Requests the admin API's request log keeps. [MOCK_BACKEND_REQUEST_LOG_SIZE]")
    var requestLogSizeOption: Int?

    @Flag(name: .customLong("reset"), help: "Forget the catalog edits made through the admin API and every license and device before starting.")
    var reset = false

    @Flag(name: .customLong("tls"), help: "Serve HTTPS (on --port, or on --tls-port beside HTTP). [MOCK_BACKEND_TLS=1]")
    var tlsFlag = false

    @Option(name: .customLong("tls-port"), help: "Serve HTTPS on this port as well as HTTP on --port; 0 picks a free one. Implies --tls. [MOCK_BACKEND_TLS_PORT]")
    var tlsPortOption: Int?

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate (then intermediates) to serve instead of the local CA's. [MOCK_BACKEND_TLS_CERT]", valueName: "file"))
    var tlsCertificateOption: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key of --tls-cert. [MOCK_BACKEND_TLS_KEY]", valueName: "file"))
    var tlsKeyOption: String?

    @Option(name: .customLong("tls-name"), help: ArgumentHelp("Another host name or address the local CA's certificate covers (repeatable).", valueName: "name"))
    var tlsNames: [String] = []

    /// The HTTPS settings of --tls and its companions; nil without HTTPS.
    func tlsSettings() -> TLSSettings? {
        let port = tlsPortOption ?? env("MOCK_BACKEND_TLS_PORT").flatMap(Int.init)
        let certificate = tlsCertificateOption ?? env("MOCK_BACKEND_TLS_CERT")
        let key = tlsKeyOption ?? env("MOCK_BACKEND_TLS_KEY")
        guard tlsFlag || env("MOCK_BACKEND_TLS") == "1" || port != nil || certificate != nil || key != nil || !tlsNames.isEmpty else { return nil }
        var settings = TLSSettings(port: port)
        settings.certificateFile = certificate.map { URL(fileURLWithPath: $0) }
        settings.privateKeyFile = key.map { URL(fileURLWithPath: $0) }
        settings.extraNames = tlsNames
        return settings
    }

    @Option(name: .customLong("client-credentials"), help: ArgumentHelp(
        "Make an OAuth client credential for this account at start and print \"client credentials ACCOUNT CLIENT_ID CLIENT_SECRET\" (the secret is shown this once; repeatable).",
        valueName: "account"))
    var clientCredentialAccounts: [String] = []

    @Option(name: .customLong("media-dir"), help: ArgumentHelp(
        "Folder for the media of ingested videos (Dynamic Ingest); instances sharing a --database share it (a shared volume). [MOCK_BACKEND_MEDIA_DIR] (default: DATA-DIR/media)",
        valueName: "dir"))
    var mediaDirectoryOption: String?

    @Option(name: .customLong("ingest-allow-dir"), help: ArgumentHelp(
        "A folder whose files Dynamic Ingest may read as file:// sources, images and text tracks (repeatable; none by default: file:// is refused).",
        valueName: "dir"))
    var ingestAllowedDirectories: [String] = []

    @Option(name: .customLong("ingest-workers"), help: "Ingest jobs this instance runs (0 or 1; 0: it only serves what other instances ingest). [MOCK_BACKEND_INGEST_WORKERS]")
    var ingestWorkers: Int = env("MOCK_BACKEND_INGEST_WORKERS").flatMap(Int.init) ?? 1

    @Option(name: .customLong("ingest-queue-limit"), help: "Ingest jobs queued or running (all instances) beyond which Dynamic Ingest answers 429. [MOCK_BACKEND_INGEST_QUEUE_LIMIT]")
    var ingestQueueLimit: Int = env("MOCK_BACKEND_INGEST_QUEUE_LIMIT").flatMap(Int.init) ?? 10_200

    @Option(name: .customLong("ready-file"), help: ArgumentHelp(
        "Once listening, write {\"base_url\", \"port\", \"admin_token\", \"pid\"} (and with HTTPS \"https_base_url\", \"https_port\", \"ca_file\") as JSON to this file (atomically: it exists only when complete).",
        valueName: "path"))
    var readyFile: String?

    /// The flag's or the variable's token. A variable set but empty counts (and is refused):
    /// `MOCK_BACKEND_ADMIN_TOKEN="$UNSET"` is a mistake, not a wish for the made one.
    var adminToken: String? { adminTokenOption ?? ProcessInfo.processInfo.environment["MOCK_BACKEND_ADMIN_TOKEN"] }

    /// The fault rules of --fault and --faults-file.
    func faultRules() throws -> [FaultRule] {
        var rules: [FaultRule] = []
        for text in faults {
            do { rules.append(try JSONDecoder().decode(FaultRule.self, from: Data(text.utf8))) } catch {
                throw ValidationError("--fault '\(text)' is not a fault rule: \(error)")
            }
        }
        if let file = faultsFileOption ?? env("MOCK_BACKEND_FAULTS_FILE") {
            do { rules += try JSONDecoder().decode([FaultRule].self, from: Data(contentsOf: URL(fileURLWithPath: file))) } catch {
                throw ValidationError("--faults-file \(file): not an array of fault rules: \(error)")
            }
        }
        if let problem = rules.lazy.compactMap(\.problem).first { throw ValidationError("fault rule: \(problem)") }
        return rules
    }
    var dataDirectory: String? { dataDirectoryOption ?? env("MOCK_BACKEND_DATA_DIR") }
    var catalog: String? { catalogOption ?? env("MOCK_BACKEND_CATALOG") }
    var database: String? { databaseOption ?? env("MOCK_BACKEND_DATABASE_URL") }

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535") }
        if let adminToken, let problem = BackendConfiguration.adminTokenProblem(
            adminToken, option: adminTokenOption != nil ? "--admin-token" : "MOCK_BACKEND_ADMIN_TOKEN") {
            throw ValidationError(problem)
        }
        if let tlsPort = tlsPortOption {
            guard (0...65535).contains(tlsPort) else { throw ValidationError("--tls-port must be 0-65535") }
            guard tlsPort == 0 || tlsPort != port else { throw ValidationError("--tls-port must differ from --port") }
        }
        guard (tlsCertificateOption == nil) == (tlsKeyOption == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together (or leave both out for the local CA's certificate)")
        }
        if (tlsCertificateOption != nil) && !tlsNames.isEmpty { throw ValidationError("--tls-name is for the local CA's certificate; not with --tls-cert") }
        guard (0...1).contains(ingestWorkers) else { throw ValidationError("--ingest-workers must be 0 or 1") }
        guard ingestQueueLimit >= 1 else { throw ValidationError("--ingest-queue-limit must be at least 1") }
        for directory in ingestAllowedDirectories {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--ingest-allow-dir \(directory): no such folder")
            }
        }
        guard (1...64).contains(threads) else { throw ValidationError("--threads must be 1-64") }
        guard (60...21600).contains(tokenTTL) else { throw ValidationError("--token-ttl must be 60-21600 seconds") }
        guard (60...21600).contains(mediaTokenTTL) else { throw ValidationError("--media-token-ttl must be 60-21600 seconds") }
        guard latencyMilliseconds >= 0 else { throw ValidationError("--latency-ms must not be negative") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level: unknown level '\(logLevel)'") }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format must be text or json") }
        if let database, !(database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") || database.contains("=")) {
            throw ValidationError("--database must be a PostgreSQL URL (postgres://user:password@host:5432/database) or a libpq key=value string")
        }
        if let publicBaseURL, !(publicBaseURL.hasPrefix("http://") || publicBaseURL.hasPrefix("https://")) {
            throw ValidationError("--public-base-url must start with http:// or https://")
        }
    }

    func run() throws {
        defer { LogLineWriter.standardError.flush() }  // an exit with an error still shows what was logged
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = json ? JSONLogHandler(label: label) : TextLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "mock-backend")

        var configuration = BackendConfiguration()
        if let dataDirectory { configuration.dataDirectory = URL(fileURLWithPath: dataDirectory) }
        if let catalog { configuration.catalogFile = URL(fileURLWithPath: catalog) }
        configuration.databaseURL = database
        configuration.host = host
        configuration.port = port
        configuration.publicBaseURL = publicBaseURL
        configuration.threadCount = threads
        configuration.defaultManifestTokenTTL = TimeInterval(tokenTTL)
        configuration.mediaTokenTTL = TimeInterval(mediaTokenTTL)
        configuration.addedLatencyMilliseconds = latencyMilliseconds
        configuration.adminToken = adminToken
        configuration.faultRules = try faultRules()
        configuration.resetAtStart = reset
        configuration.tls = tlsSettings()
        if let media = mediaDirectoryOption ?? env("MOCK_BACKEND_MEDIA_DIR") { configuration.mediaDirectory = URL(fileURLWithPath: media) }
        configuration.ingestAllowedDirectories = ingestAllowedDirectories.map { URL(fileURLWithPath: $0) }
        configuration.ingestWorkers = ingestWorkers
        configuration.ingestQueueLimit = ingestQueueLimit
        if let seed = faultSeedOption ?? env("MOCK_BACKEND_FAULT_SEED").flatMap(UInt64.init) { configuration.faultSeed = seed }
        if let size = requestLogSizeOption ?? env("MOCK_BACKEND_REQUEST_LOG_SIZE").flatMap(Int.init) {
            guard size >= 1 else { throw ValidationError("--request-log-size must be at least 1") }
            configuration.requestLogSize = size
        }
        if adminToken == nil, !["127.0.0.1", "::1", "localhost"].contains(host) {
            logger.warning("the admin API is reachable from other machines with the generated token; choose one with --admin-token",
                           metadata: ["host": "\(host)"])
        }

        let server: MockBackendServer
        do {
            server = try MockBackendServer.start(configuration: configuration, logger: logger)
        } catch {
            LogLineWriter.standardError.append(Array("mock-backend: \(error)\n".utf8))
            throw ExitCode.failure
        }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let primaryScheme = configuration.tls != nil && configuration.tls?.port == nil ? "https" : "http"
        print("listening on \(primaryScheme)://\(shownHost):\(server.port)")
        print("admin token \(server.app.adminToken)")
        if configuration.tls?.port != nil, let securePort = server.securePort { print("https on https://\(shownHost):\(securePort)") }
        if let caFile = server.caFile { print("tls ca \(caFile.path)") }
        for account in clientCredentialAccounts {
            do {
                let (id, secret) = try server.app.makeClientCredentials(accountID: account, name: "mock-backend --client-credentials")
                print("client credentials \(account) \(id) \(secret)")
            } catch {
                FileHandle.standardError.write(Data("mock-backend: cannot make client credentials for account \(account): \(error)\n".utf8))
                server.shutdown(gracePeriod: .zero)
                throw ExitCode.failure
            }
        }
        fflush(nil)
        if let readyFile {
            do {
                try Self.writeReadyFile(readyFile, server: server)
            } catch {
                LogLineWriter.standardError.append(Array("mock-backend: cannot write --ready-file \(readyFile): \(error)\n".utf8))
                server.shutdown(gracePeriod: .zero)
                throw ExitCode.failure
            }
        }
        logger.notice("serving", metadata: [
            "base_url": "\(server.baseURL)", "data_dir": "\(configuration.dataDirectory.path)",
            "catalog": "\(configuration.catalogFile.path)", "videos": "\(server.app.catalog.videos.count)",
        ])
        Signals.stopOnTermination(server: server, logger: logger)
        dispatchMain()
    }

    /// Writes the ready file beside itself, then renames it into place.
    static func writeReadyFile(_ path: String, server: MockBackendServer) throws {
        struct Ready: Encodable {
            var baseURL: String
            var port: Int
            var adminToken: String
            var pid: Int32
            var httpsBaseURL: String?
            var httpsPort: Int?
            var caFile: String?
            enum CodingKeys: String, CodingKey {
                case port, pid
                case baseURL = "base_url", adminToken = "admin_token", httpsBaseURL = "https_base_url", httpsPort = "https_port", caFile = "ca_file"
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(Ready(baseURL: server.baseURL, port: server.port, adminToken: server.app.adminToken, pid: getpid(),
                                                httpsBaseURL: server.secureBaseURL,
                                                httpsPort: server.securePort, caFile: server.caFile?.path))
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        try (data + Data("\n".utf8)).write(to: temporary)
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: reason])
        }
    }
}

private func env(_ name: String) -> String? {
    guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
    return value
}
