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
        let fifo = directory.url.appendingPathComponent("stderr").path
        try #require(mkfifo(fifo, 0o600) == 0)
        // Opened for reading first (without blocking), so the child's open for writing returns.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        defer { close(reader) }
        let ready = directory.url.appendingPathComponent("ready.json")
        let process = try RunningProcess("/bin/sh", ["-c", "exec \"$0\" \"$@\" 2>\"\(fifo)\"", BalancedCluster.executable,
                                                     "--port", "0", "--data-dir", directory.url.appendingPathComponent("data").path,
                                                     "--ready-file", ready.path, "--threads", "2"])
        defer { process.kill() }
        try #require(try await process.waitForOutput { _ in FileManager.default.fileExists(atPath: ready.path) }, "\(process.stdoutSoFar)")
        let info = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: ready)) as? [String: Any])
        let base = try #require(info["base_url"] as? String)

        // One curl, keep-alive, 3,000 requests; each answer's status on a line of its own.
        let count = 3000
        let curl = try RunningProcess("/usr/bin/curl", ["-sS", "--max-time", "120", "-w", "%{http_code}\\n"]
                                      + (0..<count).flatMap { _ in ["-o", "/dev/null", base + "/healthz"] })
        let answered = await curl.wait()
        let statuses = answered.stdoutText.split(separator: "\n")
        #expect(statuses.count == count && statuses.allSatisfy { $0 == "200" }, "\(statuses.count) answers, \(Set(statuses)): \(answered.stderrText)")

        // Stopped, it writes what waits (the pipe now read) and exits.
        process.kill(SIGTERM)
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        _ = fcntl(reader, F_SETFL, 0)  // blocking reads from here: until the child's end closes
        while true {
            let read = buffer.withUnsafeMutableBytes { Glibc.read(reader, $0.baseAddress, $0.count) }
            if read > 0 { text += buffer[..<read] } else if read < 0 && errno == EINTR { continue } else { break }
        }
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\n")
        #expect(lines.filter { $0.hasSuffix("GET /healthz 200 15") }.count == count, "\(lines.suffix(3))")
        #expect(lines.last?.hasSuffix("stopped") == true, "the last line was written before the exit: \(lines.suffix(2))")
        #expect(!lines.contains { $0.contains("dropped") })
        #expect(await process.wait().exitCode == 0)
    }
}
