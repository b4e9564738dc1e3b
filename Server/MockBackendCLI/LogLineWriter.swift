import Foundation

/// Where every log line of the command goes: appended to a buffer by the thread that logs (a
/// request's line is formatted once and copied in under a short lock), written to the file
/// descriptor in batches by one writer thread of its own. A request never waits on stderr: a
/// reader that is slow, or gone, stalls only the writer, and past `limit` bytes waiting, lines
/// are dropped and counted (a line saying how many follows once stderr drains).
final class LogLineWriter: @unchecked Sendable {
    /// The command's standard error.
    static let standardError = LogLineWriter(descriptor: STDERR_FILENO)

    /// The most bytes waiting before lines are dropped (8 MiB: some 50,000 request lines).
    let limit: Int
    private let descriptor: Int32
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var pending: [UInt8] = []
    private var dropped = 0
    private var writing = false
    private var started = false
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
        let wasEmpty = pending.isEmpty
        pending.append(contentsOf: line)
        if wasEmpty { condition.broadcast() }
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
            while pending.isEmpty && dropped == 0 { condition.wait() }
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
