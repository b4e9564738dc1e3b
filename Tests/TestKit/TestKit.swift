public import Foundation
import Locking
import SystemFiles
public import Logging
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

/// A child process started right away; wait for it either asynchronously (no thread of the
/// cooperative pool held) or blocking.
///
/// Spawned with `ChildProcess` (signals at their defaults, an empty signal mask) and reaped by
/// a thread of its own blocked in `waitpid` for that pid: Foundation's `Process` on Linux can
/// miss a child's exit when many are started at once (seen here with tmux, whose client exits
/// while the server it forked lives on), which left a test waiting forever.
public final class RunningProcess: Sendable {
    private let pid: pid_t
    private let scratch: TemporaryDirectory
    private let exited = ExitState()

    private final class ExitState: Sendable {
        let state = Locked<(status: Int32?, waiters: [CheckedContinuation<Void, Never>])>((nil, []))
        /// Signalled once the process is reaped (and again by each blocking waiter, for the next).
        let reaped = DispatchSemaphore(value: 0)
    }

    /// Spawns `executable` now; stdout and stderr go to temporary files so a chatty child never
    /// blocks on a full pipe.
    public init(_ executable: String, _ arguments: [String]) throws {
        scratch = try TemporaryDirectory()
        do throws(ChildProcess.SpawnError) {
            pid = try ChildProcess.spawn(executable, arguments, standardOutput: scratch.url.appendingPathComponent("stdout").path,
                                         standardError: scratch.url.appendingPathComponent("stderr").path, mode: 0o644)
        } catch {
            scratch.remove()
            throw POSIXError(POSIXErrorCode(rawValue: error.number) ?? .EINVAL)
        }
        let exited = self.exited, spawned = pid
        Thread.detachNewThread {
            let code = ChildProcess.waitForExit(spawned)
            let waiters = exited.state.withLock { state in
                state.status = code
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
            exited.reaped.signal()
        }
    }

    /// The process id.
    public var processIdentifier: pid_t { pid }

    /// What the process has written to its standard output so far.
    public var stdoutSoFar: String {
        String(decoding: (try? Data(contentsOf: scratch.url.appendingPathComponent("stdout"))) ?? Data(), as: UTF8.self)
    }

    /// Waits until the standard output so far satisfies `condition` (checked every 20 ms, up to
    /// `timeout`) or the process exits; true when it did before either. The ceiling is only for a
    /// child that hangs: ten minutes, since a whole suite on a loaded machine has seen a child's
    /// start (a TLS CA made, the catalog loaded) take two.
    public func waitForOutput(timeout: Duration = .seconds(600), _ condition: (String) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(stdoutSoFar) { return true }
            if exited.state.withLock({ $0.status != nil }) { return condition(stdoutSoFar) }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Sends `signal` (SIGKILL by default) to the process, unless it has already been reaped.
    public func kill(_ signal: Int32 = SIGKILL) {
        exited.state.withLock { state in
            if state.status == nil { _ = Glibc.kill(pid, signal) }
        }
    }

    /// Waits without holding a thread of the cooperative pool.
    public func wait() async -> ProcessOutput {
        await withCheckedContinuation { continuation in
            let done = exited.state.withLock { state in
                if state.status == nil { state.waiters.append(continuation) }
                return state.status != nil
            }
            if done { continuation.resume() }
        }
        return collect()
    }

    /// Waits on this thread.
    public func waitBlocking() -> ProcessOutput {
        exited.reaped.wait()
        exited.reaped.signal()
        return collect()
    }

    private func collect() -> ProcessOutput {
        let read = { (name: String) in (try? Array(Data(contentsOf: self.scratch.url.appendingPathComponent(name)))) ?? [] }
        return ProcessOutput(exitCode: exited.state.withLock { $0.status } ?? -1, stdout: read("stdout"), stderr: read("stderr"))
    }

    deinit { scratch.remove() }
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
    /// Seconds a curl run may take unless the test gives its own `--max-time` (a later one
    /// wins). A ceiling, never a wait: at the start of a full run the 2-thread test pool is
    /// so busy that a test may resume half a minute after its request went out (seen: a
    /// deferred answer released 30 s after curl started, and curl gave up first; beside CPU hogs
    /// and a syncing writer, held answers were released over 120 s after curl started).
    public static let defaultMaxTime = 600

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
            "-sS", "-g", "--max-time", "\(Curl.defaultMaxTime)", "-D", headerFile, "-o", bodyFile, "-w", "%{http_code} %{time_total}",
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
        try await Run.process("/usr/bin/curl", ["--max-time", "\(Curl.defaultMaxTime)"] + arguments)
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
    // Eight bytes a draw from a fast generator seeded once (SystemRandomNumberGenerator asks the
    // kernel on every call: megabytes of it held a test-pool thread for seconds).
    var system = SystemRandomNumberGenerator()
    var generator = SplitMix(state: system.next())
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var index = 0
        while index < count {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) where index < count {
                buffer[index] = UInt8(truncatingIfNeeded: word >> UInt64(shift))
                index += 1
            }
        }
        initialized = count
    }
}

