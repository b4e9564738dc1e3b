import Foundation
import Locking
import MicroHTTP
import TestKit
import Testing

/// `HTTPResponse.later`: an answer handed over from another thread (a license once its batch
/// has committed) while its connection waits suspended.
@Suite("HTTPServer with later answers, live")
struct LaterAnswerTests {
    /// The name of the calling thread (MHD names its own `MHD-worker`).
    static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    @Test("a later answer holds no thread: with one MHD thread, other requests are answered meanwhile; its builder runs on MHD's thread")
    func holdsNoThread() async throws {
        let held = Locked<PendingAnswer?>(nil)
        let builtOn = Locked<String?>(nil)
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threadCount = 1
        let server = HTTPServer(configuration: configuration, logger: quietLogger) { request in
            switch request.path {
            case "/held": return .later { answer in held.withLock { $0 = answer } }
            case "/atOnce": return .later { answer in answer { .text("given at once") } }
            default: return .text("answer \(request.path)")
            }
        }
        try server.start()
        defer { server.shutdown(gracePeriod: .seconds(2)) }
        let base = "http://127.0.0.1:\(server.port)"

        let slow = try Curl.start("\(base)/held")
        #expect(try await eventually { held.withLock { $0 != nil } })
        let fast = try await Curl.fetch("\(base)/fast")
        #expect(fast.status == 200 && fast.text == "answer /fast")
        // Given inside the work, before the handler has returned: answered all the same.
        let atOnce = try await Curl.fetch("\(base)/atOnce")
        #expect(atOnce.status == 200 && atOnce.text == "given at once")

        let answer = try #require(held.withLock { $0 })
        Thread {
            answer {
                builtOn.withLock { $0 = LaterAnswerTests.threadName() }
                return .text("answer held")
            }
            answer { .text("a second answer is ignored") }
        }.start()
        let answered = slow.finish(await slow.process.wait())
        #expect(answered.status == 200 && answered.text == "answer held")
        #expect(builtOn.withLock { $0 }?.hasPrefix("MHD") == true, "built on \(builtOn.withLock { $0 } ?? "nothing")")
    }

    @Test("a later answer gets ranges, the added latency and what `mapped` does to it")
    func rangesLatencyAndMapping() async throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.addedLatencyMilliseconds = 300
        let server = HTTPServer(configuration: configuration, logger: quietLogger) { _ in
            HTTPResponse.later { answer in
                Thread { answer { .text("abcdef") } }.start()
            }.mapped { response in
                var response = response
                response.headers.set("X-Mapped", "yes")
                return response
            }
        }
        try server.start()
        defer { server.shutdown(gracePeriod: .seconds(2)) }
        let ranged = try await Curl.fetch("http://127.0.0.1:\(server.port)/x", ["-r", "0-2"])
        #expect(ranged.status == 206 && ranged.text == "abc")
        #expect(ranged.header("X-Mapped") == "yes")
        #expect(ranged.seconds >= 0.3, "answered after \(ranged.seconds) s")
    }

    @Test("shutdown while a later answer is not given answers 503, and the late answer touches nothing")
    func shutdownWhileNotGiven() async throws {
        let held = Locked<PendingAnswer?>(nil)
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, logger: quietLogger) { _ in
            .later { answer in held.withLock { $0 = answer } }
        }
        try server.start()
        let pending = try Curl.start("http://127.0.0.1:\(server.port)/x")
        #expect(try await eventually { held.withLock { $0 != nil } })
        await server.shutdown(gracePeriod: .milliseconds(100))
        let answer = pending.finish(await pending.process.wait())
        #expect(answer.status == 503)
        let late = try #require(held.withLock { $0 })
        late { .text("too late") }
        #expect(server.activeRequests == 0)
    }

    @Test("in-process, waitingForLaterAnswer waits for the answer given from another thread; the first one counts")
    func waitingInProcess() {
        let response = HTTPResponse.later { answer in
            Thread {
                answer { .text("first") }
                answer { .text("second") }
            }.start()
        }
        #expect(response.isLater)
        let answer = response.waitingForLaterAnswer()
        #expect(!answer.isLater)
        #expect(answer.status == 200 && answer.body == .bytes(Array("first".utf8)))
        let plain = HTTPResponse.text("plain").mapped { response in
            var response = response
            response.status = 201
            return response
        }
        #expect(plain.status == 201 && !plain.isLater)
    }
}
