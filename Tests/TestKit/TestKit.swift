import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// Helpers every live test shares: real child processes (curl, ffprobe, ffmpeg, openssl),
// the real curl's view of an answer, temporary directories, random bytes.

/// What a child process printed and how it ended.
public struct ProcessOutput: Sendable {
    public var exitCode: Int32
    public var stdout: [UInt8]
    public var stderr: [UInt8]
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// A child process started right away; wait for it either asynchronously (no thread held)
/// or blocking (for timing-sensitive tests that must not depend on the test pool's scheduling).
public final class RunningProcess: Sendable {
    private let process: Process
    private let scratch: TemporaryDirectory
    private let exited = ExitState()

    private final class ExitState: Sendable {
        let state = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    }

    /// Spawns `executable` now; stdout and stderr go to temporary files so a chatty child never
    /// blocks on a full pipe.
    public init(_ executable: String, _ arguments: [String]) throws {
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

    /// What the process has written to its standard output so far.
    public var stdoutSoFar: String {
        String(decoding: (try? Data(contentsOf: scratch.url.appendingPathComponent("stdout"))) ?? Data(), as: UTF8.self)
    }

    /// Waits until the standard output so far satisfies `condition` (checked every 20 ms, up to
    /// `timeout`) or the process exits; true when it did before either.
    public func waitForOutput(timeout: Duration = .seconds(120), _ condition: (String) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(stdoutSoFar) { return true }
            if exited.state.withLock({ $0.done }) { return condition(stdoutSoFar) }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Sends `signal` (SIGKILL by default) to the process.
    public func kill(_ signal: Int32 = SIGKILL) {
        _ = Glibc.kill(process.processIdentifier, signal)
    }

    /// Waits without holding a thread.
    public func wait() async -> ProcessOutput {
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
    public func waitBlocking() -> ProcessOutput {
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
public enum Run {
    public static func process(_ executable: String, _ arguments: [String]) async throws -> ProcessOutput {
        try await RunningProcess(executable, arguments).wait()
    }
}

/// One answer as the real `curl` binary saw it.
public struct CurlResponse: Sendable {
    /// curl's exit code (0 = transfer done; 7 = could not connect).
    public var exitCode: Int32
    /// `%{http_code}`: 0 when there was no answer.
    public var status: Int
    /// The headers of the last response (after any 100 Continue), in order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var stderr: String
    /// `%{time_total}` in seconds.
    public var seconds: Double

    public var text: String { String(decoding: body, as: UTF8.self) }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

public enum Curl {
    /// Fetches `url` with the real curl: status via `-w`, headers via `-D`, body via `-o`.
    public static func fetch(_ url: String, _ options: [String] = []) async throws -> CurlResponse {
        let pending = try start(url, options)
        return pending.finish(await pending.process.wait())
    }

    /// Starts curl for `url` now; collect the answer with `finish(_:)`.
    public static func start(_ url: String, _ options: [String] = []) throws -> PendingCurl {
        let scratch = try TemporaryDirectory()
        let headerFile = scratch.url.appendingPathComponent("headers").path
        let bodyFile = scratch.url.appendingPathComponent("body").path
        let process = try RunningProcess("/usr/bin/curl", [
            "-sS", "-g", "--max-time", "30", "-D", headerFile, "-o", bodyFile, "-w", "%{http_code} %{time_total}",
        ] + options + [url])
        return PendingCurl(process: process, scratch: scratch)
    }

    /// A curl run in progress.
    public struct PendingCurl: Sendable {
        public let process: RunningProcess
        let scratch: TemporaryDirectory

        /// Waits on this thread and returns the answer.
        public func finishBlocking() -> CurlResponse { finish(process.waitBlocking()) }

        public func finish(_ output: ProcessOutput) -> CurlResponse {
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
    public static func raw(_ arguments: [String]) async throws -> ProcessOutput {
        try await Run.process("/usr/bin/curl", ["--max-time", "30"] + arguments)
    }

    /// The fields of the last header block in a `-D` dump.
    public static func parseHeaders(_ dump: String) -> [(name: String, value: String)] {
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
public struct TemporaryDirectory: Sendable {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("offline-video-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Random bytes for bodies and files.
public func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
}

