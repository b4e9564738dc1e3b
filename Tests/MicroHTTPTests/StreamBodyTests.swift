import Foundation
import Locking
import MicroHTTP
import TestKit
import Testing

@Suite("HTTPServer: streamed bodies, per-response delay, the completion observer, live")
struct StreamBodyTests {
    /// A server answering `handler`, with every completed request collected.
    func withObservedServer(threads: Int = 2, _ handler: @escaping HTTPServer.Handler,
                            _ body: (String, Locked<[CompletedRequest]>) async throws -> Void) async throws {
        let seen = Locked<[CompletedRequest]>([])
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threadCount = threads
        let server = HTTPServer(configuration: configuration, logger: quietLogger, observer: { request in
            seen.withLock { $0.append(request) }
        }, handler: handler)
        try server.start()
        do {
            try await body("http://127.0.0.1:\(server.port)", seen)
        } catch {
            await server.shutdown(gracePeriod: .seconds(2))
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(2))
    }

    /// A body of `data` sent `chunk` bytes at a time, `pause` apart; aborted after `abortAfter` bytes if given.
    static func paced(_ data: [UInt8], chunk: Int, pause: Duration, abortAfter: Int? = nil) -> BodyStream {
        let position = Locked((offset: 0, waiting: false))
        return BodyStream(length: UInt64(data.count)) { max in
            position.withLock { state in
                if let abortAfter, state.offset >= abortAfter { return .abort }
                if state.offset == data.count { return .end }
                if state.waiting {
                    state.waiting = false
                } else if state.offset > 0 {
                    state.waiting = true
                    return .waitFor(pause)
                }
                var end = min(data.count, state.offset + min(chunk, max))
                if let abortAfter { end = min(end, abortAfter) }
                defer { state.offset = end }
                return .bytes(Array(data[state.offset..<end]))
            }
        }
    }

    @Test("a paced body arrives whole and slowly, holding no thread: with one MHD thread, another answer goes out while it waits")
    func paced() async throws {
        let data = randomBytes(60_000)
        let paced = Self.paced(data, chunk: 10_000, pause: .milliseconds(100))
        // The first piece, then nothing until the test has had its quick answer.
        let held = Locked((started: false, released: false))
        let stream = BodyStream(length: UInt64(data.count)) { max in
            let (started, released) = held.withLock { state in
                defer { state.started = true }
                return (state.started, state.released)
            }
            if started && !released { return .waitForSignal }
            return paced.next(max: max)
        }
        try await withObservedServer(threads: 1, { request in
            if request.path == "/slow" {
                var response = HTTPResponse(status: 200, body: .stream(stream))
                response.note = "paced"
                return response
            }
            return .text("quick")
        }) { base, seen in
            let slow = try Curl.start("\(base)/slow")
            #expect(try await eventually { held.withLock { $0.started } })
            let quick = try await Curl.fetch("\(base)/quick")
            #expect(quick.status == 200 && quick.text == "quick")
            // The completion observer runs once MHD has finished with the answer, which curl may
            // have read (and exited) before: wait for its record; /slow cannot end while held.
            #expect(try await eventually { seen.withLock { $0.map(\.target) } == ["/quick"] }, "answered while the slow body waited")
            held.withLock { $0.released = true }
            stream.signal()
            let answer = slow.finish(await slow.process.wait())
            #expect(answer.status == 200 && answer.body == data)
            #expect(answer.header("Content-Length") == "60000")
            #expect(try await eventually { seen.withLock { $0.count } == 2 })
            let record = try #require(seen.withLock { $0 }.first { $0.target == "/slow" })
            #expect(record.status == 200 && record.bytesSent == 60_000 && record.completed && record.note == "paced")
            #expect(record.duration >= .milliseconds(500), "six pieces, 100 ms apart")
        }
    }

    @Test("an aborted body: the client sees it cut short after the bytes sent, the log says not completed")
    func aborted() async throws {
        let data = randomBytes(50_000)
        try await withObservedServer({ _ in
            HTTPResponse(status: 200, body: .stream(Self.paced(data, chunk: 8_000, pause: .milliseconds(1), abortAfter: 20_000)))
        }) { base, seen in
            let answer = try await Curl.fetch("\(base)/cut")
            #expect(answer.exitCode == 18, "curl: transfer closed with outstanding read data: \(answer.exitCode) \(answer.stderr)")
            #expect(answer.body == Array(data.prefix(20_000)))
            #expect(try await eventually { seen.withLock { $0.count } == 1 })
            let record = try #require(seen.withLock { $0.first })
            #expect(!record.completed && record.bytesSent == 20_000)
        }
    }

    @Test("a chunked stream waits for signals: lines reach the client as they are signalled, then the end")
    func signalled() async throws {
        let lines = Locked<[String]>([])
        let ended = Locked(false)
        let stream = BodyStream(length: nil) { _ in
            let next = lines.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let next { return .bytes(Array(next.utf8)) }
            return ended.withLock { $0 } ? .end : .waitForSignal
        }
        try await withObservedServer({ _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/event-stream")]), body: .stream(stream))
        }) { base, seen in
            let client = try Curl.start("\(base)/events", ["-N"])
            for index in 1...3 {
                lines.withLock { $0.append("data: \(index)\n\n") }
                stream.signal()
            }
            ended.withLock { $0 = true }
            stream.signal()
            let answer = client.finish(await client.process.wait())
            #expect(answer.status == 200 && answer.text == "data: 1\n\ndata: 2\n\ndata: 3\n\n")
            #expect(answer.header("Transfer-Encoding") == "chunked")
        }
    }

    /// The answer that waits is held an hour, so the early one's being answered first says
    /// nothing about how fast a second curl starts on this machine: only that the delay holds
    /// no thread (the server has one).
    @Test("a response's own delay holds the answer back without a thread")
    func delayed() async throws {
        let arrived = Locked<[String]>([])
        try await withObservedServer(threads: 1, { request in
            arrived.withLock { $0.append(request.path) }
            var response = HTTPResponse.text("late")
            if request.path == "/late" { response.delay = .milliseconds(300) }
            if request.path == "/held" { response.delay = .seconds(3600) }
            return response
        }) { base, seen in
            let late = try Curl.start("\(base)/late")
            let answer = late.finish(await late.process.wait())
            #expect(answer.text == "late" && answer.seconds >= 0.3, "the delay is kept: \(answer.seconds) s")

            let held = try Curl.start("\(base)/held")
            #expect(try await eventually { arrived.withLock { $0.contains("/held") } }, "the held request reached the server")
            let early = try await Curl.fetch("\(base)/early")
            #expect(early.status == 200, "answered while the other waits on the only thread")
            #expect(try await eventually { seen.withLock { $0.map(\.target) } == ["/late", "/early"] }, "the held one is still waiting")
            held.process.kill()
        }
    }

    @Test("shutdown ends a stream that waits for a signal")
    func shutdownEndsWaitingStream() async throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let stream = BodyStream(length: nil) { _ in .waitForSignal }
        let server = HTTPServer(configuration: configuration, logger: quietLogger) { _ in HTTPResponse(status: 200, body: .stream(stream)) }
        try server.start()
        let client = try Curl.start("http://127.0.0.1:\(server.port)/events", ["-N"])
        #expect(try await eventually { server.activeRequests >= 1 })
        await server.shutdown(gracePeriod: .milliseconds(100))
        let answer = client.finish(await client.process.wait())
        #expect(answer.exitCode != 28, "not left to time out: \(answer.exitCode)")
        stream.signal()  // after the daemon is gone: touches nothing
    }
}
