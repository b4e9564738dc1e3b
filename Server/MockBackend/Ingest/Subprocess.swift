import Foundation
import Locking

/// Runs ffmpeg, ffprobe and curl for ingest jobs, on the worker's own thread (never on Swift's
/// cooperative pool). Output goes to files, so a chatty tool cannot fill a pipe and stall.
/// `stop()` ends the running tool and refuses the next one (shutdown).
final class Subprocesses: Sendable {
    private struct State { var running: Process?; var stopped = false }
    private let state = Locked(State())
    let scratch: URL

    /// Output files go to `scratch` (made when first needed).
    init(scratch: URL) { self.scratch = scratch }

    /// What a tool printed and how it ended.
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: String
        /// The last non-empty lines of stderr, for an error message.
        var stderrTail: String {
            stderr.split(separator: "\n").suffix(3).joined(separator: " | ")
        }
    }

    /// Ends the tool running now and refuses any later one.
    func stop() {
        let running = state.withLock { state -> Process? in
            state.stopped = true
            return state.running
        }
        if let running, running.isRunning { running.terminate() }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Runs `tool` (found on PATH) with `arguments` and waits for it.
    func run(_ tool: String, _ arguments: [String]) throws(IngestFailure) -> Output {
        let id = UUID().uuidString
        try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let outURL = scratch.appendingPathComponent("\(id).out"), errURL = scratch.appendingPathComponent("\(id).err")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        guard let out = FileHandle(forWritingAtPath: outURL.path), let err = FileHandle(forWritingAtPath: errURL.path) else {
            throw IngestFailure("InternalError", "cannot write to \(scratch.path)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        let started: Bool = state.withLock { state in
            guard !state.stopped else { return false }
            state.running = process
            return (try? process.run()) != nil
        }
        try? out.close()
        try? err.close()
        guard started else {
            state.withLock { $0.running = nil }
            if isStopped { throw IngestFailure.stopped }
            throw IngestFailure("InternalError", "cannot start \(tool)")
        }
        process.waitUntilExit()
        state.withLock { $0.running = nil }
        if isStopped { throw IngestFailure.stopped }
        return Output(status: process.terminationStatus, stdout: (try? Data(contentsOf: outURL)) ?? Data(),
                      stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }
}

/// Why a job failed: the job's `error_code` and `error_message`. `stopped` is the instance
/// shutting down (the job is left to be taken again, not failed).
struct IngestFailure: Error, Sendable {
    var code: String
    var message: String
    init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }
    static let stopped = IngestFailure("Stopped", "the instance stopped")
    var isStop: Bool { code == "Stopped" }
}
