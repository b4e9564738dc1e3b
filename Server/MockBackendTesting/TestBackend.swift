public import Foundation
public import Logging
import MicroHTTP
@_exported import MockBackend

/// The mock backend in-process, for other packages' integration tests: on a free port, on a
/// temporary data directory, with the catalog, clock and fault rules the test chooses; gone
/// (files and all) when the test stops it. Works the same from Swift Testing and XCTest.
///
/// ```swift
/// import MockBackendTesting
///
/// @Test func downloadsThroughFlakySegments() async throws {
///     try await withTestBackend { backend in
///         try backend.faults.add(FaultRule(route: .segment, probability: 0.1, status: 503))
///         let service = PlaybackService(baseURL: backend.baseURL, accountID: TestBackend.Fixtures.account,
///                                       policyKey: TestBackend.Fixtures.playPolicyKey)
///         // … download, then look at what the backend saw:
///         #expect(backend.requests(pathPrefix: "/media/").contains { $0.status == 503 })
///     }
/// }
/// ```
public final class TestBackend: Sendable {
    /// How the backend starts.
    public struct Options: Sendable {
        /// The catalog file (media in `media/` beside it). Default: the repository's fixtures.
        public var catalogFile: URL = BackendConfiguration.defaultCatalogFile
        /// Where "now" is: the system clock, or an instant that stands still until the test
        /// moves it. Either way `clock.advance(by:)` moves it.
        public var clock: Clock = .system
        /// Fault rules in force from the start, and the seed of their random choices.
        public var faults: [FaultRule] = []
        public var faultSeed: UInt64 = 1
        /// The admin token (default: a fresh random one).
        public var adminToken: String?
        /// Where the backend's log goes: nowhere (default), or stderr from this level up.
        public var logLevel: Logger.Level?
        /// Any other setting (latency, token lifetimes, request-log size, …).
        public var configure: @Sendable (inout BackendConfiguration) -> Void = { _ in }

        public enum Clock: Sendable {
            case system
            case fixed(Date)
        }

        public init() {}
    }

    /// The account, keys and videos of the repository's fixture catalog.
    public enum Fixtures {
        public static let account = "6415818918001"
        public static let searchPolicyKey = "BCpkADawqM1northwindSEARCHkey0001"
        public static let playPolicyKey = "BCpkADawqM1northwindPLAYkey000002"
        /// Clear, 12 s, three renditions, audio en/fr/es, subtitles en/fr/de.
        public static let clearVideo = "6415818918101"
        /// FairPlay (SAMPLE-AES), to buy.
        public static let fairPlayVideo = "6415818918103"
        /// FairPlay, to rent.
        public static let rentalVideo = "6415818918104"
        /// A second account without FairPlay.
        public static let otherAccount = "5434391461001"
        public static let otherAccountPlayPolicyKey = "BCpkADawqM1contosoPLAYkey00000002"
    }

    /// The server (its app has the catalog, the license store and everything else).
    public let server: MockBackendServer
    /// The temporary data directory (removed by `stop()`).
    public let dataDirectory: URL

    private init(server: MockBackendServer, dataDirectory: URL) {
        self.server = server
        self.dataDirectory = dataDirectory
    }

