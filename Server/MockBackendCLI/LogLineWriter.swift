import Foundation

/// Where every log line of the command goes: appended to a buffer by the thread that logs (a
/// request's line is formatted once and copied in under a short lock), written to the file
/// descriptor in batches by one writer thread of its own. A request never waits on stderr: a
/// reader that is slow, or gone, stalls only the writer, and past `limit` bytes waiting, lines
/// are dropped and counted (a line saying how many follows once stderr drains). The writer lets
/// lines gather for `gatherInterval` after the first of a batch arrives: one wake-up and one write
/// per batch, where waking it for every line cost the server a fifth of its requests per second
/// (a context switch per request on two cores).
final class LogLineWriter: @unchecked Sendable {
    /// The command's standard error.
    static let standardError = LogLineWriter(descriptor: STDERR_FILENO)

    /// The most bytes waiting before lines are dropped (8 MiB: some 50,000 request lines).
    let limit: Int
    /// How long a batch gathers before it is written (a line reaches stderr this much later at most).
    static let gatherInterval: TimeInterval = 0.01
    /// Bytes after which a gathering batch is written at once.
    static let batchBytes = 64 << 10
    private let descriptor: Int32
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var pending: [UInt8] = []
    private var dropped = 0
    private var writing = false
    private var started = false
    private var idle = false  // the writer waits for a batch's first line
    private var gathering = false  // the writer waits for the rest of a batch
    private var bytesWritten = 0

    init(descriptor: Int32, limit: Int = 8 << 20) {
        self.descriptor = descriptor
        self.limit = limit
    }

    /// Queues one line (its bytes, newline included) for the writer; drops it when `limit`
    /// bytes are waiting already.
    func append(_ line: some Collection<UInt8>) {
        condition.lock()
        defer { condition.unlock() }
        if !started {
            started = true
            let thread = Thread { [self] in run() }
            thread.name = "log-writer"
            thread.start()
        }
        guard pending.count + line.count <= limit else {
            dropped += 1
            return
        }
        pending.append(contentsOf: line)
        if idle || (gathering && pending.count >= Self.batchBytes) {
            idle = false
            gathering = false
            condition.broadcast()
        }
    }

    /// Returns once every line queued so far is written (at exit), or once stderr has taken
    /// nothing for `limit` seconds (a reader that stopped reading must not keep the process
    /// from exiting; one that reads slowly gets every line).
    func flush(stalledFor limit: TimeInterval = 5) {
        condition.lock()
        defer { condition.unlock() }
        var seen = bytesWritten
        var deadline = Date(timeIntervalSinceNow: limit)
        while started && (!pending.isEmpty || writing || dropped > 0) {
            if !condition.wait(until: deadline), bytesWritten == seen { return }  // nothing taken for `limit`
            if bytesWritten != seen {
                seen = bytesWritten
                deadline = Date(timeIntervalSinceNow: limit)
            }
        }
    }

    /// The writer: takes everything waiting, writes it with the lock released, and again.
    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty && dropped == 0 {
                idle = true
                condition.wait()
            }
            idle = false
            if pending.count < Self.batchBytes {
                gathering = true
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.gatherInterval))
                gathering = false
            }
            var batch: [UInt8] = []
            swap(&batch, &pending)
            if dropped > 0 {
                batch += Array("mock-backend: \(dropped) log line\(dropped == 1 ? "" : "s") dropped: standard error was not read fast enough\n".utf8)
                dropped = 0
            }
            writing = true
            condition.unlock()

            writeAll(batch)

            condition.lock()
            writing = false
            condition.broadcast()  // a waiting `flush`
            condition.unlock()
        }
    }

    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                // In pieces: a blocking write to a pipe returns only once all of it is taken, and a
                // waiting `flush` must see a slow reader's progress.
                let written = write(descriptor, buffer.baseAddress! + offset, min(buffer.count - offset, 16 << 10))
                if written > 0 {
                    offset += written
                    condition.lock()
                    bytesWritten += written  // progress for a waiting `flush`
                    condition.broadcast()
                    condition.unlock()
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return  // stderr closed or broken: nothing more can be written there
                }
            }
        }
    }
}

/// The wall time of log lines, formatted once per second (`strftime` per line cost a request's
/// thread more than its answer did).
enum LogTimestamp {
    private static let cache = NSLock()
    nonisolated(unsafe) private static var local: (second: Int, text: String) = (-1, "")
    nonisolated(unsafe) private static var utc: (second: Int, text: String) = (-1, "")

    /// As swift-log's stream handler writes it: `2026-11-27T20:00:00+0000`, local time.
    static func local(_ now: time_t = time(nil)) -> String {
        cached(now, &local, "%Y-%m-%dT%H:%M:%S%z") { var copy = now; return localtime_r(&copy, &$0) }
    }

    /// ISO 8601 in UTC: `2026-11-27T20:00:00Z` (JSON lines).
    static func utc(_ now: time_t = time(nil)) -> String {
        cached(now, &utc, "%Y-%m-%dT%H:%M:%SZ") { var copy = now; return gmtime_r(&copy, &$0) }
    }

    private static func cached(_ now: time_t, _ slot: inout (second: Int, text: String), _ format: String,
                               _ split: (inout tm) -> UnsafeMutablePointer<tm>?) -> String {
        cache.lock()
        defer { cache.unlock() }
        if slot.second == Int(now) { return slot.text }
        var parts = tm()
        guard split(&parts) != nil else { return "<unknown>" }
        var buffer = [UInt8](repeating: 0, count: 64)
        let length = buffer.withUnsafeMutableBufferPointer { out in
            out.withMemoryRebound(to: CChar.self) { strftime($0.baseAddress, $0.count, format, &parts) }
        }
        slot = (Int(now), String(decoding: buffer[..<length], as: UTF8.self))
        return slot.text
    }
}
