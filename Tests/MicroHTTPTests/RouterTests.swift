import MicroHTTP
import Testing

@Suite("Router")
struct RouterTests {
    /// A router whose handlers answer with a body naming the route and its parameters.
    static func router() -> Router<String> {
        var router = Router<String>()
        router.add(["GET"], "/videos/:id") { context, _, p in .text("\(context) video \(p["id"])") }
        router.add(["POST"], "/videos/:id") { _, _, p in .text("post \(p["id"])") }
        router.add(["GET"], "/videos/special") { _, _, _ in .text("never: the parameter route was added first") }
        router.add(["GET"], "/accounts/:account/videos/:video") { _, _, p in .text("\(p["account"])/\(p["video"]) \(p["missing"])|") }
        router.add(["GET"], "/files/*rest") { _, _, p in .text("rest=\(p["rest"])") }
        router.add(["PUT", "DELETE"], "/things") { _, _, _ in .text("things") }
        router.add(["GET"], "/") { _, _, _ in .text("root") }
        router.add(["GET"], "/refused/:why") { _, _, p in throw Refused(why: p["why"]) }
        return router
    }

    static func run(_ method: String, _ target: String) throws -> String? {
        let request = try HTTPRequest(method: method, target: target)
        guard case .found(let handler, let parameters) = router().match(method: method, segments: request.pathSegments) else {
            return nil
        }
        guard case .bytes(let bytes) = try handler("ctx", request, parameters).body else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("':name' captures one decoded segment and the context reaches the handler")
    func parameters() throws {
        #expect(try Self.run("GET", "/videos/42") == "ctx video 42")
        #expect(try Self.run("GET", "/videos/ref%3Aabc") == "ctx video ref:abc")
        #expect(try Self.run("GET", "/accounts/1/videos/2") == "1/2 |")
        #expect(try Self.run("POST", "/videos/7") == "post 7")
    }

    struct Refused: Error, Equatable { var why: String }

    @Test("a handler's error reaches whoever dispatched the match")
    func throwingHandler() throws {
        #expect(throws: Refused(why: "gone")) { try Self.run("GET", "/refused/gone") }
    }

    @Test("the first route added wins")
    func firstWins() throws {
        #expect(try Self.run("GET", "/videos/special") == "ctx video special")
    }

    @Test("'*rest' captures the remaining segments joined by '/', and needs at least one")
    func rest() throws {
        #expect(try Self.run("GET", "/files/a/b/c.ts") == "rest=a/b/c.ts")
        #expect(try Self.run("GET", "/files/x") == "rest=x")
        let router = Self.router()
        guard case .notFound = router.match(method: "GET", segments: ["files"]) else {
            Issue.record("'/files' should not match '/files/*rest'")
            return
        }
    }

    @Test("a GET route answers HEAD too")
    func headWithGet() throws {
        #expect(try Self.run("HEAD", "/videos/1") == "ctx video 1")
        #expect(try Self.run("HEAD", "/") == "root")
    }

    @Test("a known path with another method is 405 with the allowed methods, sorted")
    func methodNotAllowed() {
        let router = Self.router()
        guard case .methodNotAllowed(let allowed) = router.match(method: "DELETE", segments: ["videos", "1"]) else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET", "HEAD", "POST"])
        guard case .methodNotAllowed(let thingsAllowed) = router.match(method: "GET", segments: ["things"]) else {
            Issue.record("expected 405")
            return
        }
        #expect(thingsAllowed == ["DELETE", "PUT"])  // no HEAD without GET
        guard case .methodNotAllowed = router.match(method: "HEAD", segments: ["things"]) else {
            Issue.record("HEAD is not allowed where GET is not")
            return
        }
    }

    @Test("unknown paths, and paths longer or shorter than every pattern, are 404", arguments: [
        ["nope"], ["videos"], ["videos", "1", "extra"], ["accounts", "1", "videos"], ["accounts", "1", "other", "2"],
    ])
    func notFound(segments: [String]) {
        guard case .notFound = Self.router().match(method: "GET", segments: segments) else {
            Issue.record("expected 404 for \(segments)")
            return
        }
    }

    @Test("an empty router finds nothing; missing parameters read as empty")
    func emptyRouter() {
        guard case .notFound = Router<Int>().match(method: "GET", segments: []) else {
            Issue.record("expected 404")
            return
        }
        #expect(RouteParameters()["anything"] == "")
        #expect(RouteParameters(["a": "b"])["a"] == "b")
    }
}