    /// Starts a backend on 127.0.0.1, port 0, on a fresh temporary data directory.
    public static func start(_ options: Options = Options()) throws -> TestBackend {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-backend-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = BackendConfiguration(dataDirectory: directory, catalogFile: options.catalogFile)
        configuration.port = 0
        configuration.adminToken = options.adminToken ?? UUID().uuidString.lowercased()
        configuration.faultRules = options.faults
        configuration.faultSeed = options.faultSeed
        options.configure(&configuration)
        let clock: BackendClock = switch options.clock {
        case .system: BackendClock()
        case .fixed(let instant): BackendClock(fixedAt: instant)
        }
        var logger = Logger(label: "mock-backend") { label -> any LogHandler in
            options.logLevel == nil ? SwiftLogNoOpLogHandler() : StreamLogHandler.standardError(label: label)
        }
        logger.logLevel = options.logLevel ?? .critical
        do {
            return TestBackend(server: try MockBackendServer.start(configuration: configuration, clock: clock, logger: logger),
                               dataDirectory: directory)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Stops serving (requests in flight get a second) and removes the data directory.
    public func stop() async {
        await server.shutdown(gracePeriod: .seconds(1))
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { server.baseURL }
    /// The bound port.
    public var port: Int { server.port }
    /// The token the admin API asks for (`Authorization: Bearer …`).
    public var adminToken: String { server.app.adminToken }
    /// The backend's clock: `clock.advance(by: 3600)` and every token and license sees it.
    public var clock: BackendClock { server.app.clock }
    /// The fault rules in force: `try faults.add(FaultRule(…))`, `faults.rules`, `faults.removeAll()`.
    public var faults: FaultInjector { server.app.faults }

    /// The requests answered so far (the newest `requestLogSize`), oldest first.
    ///
    /// A request is logged once its answer has been sent in full, so a client can hold its
    /// answer a moment before the log shows it: to check a request the client just made, use
    /// ``requests(pathPrefix:status:atLeast:timeout:)``.
    public func requests(pathPrefix: String? = nil, status: Int? = nil) -> [RequestLog.Entry] {
        server.app.requestLog.entries(RequestLog.Filter(pathPrefix: pathPrefix, status: status))
    }

    /// The matching requests once at least `count` of them are in the log, or what the log holds
    /// when `timeout` (a ceiling, never a wait) passes first.
    public func requests(pathPrefix: String? = nil, status: Int? = nil, atLeast count: Int,
                         timeout: Duration = .seconds(120)) async -> [RequestLog.Entry] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let seen = requests(pathPrefix: pathPrefix, status: status)
            if seen.count >= count || ContinuousClock.now >= deadline { return seen }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// An admin API answer: its status and JSON body.
    public struct AdminResponse: Sendable {
        public var status: Int
        public var body: [UInt8]
        /// The body parsed as JSON (an object, an array, …), nil when empty or not JSON.
        public var json: Any? { body.isEmpty ? nil : try? JSONSerialization.jsonObject(with: Data(body)) }
    }

    /// Calls the admin API in-process (no socket), e.g.
    /// `try backend.admin("PUT", "/accounts/\(Fixtures.account)/videos/my-video", ["name": "Mine"])`.
    /// `path` is below `/_admin/v1`. Throws when the answer is not a 2xx, with its error array.
    @discardableResult
    public func admin(_ method: String, _ path: String, _ json: Any? = nil) throws -> AdminResponse {
        let body = try json.map { Array(try JSONSerialization.data(withJSONObject: $0)) } ?? []
        let request = try HTTPRequest(method: method, target: "/_admin/v1" + path,
                                      headers: HTTPHeaders([("Authorization", "Bearer \(adminToken)"), ("Content-Type", "application/json")]),
                                      body: body)
        let response = server.app.handleNow(request)
        let bytes: [UInt8] = switch response.body {
        case .bytes(let bytes): bytes
        default: []
        }
        guard (200...299).contains(response.status) else {
            throw AdminError(status: response.status, message: String(decoding: bytes, as: UTF8.self))
        }
        return AdminResponse(status: response.status, body: bytes)
    }

    /// An admin call the backend refused.
    public struct AdminError: Error, Sendable, CustomStringConvertible {
        public var status: Int
        /// The error array as sent.
        public var message: String
        public var description: String { "admin API answered \(status): \(message)" }
    }
}

/// Runs `body` with a backend started with `options`, and stops it (removing its files)
/// afterwards, whether `body` returns or throws.
public func withTestBackend<T>(_ options: TestBackend.Options = TestBackend.Options(),
                               _ body: (TestBackend) async throws -> T) async throws -> T {
    let backend = try TestBackend.start(options)
    do {
        let result = try await body(backend)
        await backend.stop()
        return result
    } catch {
        await backend.stop()
        throw error
    }
}
