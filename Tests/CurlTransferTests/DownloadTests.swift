import Locking
import MicroHTTP
import Testing
import TestKit
import CurlTransfer

/// Serves the files of `folder` under /files/NAME, 404 for anything else; with a gate, every
/// answer waits until the test opens it (`also` is told of each request as it arrives).
func fileServer(_ folder: String, holding gate: Gate? = nil,
                also: (@Sendable (HTTPRequest) -> Void)? = nil) throws -> TestServer {
    try TestServer(holding: gate, arrived: also) { request in
        guard request.pathSegments.count == 2, request.pathSegments[0] == "files",
              let response = HTTPResponse.file(at: folder + "/" + request.pathSegments[1], contentType: "video/mp2t")
        else { return .text("not found", status: 404) }
        return response
    }
}

@Suite("File downloads")
struct DownloadTests {
    /// A file server that records the most requests it had in flight at once. Answers are held
    /// until `releaseAt` requests are in flight together (then the gate stays open), so a test
    /// sees its limit reached however slowly this machine starts the next transfer, and a
    /// limit that is not kept shows as more requests arriving while the first wait.
    private func countingServer(_ folder: String, releaseAt: Int) throws -> (TestServer, Locked<Int>) {
        let highest = Locked(0)
        let box = Locked<TestServer?>(nil)
        let gate = Gate()
        let server = try fileServer(folder, holding: gate) { _ in
            let active = box.withLock { $0 }?.server.activeRequests ?? 0
            highest.withLock { $0 = max($0, active) }
            if active >= releaseAt { gate.open() }
        }
        box.withLock { $0 = server }
        return (server, highest)
    }

    /// An engine running `transfers` downloads at once over up to 16 connections; its held
    /// downloads never stall out (`holdingAnswers`).
    private func engine(transfers: Int) -> TransferEngine {
        var configuration = TransferEngine.Configuration.holdingAnswers
        configuration.maxConcurrentTransfers = transfers
        configuration.maxTotalConnections = 16
        configuration.maxHostConnections = 16
        return TransferEngine(configuration: configuration)
    }

