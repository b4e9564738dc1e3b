import Foundation
import Testing
import TestKit
@testable import MockBackend

/// What a spawned child inherits: its standard descriptors, nothing else of its parent's.
@Suite("Spawned tools: descriptors")
struct SubprocessTests {
    @Test("a descriptor the parent opened without close-on-exec is not open in an ingest tool, nor in a child a test starts")
    func childKeepsOnlyStandardDescriptors() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        // As Foundation's file writes open theirs: no O_CLOEXEC (a file another thread is filling).
        let descriptor = open(folder.url.appendingPathComponent("filling").path, O_WRONLY | O_CREAT, 0o600)
        try #require(descriptor > 2)
        defer { close(descriptor) }
        let probe = "if [ -e /proc/self/fd/\(descriptor) ]; then echo inherited; else echo closed; fi"

        let tools = Subprocesses(scratch: folder.url.appendingPathComponent("scratch"))
        let ingest = try await offPool { try tools.run("sh", ["-c", probe]) }
        #expect(String(decoding: ingest.stdout, as: UTF8.self) == "closed\n", "an ingest tool (ffmpeg, curl)")

        let child = try await Run.process("/bin/sh", ["-c", probe])
        #expect(child.stdoutText == "closed\n", "a child started by a test (TestKit)")
    }
}
