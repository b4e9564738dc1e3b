package import Foundation
import Locking
import SystemFiles

/// Runs ffmpeg, ffprobe and curl for ingest jobs, on the worker's own thread (never on Swift's
/// cooperative pool), started and reaped by `ChildProcess`. Output goes to files, so a chatty
/// tool cannot fill a pipe and stall.
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
        // Spawned under the lock, so a stop() either sees the child or refuses it.
        let spawned: Result<pid_t, IngestFailure> = state.withLock { state in
            guard !state.stopped else { return .failure(.stopped) }
            do throws(ChildProcess.SpawnError) {
                let child = try ChildProcess.spawn(tool, arguments, standardOutput: outPath, standardError: errPath, searchingPath: true)
                state.running = child
                return .success(child)
            } catch {
                return .failure(IngestFailure("InternalError", "cannot start \(tool): \(error)"))
            }
        }
        let code = ChildProcess.waitForExit(try spawned.get())
        state.withLock { $0.running = nil }
        if isStopped { throw IngestFailure.stopped }
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
