import Foundation
import TestKit
import MicroHTTP
import Testing

/// The small application the live tests serve.
private func testHandler(file: String) -> HTTPServer.Handler {
    { request in
        switch (request.method, request.pathSegments) {
        case ("GET", ["hello"]), ("HEAD", ["hello"]):
            return .text("hello")
        case ("POST", ["echo"]):
            return .bytes(request.body, contentType: "application/octet-stream")
        case ("GET", ["file"]), ("HEAD", ["file"]):
            return HTTPResponse.file(at: file, contentType: "application/octet-stream") ?? .text("gone", status: 404)
        case ("GET", ["query"]):
            return .text(request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&"))
        case ("OPTIONS", _):
            return HTTPResponse(status: 204, headers: HTTPHeaders([("Allow", "GET, HEAD, POST, OPTIONS")]))
        default:
            return .text("no route for \(request.method) \(request.path)", status: 404)
        }
    }
}

/// A responder whose bodies are recognisable, to prove pre-handler failures go through it.
private let taggedErrorResponder: HTTPServer.ErrorResponder = { status, message in
    .text("tagged-error \(status): \(message)", status: status)
}

/// Starts the test application with a file of `fileSize` random bytes behind `/file`.
private func withTestServer(
    fileSize: Int = 0,
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    _ body: (HTTPServer, String, [UInt8], String) async throws -> Void
) async throws {
    let scratch = try TemporaryDirectory()
    defer { scratch.remove() }
    let contents = randomBytes(fileSize)
    let file = scratch.url.appendingPathComponent("blob.bin").path
    _ = FileManager.default.createFile(atPath: file, contents: Data(contents))
    try await withServer(configure, errorResponder: taggedErrorResponder, handler: testHandler(file: file)) { server, base in
        try await body(server, base, contents, scratch.url.path)
    }
}

@Suite("HTTPServer, live on a socket")
struct LiveServerTests {
    @Test("keep-alive: two requests in one curl run share one connection")
    func keepAlive() async throws {
        try await withTestServer { _, base, _, _ in
            let output = try await Curl.raw(["-sS", "-v", "\(base)/hello", "\(base)/hello"])
            #expect(output.exitCode == 0)
            #expect(output.stdoutText == "hellohello")
            #expect(output.stderrText.contains("Re-using existing connection"))
            #expect(output.stderrText.components(separatedBy: "Connected to").count - 1 == 1)
        }
    }

    @Test("GET, POST and OPTIONS reach the handler")
    func methods() async throws {
        try await withTestServer { _, base, _, dir in
            let get = try await Curl.fetch("\(base)/hello")
            #expect(get.status == 200)
            #expect(get.text == "hello")
            #expect(get.header("Content-Type") == "text/plain; charset=utf-8")
            #expect(get.header("Content-Length") == "5")

            let payload = randomBytes(10_000)
            let payloadFile = dir + "/payload"
            _ = FileManager.default.createFile(atPath: payloadFile, contents: Data(payload))
            let post = try await Curl.fetch("\(base)/echo", ["--data-binary", "@\(payloadFile)"])
            #expect(post.status == 200)
            #expect(post.body == payload)

            let options = try await Curl.fetch("\(base)/anything", ["-X", "OPTIONS"])
            #expect(options.status == 204)
            #expect(options.header("Allow") == "GET, HEAD, POST, OPTIONS")
            #expect(options.body.isEmpty)

            let missing = try await Curl.fetch("\(base)/nope")
            #expect(missing.status == 404)
        }
    }

    @Test("HEAD answers Content-Length but sends no body (the next request on the connection parses cleanly)")
    func head() async throws {
        try await withTestServer(fileSize: 4096) { _, base, _, _ in
            let output = try await Curl.raw([
                "-sS", "-v", "-I", "\(base)/hello", "--next", "-sS", "-v", "-I", "\(base)/file", "--next", "-sS", "-v", "\(base)/hello",
            ])
            #expect(output.exitCode == 0, "curl said: \(output.stderrText)")
            let text = output.stdoutText
            #expect(text.contains("Content-Length: 5\r\n"))
            #expect(text.contains("Content-Length: 4096\r\n"))
            #expect(text.hasSuffix("\r\n\r\nhello"))
            #expect(output.stderrText.components(separatedBy: "Re-using existing connection").count - 1 == 2)
        }
    }

    @Test("query parameters arrive undecoded by MHD, in order, with repeats")
    func queryOrder() async throws {
        try await withTestServer { _, base, _, _ in
            let response = try await Curl.fetch("\(base)/query?b=2&a=x+y&b=%2B3&flag&e=")
            #expect(response.status == 200)
            #expect(response.text == "b=2&a=x y&b=+3&flag=&e=")
        }
    }

    @Test("a body of exactly maxBodySize is accepted")
    func bodyAtLimit() async throws {
        try await withTestServer({ $0.maxBodySize = 4096 }) { _, base, _, dir in
            let payload = randomBytes(4096)
            _ = FileManager.default.createFile(atPath: dir + "/exact", contents: Data(payload))
            let fixed = try await Curl.fetch("\(base)/echo", ["--data-binary", "@\(dir)/exact"])
            #expect(fixed.status == 200)
            #expect(fixed.body == payload)
            let chunked = try await Curl.fetch("\(base)/echo", ["-H", "Transfer-Encoding: chunked", "--data-binary", "@\(dir)/exact"])
            #expect(chunked.status == 200)
            #expect(chunked.body == payload)
        }
    }

    @Test("a body over maxBodySize is 413 (Content-Length and chunked) and the server keeps serving")
    func bodyTooLarge() async throws {
        try await withTestServer({ $0.maxBodySize = 64 * 1024 }) { server, base, _, dir in
            _ = FileManager.default.createFile(atPath: dir + "/big", contents: Data(randomBytes(1_000_000)))
            _ = FileManager.default.createFile(atPath: dir + "/over", contents: Data(randomBytes(64 * 1024 + 1)))
            for file in ["big", "over"] {
                let fixed = try await Curl.fetch("\(base)/echo", ["--data-binary", "@\(dir)/\(file)"])
                #expect(fixed.status == 413, "Content-Length body \(file)")
                #expect(fixed.text.hasPrefix("tagged-error 413"))
                let chunked = try await Curl.fetch("\(base)/echo", ["-H", "Transfer-Encoding: chunked", "--data-binary", "@\(dir)/\(file)"])
                #expect(chunked.status == 413, "chunked body \(file)")
                #expect(chunked.text.hasPrefix("tagged-error 413"))
                let after = try await Curl.fetch("\(base)/hello")
                #expect(after.status == 200)
            }
            #expect(try await eventually { server.activeRequests == 0 })
        }
    }

    @Test("a Content-Length body over maxBodySize is read to its end before the 413 (no reset can cut the answer); one the client holds back behind Expect: 100-continue is never sent")
    func bodyTooLargeIsDrained() async throws {
        try await withTestServer({ $0.maxBodySize = 64 * 1024 }) { _, base, _, dir in
            _ = FileManager.default.createFile(atPath: dir + "/big", contents: Data(randomBytes(1_000_000)))
            // curl's own view: the status and the bytes it uploaded.
            func post(_ expect: String) async throws -> String {
                let output = try await RunningProcess("/usr/bin/curl", [
                    "-sS", "--max-time", "\(Curl.defaultMaxTime)", "--expect100-timeout", "\(Curl.defaultMaxTime)", "-o", "/dev/null",
                    "-w", "%{http_code} %{size_upload}", "-H", expect, "--data-binary", "@\(dir)/big", "\(base)/echo",
                ]).wait()
                return output.stdoutText
            }
            let sent = try await post("Expect:")
            #expect(sent == "413 1000000", "the whole body was read, then answered")
            let heldBack = try await post("Expect: 100-continue")
            #expect(heldBack == "413 0", "answered before the body was sent")
        }
    }

    @Test("headers over connectionMemoryLimit get a 4xx from MHD itself and the server keeps serving")
    func oversizedHeaders() async throws {
        try await withTestServer({ $0.connectionMemoryLimit = 64 * 1024; $0.maxHeaderSize = 32 * 1024 }) { _, base, _, dir in
            let headerFile = dir + "/header"
            try ("X-Big: " + String(repeating: "a", count: 100_000) + "\n").write(toFile: headerFile, atomically: true, encoding: .utf8)
            let response = try await Curl.fetch("\(base)/hello", ["-H", "@\(headerFile)"])
            // Over connectionMemoryLimit, libmicrohttpd 0.9.75 answers 431 itself, with its own HTML body.
            #expect((400...499).contains(response.status), "MHD answered \(response.status)")
            #expect(response.status == 431)
            let after = try await Curl.fetch("\(base)/hello")
            #expect(after.status == 200)
            #expect(after.text == "hello")
        }
    }

    @Test("headers over maxHeaderSize (but within MHD's memory) are 431 through the error responder")
    func headersOverLimit() async throws {
        try await withTestServer({ $0.maxHeaderSize = 32 * 1024; $0.connectionMemoryLimit = 256 * 1024 }) { server, base, _, dir in
            let headerFile = dir + "/header"
            try ("X-Big: " + String(repeating: "a", count: 100_000) + "\n").write(toFile: headerFile, atomically: true, encoding: .utf8)
            let response = try await Curl.fetch("\(base)/hello", ["-H", "@\(headerFile)"])
            #expect(response.status == 431)
            #expect(response.text.hasPrefix("tagged-error 431: "))
            let small = dir + "/small"
            try ("X-Small: " + String(repeating: "a", count: 20_000) + "\n").write(toFile: small, atomically: true, encoding: .utf8)
            let fits = try await Curl.fetch("\(base)/hello", ["-H", "@\(small)"])
            #expect(fits.status == 200)
            #expect(try await eventually { server.activeRequests == 0 })
        }
    }

    @Test("a file response is sent whole and byte-exact")
    func fileResponse() async throws {
        try await withTestServer(fileSize: 3_000_001) { _, base, contents, _ in
            let response = try await Curl.fetch("\(base)/file")
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == "3000001")
            #expect(response.header("Accept-Ranges") == "bytes")
            #expect(response.header("ETag") != nil)
            #expect(response.body == contents)
        }
    }

    @Test("Range on a file gives exactly the bytes asked for (curl -r)")
    func rangeOnFile() async throws {
        try await withTestServer(fileSize: 100_000) { _, base, contents, _ in
            let middle = try await Curl.fetch("\(base)/file", ["-r", "1000-1999"])
            #expect(middle.status == 206)
            #expect(middle.header("Content-Range") == "bytes 1000-1999/100000")
            #expect(middle.body == Array(contents[1000...1999]))

            let suffix = try await Curl.fetch("\(base)/file", ["-r", "-777"])
            #expect(suffix.status == 206)
            #expect(suffix.body == Array(contents[(100_000 - 777)...]))

            let open = try await Curl.fetch("\(base)/file", ["-r", "99990-"])
            #expect(open.body == Array(contents[99_990...]))

            let past = try await Curl.fetch("\(base)/file", ["-r", "100000-"])
            #expect(past.status == 416)
            #expect(past.header("Content-Range") == "bytes */100000")

            let etag = try #require(middle.header("ETag"))
            let notModified = try await Curl.fetch("\(base)/file", ["-H", "If-None-Match: \(etag)"])
            #expect(notModified.status == 304)
            #expect(notModified.body.isEmpty)
        }
    }

    @Test("added latency delays each answer by at least that much without holding a thread")
    func latencyDoesNotBlock() async throws {
        try await withTestServer({ $0.threadCount = 1; $0.addedLatencyMilliseconds = 1000 }) { server, base, _, _ in
            let single = try await Curl.fetch("\(base)/hello")
            #expect(single.status == 200)
            #expect(single.seconds >= 1, "one request took \(single.seconds) s")

            // Eight transfers on eight connections at once, timed by curl itself so the test
            // pool's scheduling cannot blur the measurement. A server that held its only thread
            // for each delay would finish the last one after 8 × 1 s; the bound leaves a loaded
            // machine 6 s for eight loopback requests.
            var arguments = ["-sS", "--no-progress-meter", "--max-time", "30", "-Z", "--parallel-immediate", "--parallel-max", "8",
                             "-w", "%{http_code} %{time_total} %{num_connects}\\n"]
            for _ in 0..<8 { arguments += ["-o", "/dev/null", "\(base)/hello"] }
            let output = try await Curl.raw(arguments)
            #expect(output.exitCode == 0, "\(output.stderrText)")
            let lines = output.stdoutText.split(separator: "\n").map { $0.split(separator: " ") }
            #expect(lines.count == 8)
            #expect(lines.allSatisfy { $0.first == "200" })
            #expect(lines.allSatisfy { $0.last == "1" }, "each transfer has its own connection")
            let times = lines.compactMap { $0.count > 1 ? Double($0[1]) : nil }
            #expect(times.count == 8)
            #expect(times.allSatisfy { $0 >= 1 }, "\(times)")
            #expect((times.max() ?? 99) < 7, "the slowest of 8 parallel requests took \(times.max() ?? 0) s")

            server.addedLatencyMilliseconds = -5
            #expect(server.addedLatencyMilliseconds == 0)
            let fast = try await Curl.fetch("\(base)/hello")
            #expect(fast.status == 200)
        }
    }

    /// Timing-sensitive: runs on its own thread with blocking waits, so a busy test pool cannot
    /// delay the request past the moment shutdown starts.
    @Test("graceful shutdown finishes the request in flight, then refuses connections")
    func gracefulShutdown() throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.addedLatencyMilliseconds = 500
        let server = HTTPServer(configuration: configuration, logger: quietLogger, handler: testHandler(file: "/nonexistent"))
        try server.start()
        let base = "http://127.0.0.1:\(server.port)"

        let inFlight = try Curl.start("\(base)/hello")
        #expect(eventuallyBlocking { server.activeRequests >= 1 }, "the request never arrived")
        let start = ContinuousClock.now
        server.shutdown()
        let shutdownTook = ContinuousClock.now - start
        let response = inFlight.finishBlocking()
        #expect(response.status == 200)
        #expect(response.text == "hello")
        #expect(server.activeRequests == 0)
        #expect(shutdownTook < .seconds(5))

        let refused = try Curl.start("\(base)/hello", ["--max-time", "5"]).finishBlocking()
        #expect(refused.exitCode == 7, "curl exit \(refused.exitCode): \(refused.stderr)")  // couldn't connect
        #expect(refused.status == 0)
        server.shutdown()  // a second call is harmless
    }

    @Test("while draining, a new connection is refused at once rather than left hanging")
    func refusesWhileDraining() throws {
        // The request in flight is held by a gate the test opens once it has seen the late
        // connection refused: the server drains for as long as the test needs, however slowly
        // this machine starts the late curl.
        let gate = Gate()
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, logger: quietLogger) { _ in
            await gate.wait()
            return .text("hello")
        }
        try server.start()
        let base = "http://127.0.0.1:\(server.port)"

        let inFlight = try Curl.start("\(base)/hello")
        #expect(eventuallyBlocking { server.activeRequests >= 1 })
        let stopper = Thread { server.shutdown(gracePeriod: .seconds(600)) }
        stopper.start()
        // Shutdown has stopped accepting once a bare connect is refused.
        #expect(eventuallyBlocking { connectionRefused(port: server.port) })
        let late = try Curl.start("\(base)/hello", ["--max-time", "30"]).finishBlocking()
        let stillDraining = !stopper.isFinished
        // Expected: curl exit 7 (connection refused) straight away. A listening socket that is
        // merely no longer accepted still completes handshakes, so the client sits in the
        // backlog until the daemon stops and then sees a reset (exit 52/56).
        #expect(late.exitCode == 7, "curl exit \(late.exitCode) after \(late.seconds) s: \(late.stderr)")
        #expect(stillDraining, "the server stopped while its request was still held")
        gate.open()
        let response = inFlight.finishBlocking()
        #expect(response.status == 200)
        #expect(eventuallyBlocking { stopper.isFinished })
    }

    @Test("a traversal target is refused with 400 by the error responder before any handler runs", arguments: [
        "/../etc/passwd", "/a/%2e%2e/etc/passwd", "/a/..%2f..%2fetc", "/hello/%2F", "/%5Cwindows", "/a%00b",
    ])
    func badTarget(path: String) async throws {
        try await withTestServer { server, base, _, _ in
            let response = try await Curl.fetch(base + path, ["--path-as-is"])
            #expect(response.status == 400)
            #expect(response.text.hasPrefix("tagged-error 400: "))
            #expect(try await eventually { server.activeRequests == 0 })
            let after = try await Curl.fetch("\(base)/hello")
            #expect(after.status == 200)
        }
    }

    @Test("malformed percent-encoding in the target is 400")
    func badEncoding() async throws {
        try await withTestServer { _, base, _, _ in
            let response = try await Curl.fetch(base + "/hello%zz", ["--path-as-is"])
            #expect(response.status == 400)
            #expect(response.text.hasPrefix("tagged-error 400: malformed percent-encoding"))
        }
    }

    @Test("port 0 binds a real free port; a taken port is an error")
    func ports() async throws {
        try await withTestServer { server, _, _, _ in
            #expect(server.port > 0)
            var configuration = HTTPServerConfiguration()
            configuration.port = server.port
            let second = HTTPServer(configuration: configuration, logger: quietLogger) { _ in .text("x") }
            let taken = #expect(throws: HTTPServerError.self) { try second.start() }
            #expect(taken?.code == .couldNotBind)
            var bad = HTTPServerConfiguration()
            bad.host = "not-an-address"
            let third = HTTPServer(configuration: bad, logger: quietLogger) { _ in .text("x") }
            let notAnAddress = #expect(throws: HTTPServerError.self) { try third.start() }
            #expect(notAnAddress?.code == .badConfiguration)
        }
    }
}

