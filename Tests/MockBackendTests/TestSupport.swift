import Foundation
import GRDB
import Logging
import MicroHTTP
import MockBackend
import Testing
import TestKit
import WireModels

// MARK: - Catalog constants (fixtures/catalog.json)

enum Fixture {
    static let northwind = "6415818918001"
    static let northwindSearchKey = "BCpkADawqM1northwindSEARCHkey0001"
    static let northwindPlayKey = "BCpkADawqM1northwindPLAYkey000002"
    static let contoso = "5434391461001"
    static let contosoSearchKey = "BCpkADawqM1contosoSEARCHkey000001"
    static let contosoPlayKey = "BCpkADawqM1contosoPLAYkey00000002"

    /// Clear, 12 s, three audio and subtitle languages in the manifest, sideband text tracks.
    static let clearVideo = "6415818918101"
    /// AES-128 (HLSe), 12 s.
    static let aesVideo = "6415818918102"
    /// FairPlay, to buy.
    static let fairPlayVideo = "6415818918103"
    /// Clear, not offline-enabled.
    static let streamOnlyVideo = "6415818918105"
    /// Clear, two hours (the 12 s asset 600 times).
    static let marathonVideo = "6415818918106"
    /// Clear, one audio language, no subtitles.
    static let englishOnlyVideo = "6415818918109"
    static let contosoClearVideo = "5434391461101"
    static let contosoAESVideo = "5434391461102"

    static let featuredPlaylist = "1749000000001"
    static let contosoPlaylist = "1749000000003"

    /// Every Northwind video id, catalog order.
    static let northwindVideos = (1...9).map { "641581891810\($0)" }

    /// `fixtures/media/bars`.
    static var mediaDirectory: URL {
        BackendConfiguration.defaultCatalogFile.deletingLastPathComponent().appendingPathComponent("media/bars")
    }

    /// The bytes of a fixture file under `fixtures/media/bars`.
    static func media(_ relativePath: String) throws -> [UInt8] {
        Array(try Data(contentsOf: mediaDirectory.appendingPathComponent(relativePath)))
    }
}

// MARK: - Temporary directories and apps

/// Runs `body` with a fresh temporary directory, removed afterwards.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    return try await body(directory.url)
}


/// The base URL route tests give the app (nothing listens there).
let testBaseURL = "http://backend.test:8080"

/// An app on `dataDirectory` with the repository's catalog.
func makeApp(dataDirectory: URL, _ configure: (inout BackendConfiguration) -> Void = { _ in }) throws -> MockBackendApp {
    var configuration = BackendConfiguration(dataDirectory: dataDirectory)
    configure(&configuration)
    return try MockBackendApp(configuration: configuration, baseURL: testBaseURL, logger: quietLogger)
}

/// Runs `body` with an app on its own temporary data directory (removed afterwards).
func withApp<T>(_ body: (MockBackendApp, URL) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        let app = try makeApp(dataDirectory: directory)
        return try await body(app, directory)
    }
}

// MARK: - Requests without a socket

extension MockBackendApp {
    /// Answers `method target` with `headers`, as the server would hand it over.
    /// Answers a request; admin paths carry the admin token unless `headers` name an Authorization.
    func request(_ method: String = "GET", _ target: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> HTTPResponse {
        var all = headers
        if target.hasPrefix("/_admin"), !headers.contains(where: { $0.0.lowercased() == "authorization" }) {
            all.append(("Authorization", "Bearer \(adminToken)"))
        }
        return handleNow(try HTTPRequest(method: method, target: target, headers: HTTPHeaders(all), body: body))
    }

    /// The request target (path and query) of an absolute URL this app handed out.
    func target(of url: String) throws -> String {
        try #require(url.hasPrefix(baseURL), "\(url) does not start with \(baseURL)")
        return String(url.dropFirst(baseURL.count))
    }

    /// GETs an absolute URL this app handed out.
    func get(url: String, headers: [(String, String)] = []) throws -> HTTPResponse {
        try request("GET", try target(of: url), headers: headers)
    }

    /// A Playback API GET with the policy key in `BCOV-Policy`.
    func playback(_ path: String, key: String? = Fixture.northwindSearchKey, headers: [(String, String)] = []) throws -> HTTPResponse {
        var all = headers
        if let key { all.append(("BCOV-Policy", key)) }
        return try request("GET", "/playback/v1" + path, headers: all)
    }

    /// A video from the Playback API, decoded.
    func video(_ id: String, account: String = Fixture.northwind, key: String = Fixture.northwindSearchKey) throws -> Video {
        let response = try playback("/accounts/\(account)/videos/\(id)", key: key)
        try #require(response.status == 200, "video \(id): \(response.status) \(response.debugText)")
        return try WireJSON.decoder().decode(Video.self, from: Data(try response.bytes()))
    }

    /// The master playlist URL of a video.
    func masterURL(_ id: String, account: String = Fixture.northwind, key: String = Fixture.northwindSearchKey) throws -> String {
        try #require(try video(id, account: account, key: key).sources.first?.src)
    }

    /// The parsed master playlist of a video.
    func master(_ id: String, account: String = Fixture.northwind, key: String = Fixture.northwindSearchKey) throws -> MasterPlaylist {
        let response = try get(url: try masterURL(id, account: account, key: key))
        try #require(response.status == 200, "master of \(id): \(response.status) \(response.debugText)")
        return try MasterPlaylist(parsing: try response.text())
    }

    /// A parsed media playlist fetched from an absolute URL.
    func mediaPlaylist(url: String) throws -> MediaPlaylist {
        let response = try get(url: url)
        try #require(response.status == 200, "media playlist: \(response.status) \(response.debugText)")
        return try MediaPlaylist(parsing: try response.text())
    }

    /// The URL of the variant with `width`, from a master playlist.
    func variantURL(_ id: String, width: Int) throws -> String {
        try #require(try master(id).variants.first { $0.resolution?.width == width }?.uri)
    }
}

extension HTTPResponse {
    /// The body bytes, reading the file region of a `.file` body.
    func bytes() throws -> [UInt8] {
        switch body {
        case .empty: return []
        case .bytes(let bytes): return bytes
        case .file(let path, _, _):
            return try #require(body.contents, "cannot read \(path)")
        case .stream(let stream):
            // Waits are skipped; an abort ends the bytes where it happened.
            var bytes: [UInt8] = []
            while true {
                switch stream.next(max: 64 * 1024) {
                case .bytes(let piece): bytes += piece
                case .waitFor: continue
                case .end, .abort, .waitForSignal: return bytes
                }
            }
        case .ranged(let ranged):
            var whole = self
            whole.body = ranged.whole
            return try whole.bytes()
        }
    }

