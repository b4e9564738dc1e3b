import Foundation
import Testing
import TestKit

/// The command's request log lines (`LogLineWriter`): at the default `info` level every request
/// is logged, and a request never waits on standard error.
@Suite("Request log lines on stderr, live")
struct LogLineTests {
    @Test("with stderr a pipe nobody reads (it fills after some 600 lines), 3,000 requests are all answered; read later, every line is there, in order")
    func stderrNotRead() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (process, reader, base) = try await Self.mockWithUnreadStderr(in: directory, ["--threads", "2"])
        defer { close(reader) }
        defer { process.kill() }

        // One curl, keep-alive, 3,000 requests; each answer's status on a line of its own.
        let count = 3000
        let curl = try RunningProcess("/usr/bin/curl", ["-sS", "--max-time", "120", "-w", "%{http_code}\\n"]
                                      + (0..<count).flatMap { _ in ["-o", "/dev/null", base + "/healthz"] })
        let answered = await curl.wait()
        let statuses = answered.stdoutText.split(separator: "\n")
        #expect(statuses.count == count && statuses.allSatisfy { $0 == "200" }, "\(statuses.count) answers, \(Set(statuses)): \(answered.stderrText)")

        // Now read (blocking, on a thread started here, until the child's end closes); stopped, it
        // writes what waits and exits. The reading runs before the stop and never waits for the
        // cooperative pool, which a busy test run can hold for longer than the exit's patience.
        _ = fcntl(reader, F_SETFL, 0)
        let drained = ThreadWork { () -> [UInt8] in
            var text: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let read = buffer.withUnsafeMutableBytes { Glibc.read(reader, $0.baseAddress, $0.count) }
                if read > 0 { text += buffer[..<read] } else if read < 0 && errno == EINTR { continue } else { break }
            }
            return text
        }
        process.kill(SIGTERM)
        let text = try await drained.value
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\n")
        let requestLines = lines.filter { $0.hasSuffix("GET /healthz 200 15") }
        #expect(requestLines.count == count, "\(lines.suffix(3))")
        // swift-log's stream format: local time, level, label, the metadata sorted by key, the source, the message.
        let format = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} info mock-backend: completed=true ms=\d+\.\d \[MicroHTTP\] GET /healthz 200 15$/#
        #expect(requestLines.allSatisfy { $0.wholeMatch(of: format) != nil }, "\(requestLines.first ?? "")")
        #expect(lines.last?.hasSuffix("stopped") == true, "the last line was written before the exit: \(lines.suffix(2))")
        #expect(!lines.contains { $0.contains("dropped") })
        #expect(await process.wait().exitCode == 0)
    }

    @Test("with stderr a pipe nobody ever reads, a stopped mock still exits: lines that stderr does not take are given up once it has taken nothing for 5 s")
    func stderrNeverRead() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (process, reader, base) = try await Self.mockWithUnreadStderr(in: directory)
        defer { close(reader) }
        defer { process.kill() }
        // More lines than the pipe holds: the writer is stuck in write(2) when the stop comes.
        let curl = try RunningProcess("/usr/bin/curl", ["-sS", "--max-time", "120", "-w", "%{http_code}\\n"]
                                      + (0..<2000).flatMap { _ in ["-o", "/dev/null", base + "/healthz"] })
        #expect(await curl.wait().stdoutText.split(separator: "\n").count == 2000)
        process.kill(SIGTERM)
        #expect(await process.wait().exitCode == 0, "it exits although stderr never drains")
    }

    /// A mock started in `directory` whose stderr is a FIFO, held open for reading (without
    /// blocking, so the child's open for writing returns) and not read yet: its running process,
    /// the FIFO's reading end (the caller closes it) and the mock's base URL.
    private static func mockWithUnreadStderr(in directory: TemporaryDirectory, _ arguments: [String] = []) async throws
        -> (process: RunningProcess, reader: Int32, base: String) {
        let fifo = directory.url.appendingPathComponent("stderr").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        let ready = directory.url.appendingPathComponent("ready.json")
        do {
            let process = try RunningProcess("/bin/sh", ["-c", "exec \"$0\" \"$@\" 2>\"\(fifo)\"", BalancedCluster.executable,
                                                         "--port", "0", "--data-dir", directory.url.appendingPathComponent("data").path,
                                                         "--ready-file", ready.path] + arguments)
            do {
                try #require(try await process.waitForOutput { _ in FileManager.default.fileExists(atPath: ready.path) },
                             "\(process.stdoutSoFar)")
                let info = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: ready)) as? [String: Any])
                return (process, reader, try #require(info["base_url"] as? String))
            } catch {
                process.kill()
                throw error
            }
        } catch {
            close(reader)
            throw error
        }
    }
}
