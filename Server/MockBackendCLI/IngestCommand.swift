import ArgumentParser
import Foundation
import Logging
import MicroHTTP
import MockBackend

/// `mock-backend ingest FILE --account A`: puts a local video into a running mock through the
/// same APIs a back-office integration calls (OAuth token, CMS create, Dynamic Ingest, the
/// job's status), printing the new video id and a progress line until the job ends.
struct IngestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Ingest a local video file into a running mock-backend (CMS create + Dynamic Ingest) and follow the job.",
        discussion: """
            Serves FILE (and every --subtitles file) over HTTP on 127.0.0.1 while the job runs, so the mock needs no \
            --ingest-allow-dir; the mock must reach this machine's loopback (the same host). Credentials: --client-id and \
            --client-secret, else a client credential made through the admin API with --server-admin-token (or \
            MOCK_BACKEND_ADMIN_TOKEN, or the token the mock keeps in its data directory, --server-data-dir). Prints "video ID" at once, then one \
            progress line; exits 0 when the job finished, 1 when it failed.
            """)

    @Argument(help: "The video file (anything ffmpeg reads).")
    var file: String

    @Option(help: "The account to ingest into.")
    var account: String

    @Option(help: "The video's name (default: the file's name).")
    var name: String?

    @Option(help: "clear, aes128 or fairplay (default: the account's: fairplay on FairPlay accounts, else clear).")
    var protection: String?

    @Option(help: ArgumentHelp("A WebVTT text track, LANG=FILE.vtt (repeatable).", valueName: "lang=file"))
    var subtitles: [String] = []

    @Option(help: "The ingest profile (default: the account's, multi-platform-standard-static unless changed).")
    var profile: String?

    @Option(name: .customLong("base-url"), help: "The running mock. [MOCK_BACKEND_BASE_URL]")
    var baseURL: String = ProcessInfo.processInfo.environment["MOCK_BACKEND_BASE_URL"] ?? "http://127.0.0.1:8080"

    @Option(name: .customLong("client-id"), help: "An OAuth client id of the account.")
    var clientID: String?

    @Option(name: .customLong("client-secret"), help: "Its secret.")
    var clientSecret: String?

    @Option(name: .customLong("server-admin-token"), help: "The running mock's admin token, to make a client credential. [MOCK_BACKEND_ADMIN_TOKEN]")
    var adminToken: String?

    @Option(name: .customLong("server-data-dir"), help: "The running mock's --data-dir, to read its admin token from. [MOCK_BACKEND_DATA_DIR]")
    var dataDirectory: String?

    func validate() throws {
        guard FileManager.default.isReadableFile(atPath: file) else { throw ValidationError("cannot read \(file)") }
        if let protection, !["clear", "aes128", "fairplay"].contains(protection) {
            throw ValidationError("--protection must be clear, aes128 or fairplay")
        }
        for entry in subtitles {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty else { throw ValidationError("--subtitles \(entry): write LANG=FILE.vtt") }
            guard FileManager.default.isReadableFile(atPath: String(parts[1])) else { throw ValidationError("--subtitles: cannot read \(parts[1])") }
        }
        guard (clientID == nil) == (clientSecret == nil) else { throw ValidationError("--client-id and --client-secret go together") }
    }

    func run() throws {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let api = API(base: base)
        let (id, secret) = try credentials(api)
        var token = try api.token(id: id, secret: secret)

        // The files, served on loopback under random paths while the job runs.
        var files: [String: String] = [:]
        let secretPath = UUID().uuidString.lowercased()
        let sourcePath = "/\(secretPath)/source\(URL(fileURLWithPath: file).pathExtension.isEmpty ? "" : ".\(URL(fileURLWithPath: file).pathExtension)")"
        files[sourcePath] = file
        var tracks: [[String: Any]] = []
        for (index, entry) in subtitles.enumerated() {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            let path = "/\(secretPath)/track\(index).vtt"
            files[path] = parts[1]
            tracks.append(["url": path, "srclang": parts[0], "kind": "captions", "label": parts[0], "default": index == 0])
        }
        let server = try FileServer(files: files)
        defer { server.stop() }

        let created = try api.json("POST", "/v1/accounts/\(account)/videos", token: token,
                                   body: ["name": name ?? URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent], expect: 201)
        guard let videoID = created["id"] as? String else { throw CLIError("the CMS API answered no video id") }
        print("video \(videoID)")
        fflush(nil)
        if let protection {
            _ = try api.json("PATCH", "/_admin/v1/accounts/\(account)/videos/\(videoID)", token: try adminTokenValue(),
                             body: ["protection": protection], expect: 200)
        }
        var request: [String: Any] = ["master": ["url": server.base + sourcePath]]
        if let profile { request["profile"] = profile }
        if !tracks.isEmpty { request["text_tracks"] = tracks.map { track in track.merging(["url": server.base + (track["url"] as! String)]) { $1 } } }
        let job = try api.json("POST", "/v1/accounts/\(account)/videos/\(videoID)/ingest-requests", token: token, body: request, expect: 200)
        guard let jobID = job["id"] as? String else { throw CLIError("Dynamic Ingest answered no job id") }

        let started = Date()
        let spinner = ["|", "/", "-", "\\"]
        var tick = 0
        while true {
            var status: [String: Any]
            do {
                status = try api.json("GET", "/v1/accounts/\(account)/videos/\(videoID)/ingest_jobs/\(jobID)", token: token, body: nil, expect: 200)
            } catch let error as CLIError where error.status == 401 {
                token = try api.token(id: id, secret: secret)  // tokens last 5 minutes
                continue
            }
            let state = status["state"] as? String ?? "?"
            let elapsed = Int(Date().timeIntervalSince(started))
            let line = state == "processing" && status["started_at"] is NSNull ? "queued" : state
            FileHandle.standardError.write(Data("\r\(spinner[tick % 4]) job \(jobID): \(line) \(elapsed / 60):\(String(format: "%02d", elapsed % 60))   ".utf8))
            tick += 1
            switch state {
            case "finished":
                FileHandle.standardError.write(Data("\n".utf8))
                let video = try api.json("GET", "/v1/accounts/\(account)/videos/\(videoID)", token: token, body: nil, expect: 200)
                let duration = (video["duration"] as? Int).map { String(format: "%.1f s", Double($0) / 1000) } ?? "?"
                print("finished video \(videoID) (\(duration))")
                return
            case "failed":
                FileHandle.standardError.write(Data("\n".utf8))
                print("failed video \(videoID): \(status["error_code"] as? String ?? ""): \(status["error_message"] as? String ?? "")")
                throw ExitCode.failure
            default:
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    /// --client-id/--client-secret, else a new client credential made through the admin API.
    private func credentials(_ api: API) throws -> (String, String) {
        if let clientID, let clientSecret { return (clientID, clientSecret) }
        let made = try api.json("POST", "/_admin/v1/accounts/\(account)/client_credentials", token: try adminTokenValue(),
                                body: ["name": "mock-backend ingest"], expect: 201)
        guard let id = made["client_id"] as? String, let secret = made["client_secret"] as? String else {
            throw CLIError("the admin API made no client credential")
        }
        return (id, secret)
    }

    private func adminTokenValue() throws -> String {
        if let given = adminToken ?? ProcessInfo.processInfo.environment["MOCK_BACKEND_ADMIN_TOKEN"] { return given }
        let directory = (dataDirectory ?? ProcessInfo.processInfo.environment["MOCK_BACKEND_DATA_DIR"]).map { URL(fileURLWithPath: $0) }
            ?? BackendConfiguration.defaultDataDirectory
        guard let token = BackendConfiguration.storedAdminToken(dataDirectory: directory) else {
            throw CLIError("no admin token: give --server-admin-token (mock-backend prints it at start), --client-id/--client-secret, or --server-data-dir, the mock's --data-dir (\(directory.path) has none)")
        }
        return token
    }
}

/// A refusal to show, with the HTTP status when an API said it.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    var status: Int?
    init(_ description: String, status: Int? = nil) {
        self.description = description
        self.status = status
    }
}

/// The mock's APIs over curl (a child process: this command is a short-lived client).
struct API {
    var base: String
    let tools = Subprocesses(scratch: FileManager.default.temporaryDirectory.appendingPathComponent("mock-backend-ingest-\(getpid())"))

    func token(id: String, secret: String) throws -> String {
        let output = try call(["-X", "POST", "-u", "\(id):\(secret)", "-d", "grant_type=client_credentials", "\(base)/v4/access_token"])
        guard output.status == 200, let token = output.json["access_token"] as? String else {
            throw CLIError("no access token from \(base)/v4/access_token (\(output.status)): \(output.text)", status: output.status)
        }
        return token
    }

    func json(_ method: String, _ path: String, token: String, body: [String: Any]?, expect: Int) throws -> [String: Any] {
        var arguments = ["-X", method, "-H", "Authorization: Bearer \(token)"]
        if let body {
            let data = try JSONSerialization.data(withJSONObject: body)
            arguments += ["-H", "Content-Type: application/json", "--data-binary", String(decoding: data, as: UTF8.self)]
        }
        let output = try call(arguments + ["\(base)\(path)"])
        guard output.status == expect else { throw CLIError("\(method) \(path): \(output.status) \(output.text)", status: output.status) }
        return output.json
    }

    struct Answer {
        var status: Int
        var text: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:] }
    }

    /// Runs curl; the body, then the status on a last line of its own.
    private func call(_ arguments: [String]) throws -> Answer {
        let output: Subprocesses.Output
        do { output = try tools.run("curl", ["--silent", "--show-error", "--max-time", "60", "--write-out", "\n%{http_code}"] + arguments) } catch {
            throw CLIError("cannot run curl: \(error.message)")
        }
        guard output.status == 0 else { throw CLIError("cannot reach \(base): \(output.stderrTail)") }
        var lines = String(decoding: output.stdout, as: UTF8.self).components(separatedBy: "\n")
        let status = Int(lines.removeLast()) ?? 0
        return Answer(status: status, text: lines.joined(separator: "\n"))
    }
}

/// Serves a few local files by path on 127.0.0.1 (a free port) while the job fetches them.
final class FileServer: Sendable {
    let server: HTTPServer
    init(files: [String: String]) throws {
        var configuration = HTTPServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        server = HTTPServer(configuration: configuration, logger: Logger(label: "ingest-files") { _ in SwiftLogNoOpLogHandler() }) { request in
            guard let path = files[request.path], let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? UInt64 else {
                return HTTPResponse(status: 404)
            }
            return HTTPResponse(status: 200, body: .file(path: path, offset: 0, length: size))
        }
        try server.start()
    }
    var base: String { "http://127.0.0.1:\(server.port)" }
    func stop() { server.shutdown(gracePeriod: .seconds(1)) }
}