    @Test func fiftyFilesDownloadInParallelByteForByte() async throws {
        let served = try TemporaryDirectory(), saved = try TemporaryDirectory()
        defer { served.remove(); saved.remove() }
        var expected: [String: [UInt8]] = [:]
        for index in 0..<50 {
            let bytes = testBytes(count: 1 + (index * 7_919) % 300_000, seed: UInt64(index))
            try write(bytes, to: served.file("seg\(index).ts"))
            expected["seg\(index).ts"] = bytes
        }
        let server = try fileServer(served.path)
        defer { server.shutdown() }
        let engine = TransferEngine()

        let results = try await withThrowingTaskGroup(of: (String, FileDownloadResult).self) { group in
            for name in expected.keys {
                let job = FileDownload(url: server.url("/files/\(name)"), destination: saved.file("video/\(name)"))
                group.addTask { (name, try await engine.download(job)) }
            }
            return try await group.reduce(into: [String: FileDownloadResult]()) { $0[$1.0] = $1.1 }
        }

        #expect(results.count == 50)
        for (name, bytes) in expected {
            #expect(contents(of: saved.file("video/\(name)")) == bytes, "\(name)")
            #expect(results[name] == FileDownloadResult(bytesWritten: Int64(bytes.count), resumedFrom: 0,
                                                        totalSize: Int64(bytes.count), status: 200))
            #expect(!fileExists(saved.file("video/\(name).part")))
        }
        let statistics = engine.statistics
        #expect(statistics.connectionsOpened <= engine.configuration.maxTotalConnections)
        #expect(statistics.transfersFinished == 50)
        #expect(statistics.queued == 0 && statistics.running == 0)
    }

    @Test func progressIsMonotonicAndEndsAtTheTotal() async throws {
        let served = try TemporaryDirectory()
        defer { served.remove() }
        let bytes = testBytes(count: 3_000_000, seed: 99)
        try write(bytes, to: served.file("big.ts"))
        let server = try fileServer(served.path)
        defer { server.shutdown() }
        let reports = Locked<[(Int64, Int64?)]>([])

        let job = FileDownload(url: server.url("/files/big.ts"), destination: served.file("out/big.ts"))
        let result = try await TransferEngine().download(job) { now, total in
            reports.withLock { $0.append((now, total)) }
        }

        let seen = reports.withLock { $0 }
        #expect(result.totalSize == 3_000_000)
        #expect(!seen.isEmpty)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.0 <= $1.0 })
        #expect(seen.allSatisfy { $0.1 == nil || $0.1 == 3_000_000 })
        #expect(seen.last?.0 == 3_000_000)
        #expect(seen.last?.1 == 3_000_000)
        #expect(contents(of: served.file("out/big.ts")) == bytes)
    }

    @Test func redirectsAreFollowedAndTheirBodiesNeverReachTheFile() async throws {
        let served = try TemporaryDirectory()
        defer { served.remove() }
        let bytes = testBytes(count: 30_000, seed: 5)
        try write(bytes, to: served.file("real.ts"))
        let server = try TestServer { request in
            if request.path == "/moved" {
                return HTTPResponse(status: 302, headers: HTTPHeaders([("Location", "/files/real.ts")]),
                                    body: .bytes(Array("see elsewhere".utf8)))
            }
            return HTTPResponse.file(at: served.file("real.ts"), contentType: "video/mp2t") ?? .text("no", status: 404)
        }
        defer { server.shutdown() }
        let result = try await TransferEngine().download(
            FileDownload(url: server.url("/moved"), destination: served.file("out/real.ts")))
        #expect(result.totalSize == 30_000)
        #expect(contents(of: served.file("out/real.ts")) == bytes)
        #expect(server.requests.map(\.path) == ["/moved", "/files/real.ts"])
    }

    @Test func emptyFileIsCreated() async throws {
        let served = try TemporaryDirectory()
        defer { served.remove() }
        try write([], to: served.file("empty.ts"))
        let server = try fileServer(served.path)
        defer { server.shutdown() }
        let result = try await TransferEngine().download(
            FileDownload(url: server.url("/files/empty.ts"), destination: served.file("out/empty.ts")))
        #expect(result.totalSize == 0)
        #expect(contents(of: served.file("out/empty.ts")) == [])
    }

    @Test func concurrencyCapIsRespected() async throws {
        let served = try TemporaryDirectory()
        defer { served.remove() }
        try write(testBytes(count: 10_000, seed: 3), to: served.file("a.ts"))
        let (server, highest) = try countingServer(served.path, releaseAt: 3)
        defer { server.shutdown() }
        let engine = engine(transfers: 3)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                let job = FileDownload(url: server.url("/files/a.ts"), destination: served.file("out/\(index).ts"))
                group.addTask { _ = try await engine.download(job) }
            }
            try await group.waitForAll()
        }

        #expect(server.requests.count == 20)
        #expect(highest.withLock { $0 } == 3)
    }

    @Test func groupLimitsHoldWithinTheEngineCap() async throws {
        let served = try TemporaryDirectory()
        defer { served.remove() }
        try write(testBytes(count: 10_000, seed: 4), to: served.file("a.ts"))
        // One server per group, so each server's requests in flight are its group's.
        var servers: [(TestServer, TransferGroup, Locked<Int>)] = []
        for limit in [2, 3] {
            let (server, highest) = try countingServer(served.path, releaseAt: limit)
            servers.append((server, TransferGroup(limit: limit), highest))
        }
        defer { for (server, _, _) in servers { server.shutdown() } }
        let engine = engine(transfers: 16)

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for index in 0..<12 {
                for (number, (server, group, _)) in servers.enumerated() {
                    let job = FileDownload(url: server.url("/files/a.ts"), destination: served.file("out/\(number)-\(index).ts"), group: group)
                    tasks.addTask { _ = try await engine.download(job) }
                }
            }
            try await tasks.waitForAll()
        }

        for (server, group, highest) in servers {
            #expect(server.requests.count == 12)
            #expect(highest.withLock { $0 } == group.limit)
        }
        #expect(engine.statistics.queued == 0 && engine.statistics.running == 0)
    }

    @Test func aGroupSlotIsFreedByAFailureAndByACancellation() async throws {
        let served = try TemporaryDirectory()
        defer { served.remove() }
        try write(testBytes(count: 1_000, seed: 6), to: served.file("a.ts"))
        let arrivals = Arrivals()
        let server = try fileServer(served.path, holding: Gate()) { arrivals.arrived($0.target) }
        let quick = try fileServer(served.path)
        defer { server.shutdown(); quick.shutdown() }
        let engine = engine(transfers: 8)
        let group = TransferGroup(limit: 1)
        // One slot: a 404 ends, then the next in the group runs.
        await #expect(throws: TransferError.self) {
            try await engine.download(FileDownload(url: quick.url("/files/none.ts"), destination: served.file("out/0.ts"), group: group))
        }
        // A cancelled one frees the slot too, while it was waiting for its answer.
        let slow = Task { try await engine.download(FileDownload(url: server.url("/files/a.ts"), destination: served.file("out/1.ts"), group: group)) }
        _ = await arrivals.next()
        slow.cancel()
        #expect(transferErrorCode(await slow.result) == .cancelled)
        let result = try await engine.download(FileDownload(url: quick.url("/files/a.ts"), destination: served.file("out/2.ts"), group: group))
        #expect(result.totalSize == 1_000)
        #expect(engine.statistics.running == 0 && engine.statistics.queued == 0)
    }

    @Test func receiveLeavesTheBytesInThePartFileUntilCommitOnce() async throws {
        let served = try TemporaryDirectory()
        defer { served.remove() }
        let bytes = testBytes(count: 50_000, seed: 7)
        try write(bytes, to: served.file("a.ts"))
        let server = try fileServer(served.path)
        defer { server.shutdown() }
        let destination = served.file("out/a.ts")
        let received = try await TransferEngine().receive(FileDownload(url: server.url("/files/a.ts"), destination: destination))
        #expect(received.result.totalSize == 50_000)
        #expect(!fileExists(destination))
        #expect(contents(of: destination + ".part") == bytes)
        let copy = received
        #expect(try await received.commit().totalSize == 50_000)
        #expect(contents(of: destination) == bytes)
        #expect(!fileExists(destination + ".part"))
        await #expect(throws: TransferError.self) { try await copy.commit() }
        #expect(contents(of: destination) == bytes)
    }

    @Test func aFailedDownloadLeavesNoPartFileItMadeButKeepsOneThatWasThere() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let arrivals = Arrivals()
        let server = try fileServer(folder.path, holding: Gate()) { arrivals.arrived($0.target) }
        defer { server.shutdown() }
        let engine = TransferEngine(configuration: .holdingAnswers)
        // Cancelled while waiting for the answer: the empty .part made for it goes.
        let destination = folder.file("out/cancelled.ts")
        let task = Task { try await engine.download(FileDownload(url: server.url("/files/none.ts"), destination: destination)) }
        _ = await arrivals.next()
        #expect(fileExists(destination + ".part"))
        task.cancel()
        #expect(transferErrorCode(await task.result) == .cancelled)
        #expect(!fileExists(destination + ".part"))
        // A .part that was there before is kept, even empty, when the download fails.
        let kept = folder.file("out/kept.ts")
        try write([], to: kept + ".part")
        let quick = try fileServer(folder.path)
        defer { quick.shutdown() }
        await #expect(throws: TransferError.self) { try await engine.download(FileDownload(url: quick.url("/files/none.ts"), destination: kept)) }
        #expect(fileExists(kept + ".part"))
    }
}