    /// The body as UTF-8 text.
    func text() throws -> String { String(decoding: try bytes(), as: UTF8.self) }

    /// The body as text for failure messages; never throws.
    var debugText: String { (try? text()) ?? "<unreadable body>" }

    /// The body decoded as the Playback API's error array.
    func apiErrors() throws -> [APIError] {
        try WireJSON.decoder().decode([APIError].self, from: Data(try bytes()))
    }

    /// The body decoded as `T` with the wire decoder.
    func decoded<T: Decodable>(_ type: T.Type) throws -> T {
        try WireJSON.decoder().decode(type, from: Data(try bytes()))
    }
}

/// Checks that `response` is an error array with one element of `code`/`subcode` and status `status`.
func expectError(_ response: HTTPResponse, _ status: Int, _ code: String, _ subcode: String?,
                 sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(response.status == status, sourceLocation: sourceLocation)
    #expect(response.headers["Content-Type"]?.hasPrefix("application/json") == true, sourceLocation: sourceLocation)
    let errors = try response.apiErrors()
    #expect(errors.count == 1, sourceLocation: sourceLocation)
    #expect(errors.first?.errorCode == code, sourceLocation: sourceLocation)
    #expect(errors.first?.errorSubcode == subcode, sourceLocation: sourceLocation)
    #expect(errors.first?.message?.isEmpty == false, sourceLocation: sourceLocation)
}

// MARK: - Signing URLs like the backend (its secret lives in its database)

/// The URL-signing secret the backend stored in `dataDirectory/backend.sqlite`.
func urlSigningSecret(dataDirectory: URL) throws -> [UInt8] {
    var configuration = Configuration()
    configuration.readonly = true
    let queue = try DatabaseQueue(path: dataDirectory.appendingPathComponent("backend.sqlite").path, configuration: configuration)
    let secret = try queue.read { db in
        try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: ["url_token_secret"])
    }
    return Array(try #require(secret, "no url_token_secret in the database"))
}

/// `path?fastly_token=…` signed with `secret`, valid for an hour from `now`.
func signedTarget(_ path: String, secret: [UInt8], now: Date) -> String {
    path + "?fastly_token=" + URLToken.percentEncode(URLToken.make(path: path, expiresAt: now.addingTimeInterval(3600), secret: secret))
}

/// The path of an absolute URL, split into its segments.
func pathSegments(ofURL url: String) -> [String] {
    URLToken.path(ofURL: url).split(separator: "/").map(String.init)
}

// MARK: - Child processes: curl, ffprobe, ffmpeg, openssl

extension CurlResponse {
    /// The body as the Playback API's error array.
    func apiErrors() throws -> [APIError] {
        try WireJSON.decoder().decode([APIError].self, from: Data(body))
    }
}

// MARK: - A live server

/// Starts a `MockBackendServer` on port 0 with its own temporary data directory, runs `body`,
/// then shuts it down and removes the directory.
func withLiveServer(
    _ configure: (inout BackendConfiguration) -> Void = { _ in },
    _ body: (MockBackendServer) async throws -> Void
) async throws {
    try await withTemporaryDirectory { directory in
        try await withLiveServer(directory: directory, configure, body)
    }
}

/// The same on `directory`, which stays (a restart on the same data), with `clock`.
func withLiveServer(
    directory: URL, clock: BackendClock = BackendClock(),
    _ configure: (inout BackendConfiguration) -> Void = { _ in },
    _ body: (MockBackendServer) async throws -> Void
) async throws {
    var configuration = BackendConfiguration(dataDirectory: directory)
    configuration.port = 0
    configure(&configuration)
    let server = try MockBackendServer.start(configuration: configuration, clock: clock, logger: quietLogger)
    do {
        try await body(server)
    } catch {
        await server.shutdown(gracePeriod: .seconds(5))
        throw error
    }
    await server.shutdown(gracePeriod: .seconds(5))
}

extension MockBackendServer {
    /// A video fetched over HTTP with curl, decoded.
    func fetchVideo(_ id: String, account: String = Fixture.northwind, key: String = Fixture.northwindSearchKey) async throws -> Video {
        let response = try await Curl.fetch("\(baseURL)/playback/v1/accounts/\(account)/videos/\(id)", ["-H", "BCOV-Policy: \(key)"])
        try #require(response.status == 200, "video \(id): \(response.status) \(response.text)")
        return try WireJSON.decoder().decode(Video.self, from: Data(response.body))
    }

    /// `GET /_admin/v1/health` answers 200.
    func isHealthy() async throws -> Bool {
        try await Curl.fetch("\(baseURL)/_admin/v1/health", ["-H", "Authorization: Bearer \(app.adminToken)"]).status == 200
    }
}