/// Run in child processes because the failure mode is a crash: libmicrohttpd aborts with
/// "MHD_stop_daemon() called while we have suspended connections", and a latency timer that
/// resumes a connection after MHD_stop_daemon touches freed memory.
@Suite("HTTPServer shutdown edge cases (in a child process)")
struct ShutdownEdgeCaseTests {
    @Test("shutdown whose grace period ends while a connection is suspended for latency does not crash the process")
    func shutdownWhileSuspended() async {
        await #expect(processExitsWith: .success) {
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            configuration.addedLatencyMilliseconds = 1000
            let server = HTTPServer(configuration: configuration, logger: quietLogger) { _ in .text("late") }
            try server.start()
            async let inFlight = Curl.fetch("http://127.0.0.1:\(server.port)/x", ["--max-time", "5"])
            guard try await eventually({ server.activeRequests >= 1 }) else { throw CancellationError() }
            await server.shutdown(gracePeriod: .milliseconds(100))  // the connection is still suspended here
            _ = try await inFlight
            try await Task.sleep(for: .milliseconds(1200))  // the latency timer fires after the stop

            // The process goes on serving with a new server.
            var next = HTTPServerConfiguration()
            next.port = 0
            let other = HTTPServer(configuration: next, logger: quietLogger) { _ in .text("ok") }
            try other.start()
            let response = try await Curl.fetch("http://127.0.0.1:\(other.port)/")
            await other.shutdown()
            guard response.status == 200 else { throw CancellationError() }
        }
    }

    @Test("releasing a started server without shutdown while a connection is suspended does not crash the process")
    func deinitWhileSuspended() async {
        await #expect(processExitsWith: .success) {
            let inFlight: Curl.PendingCurl
            do {
                var configuration = HTTPServerConfiguration()
                configuration.port = 0
                configuration.addedLatencyMilliseconds = 1000
                let server = HTTPServer(configuration: configuration, logger: quietLogger) { _ in .text("late") }
                try server.start()
                inFlight = try Curl.start("http://127.0.0.1:\(server.port)/x", ["--max-time", "5"])
                guard eventuallyBlocking({ server.activeRequests >= 1 }) else { throw CancellationError() }
                usleep(50_000)  // the request is in and its connection suspended
            }  // the server is released here, never shut down
            _ = inFlight.finishBlocking()
            usleep(1_200_000)  // the latency timer fires after the daemon is gone
        }
    }
}
