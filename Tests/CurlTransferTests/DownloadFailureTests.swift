import Foundation
import MicroHTTP
import Testing
import TestKit
import CurlTransfer

@Suite("File download failures")
struct DownloadFailureTests {
    @Test func notFoundWritesNothingAndFailsWithItsStatus() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let server = try fileServer(folder.path)
        defer { server.shutdown() }
        let destination = folder.file("out/missing.ts")
        let error = try #require(await downloadFailure(FileDownload(url: server.url("/files/missing.ts"), destination: destination)))
        #expect(error.code == .http(404))
        #expect(!fileExists(destination))
        #expect(!fileExists(destination + ".part"))
    }

    @Test func serverClosingEarlyIsALengthMismatchThatKeepsThePart() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let bytes = testBytes(count: 64_000, seed: 21)
        try write(bytes, to: folder.file("src.ts"))
        // Announces 100 000 bytes and stalls when the 64 000 on disk run out;
        // the server then drops the idle connection after a second.
        let server = try TestServer(idleTimeoutSeconds: 1) { _ in
            HTTPResponse(status: 200, body: .file(path: folder.file("src.ts"), offset: 0, length: 100_000))
        }
        defer { server.shutdown() }
        let destination = folder.file("seg.ts")
        let error = try #require(await downloadFailure(FileDownload(url: server.url("/x"), destination: destination)))
        #expect(error.code == .lengthMismatch)
        #expect(error.curlCode == 18)  // CURLE_PARTIAL_FILE: curl saw the connection close early
        #expect(!fileExists(destination))
        #expect(contents(of: destination + ".part") == bytes)
    }

    @Test func contentRangeLyingAboutTheTotalIsALengthMismatch() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let body = testBytes(count: 1_000, seed: 22)
        // A well-formed 206 whose Content-Range claims a 5 000 byte file but the body ends it at 1 000.
        let server = try TestServer { _ in
            HTTPResponse(status: 206, headers: HTTPHeaders([("Content-Range", "bytes 0-999/5000")]), body: .bytes(body))
        }
        defer { server.shutdown() }
        let destination = folder.file("seg.ts")
        let error = try #require(await downloadFailure(FileDownload(url: server.url("/x"), destination: destination)))
        #expect(error.code == .lengthMismatch)
        #expect(!fileExists(destination))
        #expect(contents(of: destination + ".part") == body)
    }

    @Test func cancellingTheTaskStopsAnInFlightDownloadAndKeepsThePart() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try write(testBytes(count: 10_000, seed: 23), to: folder.file("src.ts"))
        let arrivals = Arrivals()
        let server = try fileServer(folder.path, holding: Gate()) { arrivals.arrived($0.target) }
        defer { server.shutdown() }
        let engine = TransferEngine(configuration: .holdingAnswers)
        let destination = folder.file("seg.ts")
        try write([1, 2, 3], to: destination + ".part")
        let job = FileDownload(url: server.url("/files/src.ts"), destination: destination)

        let task = Task { try await engine.download(job) }
        _ = await arrivals.next()
        task.cancel()
        let result = await task.result

        #expect(transferErrorCode(result) == .cancelled)
        // The server has not answered yet: the outcome came from the cancellation.
        #expect(server.server.activeRequests == 1)
        #expect(!fileExists(destination))
        #expect(contents(of: destination + ".part") == [1, 2, 3])
        #expect(engine.statistics.running == 0)
    }

    @Test func cancelByIDAndCancelAllStopQueuedAndRunningDownloads() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try write(testBytes(count: 1_000, seed: 24), to: folder.file("src.ts"))
        let arrivals = Arrivals()
        let server = try fileServer(folder.path, holding: Gate()) { arrivals.arrived($0.target) }
        defer { server.shutdown() }
        var configuration = TransferEngine.Configuration.holdingAnswers
        configuration.maxConcurrentTransfers = 1
        let engine = TransferEngine(configuration: configuration)
        let jobs = (0..<3).map { FileDownload(url: server.url("/files/src.ts?n=\($0)"), destination: folder.file("\($0).ts")) }

        let tasks = jobs.map { job in Task { try await engine.download(job) } }
        let first = try #require(await arrivals.next())
        let running = try #require(jobs.indices.first { first.hasSuffix("n=\($0)") })
        try #require(try await eventually { engine.statistics.queued == 2 })
        #expect(engine.statistics.running == 1)

        // One slot: the other two wait. Cancel one of them by id, then everything.
        let waiting = jobs.indices.filter { $0 != running }
        engine.cancel(jobs[waiting[0]].id)
        #expect(transferErrorCode(await tasks[waiting[0]].result) == .cancelled)
        #expect(engine.statistics.queued == 1)
        engine.cancelAll()
        for task in tasks {
            #expect(transferErrorCode(await task.result) == .cancelled)
        }
        #expect(engine.statistics.queued == 0)
        #expect(engine.statistics.running == 0)
        #expect(server.requests.count == 1)
    }

    @Test func refusedConnectionIsCouldNotConnect() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let server = try fileServer(folder.path)
        let url = server.url("/files/a.ts")
        server.shutdown()
        let error = try #require(await downloadFailure(FileDownload(url: url, destination: folder.file("a.ts"))))
        #expect(error.code == .couldNotConnect)
        #expect(!fileExists(folder.file("a.ts.part")))
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "needs /dev/full"))
    func fullDiskIsDiskFullAndKeepsThePart() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try write(testBytes(count: 100_000, seed: 25), to: folder.file("src.ts"))
        let server = try fileServer(folder.path)
        defer { server.shutdown() }
        let destination = folder.file("seg.ts")
        // Every write to /dev/full fails with ENOSPC, as on a full disk.
        try #require(symlink("/dev/full", destination + ".part") == 0)
        let error = try #require(await downloadFailure(FileDownload(url: server.url("/files/src.ts"), destination: destination)))
        #expect(error.code == .diskFull)
        #expect(error.systemError == ENOSPC)
        #expect(!fileExists(destination))
        #expect(fileExists(destination + ".part"))
    }

    @Test func unwritableDestinationIsWriteFailed() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try write(testBytes(count: 1_000, seed: 26), to: folder.file("src.ts"))
        let server = try fileServer(folder.path)
        defer { server.shutdown() }
        // A regular file where a folder should be: mkdir fails with ENOTDIR, even for root.
        let destination = folder.file("src.ts/inside/seg.ts")
        let error = try #require(await downloadFailure(FileDownload(url: server.url("/files/src.ts"), destination: destination)))
        #expect(error.code == .writeFailed)
        #expect(server.requests.isEmpty, "refused before any request: the .part file cannot be made")
    }

    @Test func aFolderRemovedWhileTheRequestRunsIsWriteFailedAndStaysRemoved() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try write(testBytes(count: 1_000, seed: 27), to: folder.file("src.ts"))
        let target = folder.file("package")
        // The package folder goes (a download deleted meanwhile) once the request is in.
        let server = try fileServer(folder.path) { _ in try? FileManager.default.removeItem(atPath: target) }
        defer { server.shutdown() }
        let error = try #require(await downloadFailure(FileDownload(url: server.url("/files/src.ts"), destination: target + "/seg.ts")))
        #expect(error.code == .writeFailed)
        #expect(server.requests.count == 1)
        #expect(!fileExists(target), "the engine does not make the folder again")
    }
}

extension TransferEngine.Configuration {
    /// The defaults, but held downloads never stall out: the servers of these tests hold their
    /// answers until the test lets them go, and on a starved machine (a whole suite beside CPU
    /// hogs) that took longer than the default 30 s stall timeout, which failed the held download
    /// and let a queued one start (`cancelByIDAndCancelAllStopQueuedAndRunningDownloads` saw it).
    static var holdingAnswers: TransferEngine.Configuration {
        var configuration = TransferEngine.Configuration()
        configuration.stallTimeout = .seconds(3600)
        return configuration
    }
}
