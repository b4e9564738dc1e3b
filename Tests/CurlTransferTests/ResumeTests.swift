import MicroHTTP
import Testing
import CurlTransfer

@Suite("Resuming .part files")
struct ResumeTests {
    /// A folder holding `src.ts` (`count` test bytes) and a file server on it, at `/files/src.ts`.
    static func served(count: Int, seed: UInt64) throws -> (TemporaryDirectory, [UInt8], TestServer) {
        let folder = try TemporaryDirectory()
        let bytes = testBytes(count: count, seed: seed)
        do {
            try write(bytes, to: folder.file("src.ts"))
            return (folder, bytes, try fileServer(folder.path))
        } catch {
            folder.remove()
            throw error
        }
    }

    @Test func partFileResumesWithARangeRequest() async throws {
        let (folder, bytes, server) = try Self.served(count: 300_000, seed: 11)
        defer { server.shutdown(); folder.remove() }
        let destination = folder.file("out/seg.ts")
        try makeFolder(folder.file("out"))
        try write(Array(bytes.prefix(100_000)), to: destination + ".part")

        let result = try await TransferEngine().download(FileDownload(url: server.url("/files/src.ts"), destination: destination))

        #expect(server.requests.map { $0.headers["Range"] } == ["bytes=100000-"])
        #expect(result == FileDownloadResult(bytesWritten: 200_000, resumedFrom: 100_000, totalSize: 300_000, status: 206))
        #expect(contents(of: destination) == bytes)
        #expect(!fileExists(destination + ".part"))
    }

    @Test func serverAnsweringTheRangeWithTheWholeFileStartsOver() async throws {
        let (folder, bytes, server) = try Self.served(count: 50_000, seed: 12)
        defer { server.shutdown(); folder.remove() }
        let destination = folder.file("seg.ts")
        try write(Array(repeating: 0xEE, count: 20_000), to: destination + ".part")

        // A stale If-Range validator makes the server send the whole file with 200 (RFC 9110 §13.1.5).
        let job = FileDownload(url: server.url("/files/src.ts"), destination: destination, headers: [("If-Range", "\"stale\"")])
        let result = try await TransferEngine().download(job)

        #expect(server.requests.map { $0.headers["Range"] } == ["bytes=20000-"])
        #expect(result == FileDownloadResult(bytesWritten: 50_000, resumedFrom: 0, totalSize: 50_000, status: 200))
        #expect(contents(of: destination) == bytes)
    }

    @Test func rangeNotSatisfiableBeyondTheEndDownloadsAgainFromZero() async throws {
        let (folder, bytes, server) = try Self.served(count: 40_000, seed: 13)
        defer { server.shutdown(); folder.remove() }
        let destination = folder.file("seg.ts")
        // A .part longer than the file: the server answers the range with 416.
        try write(Array(repeating: 0x55, count: 40_010), to: destination + ".part")

        let result = try await TransferEngine().download(FileDownload(url: server.url("/files/src.ts"), destination: destination))

        #expect(server.requests.map { $0.headers["Range"] } == ["bytes=40010-", nil])
        #expect(result == FileDownloadResult(bytesWritten: 40_000, resumedFrom: 0, totalSize: 40_000, status: 200))
        #expect(contents(of: destination) == bytes)
        #expect(!fileExists(destination + ".part"))
    }

    @Test func aWholePartFileIsCommittedOnA416NamingItsLength() async throws {
        let (folder, bytes, server) = try Self.served(count: 40_000, seed: 13)
        defer { server.shutdown(); folder.remove() }
        let destination = folder.file("seg.ts")
        // The body had arrived whole, then the process stopped before the rename.
        try write(bytes, to: destination + ".part")

        let result = try await TransferEngine().download(FileDownload(url: server.url("/files/src.ts"), destination: destination))

        #expect(server.requests.map { $0.headers["Range"] } == ["bytes=40000-"], "not fetched again")
        #expect(result == FileDownloadResult(bytesWritten: 0, resumedFrom: 40_000, totalSize: 40_000, status: 416))
        #expect(contents(of: destination) == bytes)
        #expect(!fileExists(destination + ".part"))
    }

    @Test func downloadCutShortResumesOnTheNextTry() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let bytes = testBytes(count: 200_000, seed: 14)
        try write(bytes, to: folder.file("src.ts"))
        let path = folder.file("src.ts")
        // The first answer stops after 120 000 bytes: a truncated copy announced at full size.
        try write(Array(bytes.prefix(120_000)), to: folder.file("short.ts"))
        let server = try TestServer(idleTimeoutSeconds: 1) { request in
            if request.headers["Range"] == nil {
                return HTTPResponse(status: 200, body: .file(path: folder.file("short.ts"), offset: 0, length: 200_000))
            }
            return HTTPResponse.file(at: path, contentType: "video/mp2t") ?? .text("gone", status: 500)
        }
        defer { server.shutdown() }
        let engine = TransferEngine()
        let destination = folder.file("seg.ts")
        let job = FileDownload(url: server.url("/files/src.ts"), destination: destination)

        await #expect(throws: TransferError.self) { try await engine.download(job) }
        #expect(!fileExists(destination))
        #expect(contents(of: destination + ".part") == Array(bytes.prefix(120_000)))

        let result = try await engine.download(job)
        #expect(result.resumedFrom == 120_000)
        #expect(contents(of: destination) == bytes)
    }
}
