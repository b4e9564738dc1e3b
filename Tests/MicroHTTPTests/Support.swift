import Foundation
import Logging
import MicroHTTP
import Synchronization

/// What a child process printed and how it ended.
struct ProcessOutput: Sendable {
    var exitCode: Int32
    var stdout: [UInt8]
    var stderr: [UInt8]
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// A child process started right away; wait for it either asynchronously (no thread held)
/// or blocking (for timing-sensitive tests that must not depend on the test pool's scheduling).
final class RunningProcess: Sendable {
    private let process: Process
    private let scratch: TemporaryDirectory
    private let exited = ExitState()

    private final class ExitState: Sendable {
        let state = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    }

    /// Spawns `executable` now; stdout and stderr go to temporary files so a chatty child never
    /// blocks on a full pipe.
    init(_ executable: String, _ arguments: [String]) throws {
        scratch = try TemporaryDirectory()
        _ = FileManager.default.createFile(atPath: scratch.url.appendingPathComponent("stdout").path, contents: nil)
        _ = FileManager.default.createFile(atPath: scratch.url.appendingPathComponent("stderr").path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: scratch.url.appendingPathComponent("stdout"))
        process.standardError = try FileHandle(forWritingTo: scratch.url.appendingPathComponent("stderr"))
        self.process = process
        let exited = self.exited
        process.terminationHandler = { _ in
            let waiters = exited.state.withLock { state in
                state.done = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        do {
            try process.run()
        } catch {
            scratch.remove()
            throw error
        }
    }

    /// Waits without holding a thread.
    func wait() async -> ProcessOutput {
        await withCheckedContinuation { continuation in
            let done = exited.state.withLock { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
        return collect()
    }

    /// Waits on this thread.
    func waitBlocking() -> ProcessOutput {
        process.waitUntilExit()
        return collect()
    }

    private func collect() -> ProcessOutput {
        defer { scratch.remove() }
        let read = { (name: String) in (try? Array(Data(contentsOf: self.scratch.url.appendingPathComponent(name)))) ?? [] }
        return ProcessOutput(exitCode: process.terminationStatus, stdout: read("stdout"), stderr: read("stderr"))
    }
}

/// Runs real programs (curl) without blocking a thread of the test's cooperative pool.
enum Run {
    static func process(_ executable: String, _ arguments: [String]) async throws -> ProcessOutput {
        try await RunningProcess(executable, arguments).wait()
    }
}

/// One answer as the real `curl` binary saw it.
struct CurlResponse: Sendable {
    /// curl's exit code (0 = transfer done; 7 = could not connect).
    var exitCode: Int32
    /// `%{http_code}`: 0 when there was no answer.
    var status: Int
    /// The headers of the last response (after any 100 Continue), in order.
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    var stderr: String
    /// `%{time_total}` in seconds.
    var seconds: Double

    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

enum Curl {
    /// Fetches `url` with the real curl: status via `-w`, headers via `-D`, body via `-o`.
    static func fetch(_ url: String, _ options: [String] = []) async throws -> CurlResponse {
        let pending = try start(url, options)
        return pending.finish(await pending.process.wait())
    }

    /// Starts curl for `url` now; collect the answer with `finish(_:)`.
    static func start(_ url: String, _ options: [String] = []) throws -> PendingCurl {
        let scratch = try TemporaryDirectory()
        let headerFile = scratch.url.appendingPathComponent("headers").path
        let bodyFile = scratch.url.appendingPathComponent("body").path
        let process = try RunningProcess("/usr/bin/curl", [
            "-sS", "--max-time", "30", "-D", headerFile, "-o", bodyFile, "-w", "%{http_code} %{time_total}",
        ] + options + [url])
        return PendingCurl(process: process, scratch: scratch)
    }

    /// A curl run in progress.
    struct PendingCurl: Sendable {
        let process: RunningProcess
        let scratch: TemporaryDirectory

        /// Waits on this thread and returns the answer.
        func finishBlocking() -> CurlResponse { finish(process.waitBlocking()) }

        func finish(_ output: ProcessOutput) -> CurlResponse {
            defer { scratch.remove() }
            let fields = output.stdoutText.split(separator: " ")
            let rawHeaders = (try? String(contentsOfFile: scratch.url.appendingPathComponent("headers").path, encoding: .utf8)) ?? ""
            return CurlResponse(
                exitCode: output.exitCode,
                status: fields.first.flatMap { Int($0) } ?? 0,
                headers: Curl.parseHeaders(rawHeaders),
                body: (try? Array(Data(contentsOf: scratch.url.appendingPathComponent("body")))) ?? [],
                stderr: output.stderrText,
                seconds: fields.count > 1 ? Double(fields[1]) ?? 0 : 0)
        }
    }

    /// Runs curl with exactly `arguments` (for `-v`, several URLs, `--next`).
    static func raw(_ arguments: [String]) async throws -> ProcessOutput {
        try await Run.process("/usr/bin/curl", ["--max-time", "30"] + arguments)
    }

    /// The fields of the last header block in a `-D` dump.
    static func parseHeaders(_ dump: String) -> [(name: String, value: String)] {
        var blocks: [[(name: String, value: String)]] = []
        for line in dump.components(separatedBy: "\r\n") {
            if line.hasPrefix("HTTP/") {
                blocks.append([])
            } else if let colon = line.firstIndex(of: ":"), !blocks.isEmpty {
                let name = String(line[..<colon])
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                blocks[blocks.count - 1].append((name: name, value: value))
            }
        }
        return blocks.last ?? []
    }
}

/// A fresh directory under the system's temporary directory.
struct TemporaryDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("microhttp-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// A logger that drops everything, so request logs do not flood the test output.
let quietLogger = Logger(label: "microhttp-tests") { _ in SwiftLogNoOpLogHandler() }

/// Random bytes for bodies and files.
func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
}

/// Starts an `HTTPServer` on 127.0.0.1, port 0, runs `body` with it and its base URL, and
/// always shuts it down.
func withServer(
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    errorResponder: @escaping HTTPServer.ErrorResponder = HTTPServer.plainErrorResponder,
    handler: @escaping HTTPServer.Handler,
    _ body: (HTTPServer, String) async throws -> Void
) async throws {
    var configuration = HTTPServerConfiguration()
    configuration.port = 0
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, logger: quietLogger, errorResponder: errorResponder, handler: handler)
    try server.start()
    defer { server.shutdown(gracePeriod: .seconds(5)) }
    try await body(server, "http://127.0.0.1:\(server.port)")
}

/// Waits on this thread (polling) until `condition` holds or `timeout` passes; returns whether it held.
func eventuallyBlocking(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// Waits (polling) until `condition` holds or `timeout` passes; returns whether it held.
func eventually(timeout: Duration = .seconds(3), _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
