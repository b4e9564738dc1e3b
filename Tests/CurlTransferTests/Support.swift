import Foundation
import Logging
import MicroHTTP
import Locking
import Testing
import TestKit
import CurlTransfer

/// A live MicroHTTP server on an ephemeral port, recording every request it answers.
///
/// A test that needs a request still in flight while it checks something holds it with a
/// `Gate`: the request is recorded and `arrived` told, then its answer waits (the connection
/// suspended, no thread held) until the test opens the gate or shuts the server down. Never a
/// latency that must outlast the test's own steps: on a loaded machine those steps can take
/// longer than any latency a test would choose.
final class TestServer: Sendable {
    let server: HTTPServer
    private let log = Locked<[HTTPRequest]>([])
    private let gate: Gate?

    /// Starts a server whose handler is `handler`; requests are recorded before it runs.
    /// The idle timeout is long by default: at the start of a full run a test may resume half a
    /// minute late, and a connection closed meanwhile is not what a test of reuse is about.
    init(holding gate: Gate? = nil, idleTimeoutSeconds: Int = 600, threads: Int = 2,
         arrived: (@Sendable (HTTPRequest) -> Void)? = nil, handler: @escaping HTTPServer.Handler) throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.idleTimeoutSeconds = idleTimeoutSeconds
        configuration.threadCount = threads
        var logger = Logger(label: "CurlTransferTests")
        logger.logLevel = .warning
        let log = self.log
        self.gate = gate
        if let gate {
            server = HTTPServer(configuration: configuration, logger: logger) { request in
                log.withLock { $0.append(request) }
                arrived?(request)
                await gate.wait()
                return handler(request)
            }
        } else {
            server = HTTPServer(configuration: configuration, logger: logger) { request in
                log.withLock { $0.append(request) }
                arrived?(request)
                return handler(request)
            }
        }
        try server.start()
    }

    var base: String { "http://127.0.0.1:\(server.port)" }

    func url(_ path: String) -> String { base + path }

    var requests: [HTTPRequest] { log.withLock { $0 } }

    /// Opens the gate (held requests are answered) and stops at once: a test that cancelled a
    /// request has no use for its answer.
    func shutdown() {
        gate?.open()
        server.shutdown(gracePeriod: .milliseconds(200))
    }
}

/// A folder under /tmp for one test, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = "/tmp/curltransfer-test-" + UUID().uuidString
        try #require(mkdir(path, 0o700) == 0)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
func testBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

func write(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func contents(of path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) }
}

func fileExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}

/// Signals from a server handler to the test that a request arrived.
final class Arrivals: Sendable {
    let stream: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: String.self)
    }

    func arrived(_ target: String) { continuation.yield(target) }

    /// Waits for the next arrival.
    func next() async -> String? {
        for await target in stream { return target }
        return nil
    }
}

/// The code of the `TransferError` a task ended with; nil when it succeeded or threw something else.
func transferErrorCode<T>(_ result: Result<T, any Error>) -> TransferError.Code? {
    guard case .failure(let error) = result else { return nil }
    return (error as? TransferError)?.code
}

func makeFolder(_ path: String) throws {
    try #require(mkdir(path, 0o755) == 0 || errno == EEXIST)
}

/// The error `job` fails with (a fresh engine unless one is given); nil, with an issue recorded,
/// when it succeeds.
func downloadFailure(_ job: FileDownload, engine: TransferEngine = TransferEngine(),
                     sourceLocation: SourceLocation = #_sourceLocation) async -> TransferError? {
    do {
        _ = try await engine.download(job)
        Issue.record("expected a failure", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}