/// SplitMix64: a fast generator; with a fixed seed, the same draws in every run (damaged
/// inputs a test makes the same way each time).
public struct SplitMix: RandomNumberGenerator {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Runs CPU-heavy test work on a thread of its own, so the cooperative pool (2 threads on a
/// 2-core machine) stays free for the servers and tasks of the tests running beside it.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

/// The instants from `start` to `end` moved by `offset`, a second of rounding either side: when
/// something the test set off between two readings of the clock happened (or what it decides,
/// `offset` later), however long a loaded machine took between them.
public func between(_ start: Date, _ end: Date, plus offset: TimeInterval = 0) -> ClosedRange<Date> {
    start.addingTimeInterval(offset - 1)...end.addingTimeInterval(offset + 1)
}

/// Work started on a thread of its own when made (not whenever the cooperative pool gets to a
/// task: a busy pool may run one seconds late), its result awaited later: a reader that must be
/// reading before the test goes on.
public final class ThreadWork<T: Sendable>: Sendable {
    private let result = Locked<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    public init(_ work: @escaping @Sendable () throws -> T) {
        Thread.detachNewThread { [result, done] in
            result.withLock { $0 = Result { try work() } }
            done.signal()
        }
    }

    public var value: T {
        get async throws {
            try await offPool { [result, done] in
                done.wait()
                done.signal()  // for the next to ask
                return try result.withLock { $0! }.get()
            }
        }
    }
}

/// A gate tasks wait on until the test opens it (a stand-in for something slow: a disk, a server).
public final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    /// Signalled once when the gate opens (and again by each blocking waiter, for the next).
    private let opened = DispatchSemaphore(value: 0)

    public init() {}

    /// Returns once the gate is open, blocking this thread (for work on a thread of its own).
    public func waitBlocking() {
        guard !state.withLock({ $0.open }) else { return }
        opened.wait()
        opened.signal()
    }

    /// Returns once the gate is open.
    public func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    /// Lets every waiter, and every later one, through.
    public func open() {
        let (waiters, first) = state.withLock { state in
            defer { state.open = true; state.waiters = [] }
            return (state.waiters, !state.open)
        }
        if first { opened.signal() }
        for waiter in waiters { waiter.resume() }
    }

    /// How many wait now.
    public var waiting: Int { state.withLock { $0.waiters.count } }
}

/// Polls `condition` every few milliseconds until it holds or `timeout` passes; returns whether it held.
/// For states no event announces (a counter on a server, a row in a store); the timeout is a ceiling, never a wait.
/// A condition that throws counts as not holding yet (a store another process is still creating);
/// the last error is thrown only if it still throws when the time is up.
public func eventually(timeout: Duration = .seconds(120), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if (try? await condition()) == true { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// The complete server-sent events of type `type` in `text` (a stream read so far): each ends
/// with a blank line, so one still arriving is left out.
public func completeServerSentEvents(_ text: String, type: String) -> [String] {
    text.components(separatedBy: "\n\n").dropLast().filter { $0.split(separator: "\n").contains("event: \(type)") }
}

/// A logger that drops everything, so servers under test do not flood the output.
public let quietLogger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

/// Runs tests one at a time across every suite and test target of the test process: for tests of
/// a process-wide singleton (the shared offline video manager), which Swift Testing would
/// otherwise run beside each other.
public actor ProcessWideLock {
    /// The lock of tests that initialize `OfflineVideoManager.shared`.
    public static let sharedOfflineVideoManager = ProcessWideLock()

    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init() {}

    /// Waits until the lock is free and takes it.
    public func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Hands the lock to the next waiter, or frees it.
    public func release() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }

    /// Runs `body` holding the lock.
    public nonisolated func run<T>(_ body: () async throws -> T) async throws -> T {
        await acquire()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }
}

/// A source for Dynamic Ingest, made with ffmpeg: a 640x360 test pattern at 25 fps with two
/// audio streams (eng 440 Hz, fra 660 Hz), H.264 + AAC in MP4.
public enum IngestSource {
    public static func make(_ file: URL, seconds: Int) async throws {
        let output = try await Run.process("/usr/bin/ffmpeg", [
            "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=\(seconds)",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
            "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=48000:duration=\(seconds)",
            "-map", "0:v", "-map", "1:a", "-map", "2:a", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra", file.path])
        guard output.exitCode == 0 else { throw IngestSourceError(message: "ffmpeg: \(output.stderrText)") }
    }

    /// The average PSNR (dB) of `video`'s picture (a file or URL ffmpeg reads) against `source`,
    /// frame by frame from each one's start; nil when ffmpeg fails or prints none.
    public static func psnr(_ video: String, against source: URL) async throws -> Double? {
        let output = try await Run.process("/usr/bin/ffmpeg", [
            "-nostdin", "-hide_banner", "-i", video, "-i", source.path,
            "-lavfi", "[0:v]setpts=PTS-STARTPTS[a];[1:v]setpts=PTS-STARTPTS[b];[a][b]psnr", "-f", "null", "-"])
        guard output.exitCode == 0 else { return nil }
        return output.stderrText.range(of: #"average:([0-9.]+)"#, options: .regularExpression)
            .flatMap { Double(output.stderrText[$0].dropFirst("average:".count)) }
    }
}

public struct IngestSourceError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
