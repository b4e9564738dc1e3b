import Foundation
import MicroHTTP
import Synchronization
import TestKit
import Testing

@Suite("HTTPServer with a deferred (async) handler, live")
struct DeferredHandlerTests {
    @Test("a waiting answer holds no thread: with one MHD thread, other requests are answered meanwhile")
    func waitingHoldsNoThread() async throws {
        let gate = Gate()
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threadCount = 1
        let server = HTTPServer(configuration: configuration, logger: quietLogger) { request in
            if request.path == "/slow" { await gate.wait() }
            return .text("answer \(request.path)")
        }
        try server.start()
        defer { server.shutdown(gracePeriod: .seconds(2)) }
        let base = "http://127.0.0.1:\(server.port)"

        let slow = try Curl.start("\(base)/slow")
        #expect(try await eventually { server.activeRequests >= 1 })
        let fast = try await Curl.fetch("\(base)/fast")
        #expect(fast.status == 200 && fast.text == "answer /fast")
        gate.open()
        let answered = slow.finish(await slow.process.wait())
        #expect(answered.status == 200 && answered.text == "answer /slow")
        // Ranges and conditionals apply to deferred answers as to any other.
        let ranged = try await Curl.fetch("\(base)/abcdef", ["-r", "0-5"])
        #expect(ranged.status == 206 && ranged.text == "answer")
    }

    @Test("shutdown while an answer is still being made answers 503 and the late answer touches nothing")
    func shutdownWhileWaiting() async throws {
        let gate = Gate()
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, logger: quietLogger) { _ in
            await gate.wait()
            return .text("too late")
        }
        try server.start()
        let pending = try Curl.start("http://127.0.0.1:\(server.port)/x")
        #expect(try await eventually { server.activeRequests >= 1 })
        await server.shutdown(gracePeriod: .milliseconds(100))
        let answer = pending.finish(await pending.process.wait())
        #expect(answer.status == 503)
        gate.open()  // the handler finishes after the daemon is gone
        #expect(server.activeRequests == 0)
    }
}
