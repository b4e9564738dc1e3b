package import Foundation
import Locking
import SystemFiles

/// Runs ffmpeg, ffprobe and curl for ingest jobs, on the worker's own thread (never on Swift's
/// cooperative pool), with `posix_spawnp` and `waitpid` (Foundation's `Process` on Linux can
/// miss a child's exit). Output goes to files, so a chatty tool cannot fill a pipe and stall.
/// `stop()` ends the running tool and refuses the next one (shutdown).
package final class Subprocesses: Sendable {
    private struct State { var running: pid_t?; var stopped = false }
    private let state = Locked(State())
    let scratch: URL

    /// Output files go to `scratch` (made when first needed).
    package init(scratch: URL) { self.scratch = scratch }

    /// What a tool printed and how it ended.
    package struct Output {
        package var status: Int32
        package var stdout: Data
        package var stderr: String
        /// The last non-empty lines of stderr, for an error message.
        package var stderrTail: String {
            stderr.split(separator: "\n").suffix(3).joined(separator: " | ")
        }
    }

    /// Ends the tool running now and refuses any later one.
    func stop() {
        let running = state.withLock { state -> pid_t? in
            state.stopped = true
            return state.running
        }
        if let running { kill(running, SIGTERM) }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Runs `tool` (found on PATH) with `arguments` and waits for it.
    package func run(_ tool: String, _ arguments: [String]) throws(IngestFailure) -> Output {
        let id = UUID().uuidString
        try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let outPath = scratch.appendingPathComponent("\(id).out").path, errPath = scratch.appendingPathComponent("\(id).err").path
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Nothing else of the server's: a descriptor opened without close-on-exec (a file being
        // written, a socket) would otherwise live on in the tool, holding its space or its peer.
        SpawnDescriptors.closeAllButStandard(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        // Spawned under the lock, so a stop() either sees the child or refuses it.
        let spawned: Result<pid_t, IngestFailure> = state.withLock { state in
            guard !state.stopped else { return .failure(.stopped) }
            var child: pid_t = 0
            let result = posix_spawnp(&child, tool, &actions, &attributes, argv, environ)
            guard result == 0 else { return .failure(IngestFailure("InternalError", "cannot start \(tool): \(String(cString: strerror(result)))")) }
            state.running = child
            return .success(child)
        }
        let child = try spawned.get()
        var status: Int32 = 0
        var result = waitpid(child, &status, 0)
        while result < 0 && errno == EINTR { result = waitpid(child, &status, 0) }
        state.withLock { $0.running = nil }
        if isStopped { throw IngestFailure.stopped }
        // Exited: its code; killed by a signal: 128 + the signal, as a shell says.
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Output(status: code, stdout: FileManager.default.contents(atPath: outPath) ?? Data(),
                      stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
    }
}

/// Why a job failed: the job's `error_code` and `error_message`. `stopped` is the instance
/// shutting down (the job is left to be taken again, not failed).
package struct IngestFailure: Error, Sendable {
    package var code: String
    package var message: String
    init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }
    static let stopped = IngestFailure("Stopped", "the instance stopped")
    var isStop: Bool { code == "Stopped" }
}
