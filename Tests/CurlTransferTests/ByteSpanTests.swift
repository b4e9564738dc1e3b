import Locking
import MicroHTTP
import Testing
import CurlTransfer

/// A download of a byte range of a file (an HLS `EXT-X-BYTERANGE` segment): the file holds the
/// span's bytes only, is resumed within the span, and a server that ignores the range fails it.
@Suite("Byte spans")
struct ByteSpanTests {
    @Test func aSpanIsFetchedWithARangeAndHoldsOnlyItsBytes() async throws {
        let (folder, bytes, server) = try ResumeTests.served(count: 100_000, seed: 21)
        defer { server.shutdown(); folder.remove() }
        let destination = folder.file("piece.m4s")
        let job = FileDownload(url: server.url("/files/src.ts"), destination: destination, range: ByteSpan(offset: 30_000, length: 12_345))

        let result = try await TransferEngine().download(job)

        #expect(server.requests.map { $0.headers["Range"] } == ["bytes=30000-42344"])
        #expect(result == FileDownloadResult(bytesWritten: 12_345, resumedFrom: 0, totalSize: 12_345, status: 206))
        #expect(contents(of: destination) == Array(bytes[30_000 ..< 42_345]))
    }

    @Test func aSpansPartFileResumesWithinTheSpan() async throws {
        let (folder, bytes, server) = try ResumeTests.served(count: 100_000, seed: 22)
        defer { server.shutdown(); folder.remove() }
        let destination = folder.file("piece.m4s")
        try write(Array(bytes[50_000 ..< 51_000]), to: destination + ".part")
        let job = FileDownload(url: server.url("/files/src.ts"), destination: destination, range: ByteSpan(offset: 50_000, length: 5_000))

        let result = try await TransferEngine().download(job)

        #expect(server.requests.map { $0.headers["Range"] } == ["bytes=51000-54999"])
        #expect(result == FileDownloadResult(bytesWritten: 4_000, resumedFrom: 1_000, totalSize: 5_000, status: 206))
        #expect(contents(of: destination) == Array(bytes[50_000 ..< 55_000]))
    }

    @Test func aWholeOrLongerPartFileOfASpanIsFetchedAgain() async throws {
        let (folder, bytes, server) = try ResumeTests.served(count: 20_000, seed: 23)
        defer { server.shutdown(); folder.remove() }
        let destination = folder.file("piece.m4s")
        try write(Array(repeating: 0x11, count: 3_000), to: destination + ".part")
        let job = FileDownload(url: server.url("/files/src.ts"), destination: destination, range: ByteSpan(offset: 100, length: 2_000))

        _ = try await TransferEngine().download(job)

        #expect(server.requests.map { $0.headers["Range"] } == ["bytes=100-2099"])
        #expect(contents(of: destination) == Array(bytes[100 ..< 2_100]))
    }

    @Test func aServerIgnoringTheRangeFailsTheSpanAndKeepsNothing() async throws {
        let body = testBytes(count: 10_000, seed: 24)
        // A streamed body: no range applies, the whole file comes back with 200.
        let server = try TestServer { _ in
            let sent = Locked(false)
            return HTTPResponse(status: 200, body: .stream(BodyStream(length: UInt64(body.count)) { _ in
                sent.withLock { done in defer { done = true }; return done ? .end : .bytes(body) }
            }))
        }
        defer { server.shutdown() }
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let destination = folder.file("piece.m4s")
        let job = FileDownload(url: server.url("/track.mp4"), destination: destination, range: ByteSpan(offset: 10, length: 100))

        let error = await downloadFailure(job)

        #expect(error?.code == .lengthMismatch)
        #expect(error?.message.contains("does not serve byte ranges") == true)
        #expect(!fileExists(destination))
    }

    @Test func aRangeOtherThanTheOneAskedForFails() async throws {
        let server = try TestServer { _ in
            HTTPResponse(status: 206, headers: HTTPHeaders([("Content-Range", "bytes 0-99/1000")]), body: .bytes(Array(repeating: 1, count: 100)))
        }
        defer { server.shutdown() }
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let job = FileDownload(url: server.url("/track.mp4"), destination: folder.file("piece.m4s"), range: ByteSpan(offset: 500, length: 100))

        let error = await downloadFailure(job)

        #expect(error?.code == .lengthMismatch)
        #expect(error?.message.contains("asked for bytes 500-599") == true)
    }
}
