import MicroHTTP
import Testing

@Suite("Request target parsing")
struct RequestTargetTests {
    @Test("path segments are split on '/' and percent-decoded; empty segments are dropped")
    func segmentsDecoded() throws {
        let target = try RequestTarget(parsing: "/a//b%20c/caf%C3%A9/d%3Fe/")
        #expect(target.segments == ["a", "b c", "café", "d?e"])
        #expect(target.path == "/a//b%20c/caf%C3%A9/d%3Fe/")
        #expect(target.query.isEmpty)
    }

    @Test("the root path has no segments")
    func root() throws {
        let target = try RequestTarget(parsing: "/")
        #expect(target.segments.isEmpty)
        #expect(target.path == "/")
    }

    @Test("'+' is a space in the query but a plus sign in the path")
    func plusHandling() throws {
        let target = try RequestTarget(parsing: "/a+b?q=x+y%2Bz&n+m=1")
        #expect(target.segments == ["a+b"])
        #expect(target.query.map(\.name) == ["q", "n m"])
        #expect(target.query.map(\.value) == ["x y+z", "1"])
    }

    @Test("query parameters keep their order and repeats; names without '=' have an empty value")
    func queryOrderAndDuplicates() throws {
        let request = try HTTPRequest(method: "GET", target: "/p?b=2&a=1&b=3&flag&eq=x=y&&c=")
        #expect(request.query.map(\.name) == ["b", "a", "b", "flag", "eq", "c"])
        #expect(request.query.map(\.value) == ["2", "1", "3", "", "x=y", ""])
        #expect(request.queryValue("b") == "2")
        #expect(request.queryValue("missing") == nil)
        #expect(request.duplicateQueryNames == ["b"])
        #expect(request.pathSegments == ["p"])
        #expect(request.path == "/p")
        #expect(request.target == "/p?b=2&a=1&b=3&flag&eq=x=y&&c=")
    }

    @Test("a fragment is not part of the path or the query")
    func fragment() throws {
        let withQuery = try RequestTarget(parsing: "/a/b?x=1#frag?y=2")
        #expect(withQuery.segments == ["a", "b"])
        #expect(withQuery.query.map(\.name) == ["x"])
        let withoutQuery = try RequestTarget(parsing: "/a#b?c=1")
        #expect(withoutQuery.segments == ["a"])
        #expect(withoutQuery.query.isEmpty)
    }

    @Test("duplicate names are reported once each, in first-seen order")
    func duplicateNames() throws {
        let request = try HTTPRequest(method: "GET", target: "/?x=1&y=1&x=2&y=2&x=3&z=1")
        #expect(request.duplicateQueryNames == ["x", "y"])
    }

    @Test("malformed percent-encoding is refused", arguments: [
        "/a%", "/a%2", "/a%zz", "/a%g0/b", "/%C3", "/a%FF", "/a?q=%", "/a?q=%2", "/a?q=%zz", "/a?%=1", "/a?q=%C3%28",
    ])
    func badPercentEncoding(target: String) {
        #expect(throws: RequestTargetError(.badPercentEncoding)) { try RequestTarget(parsing: target) }
    }

    @Test("'.', '..' and encoded '/', '\\', NUL are refused in every segment position", arguments: [
        "..", ".", "%2e%2e", "%2E%2E", "%2e%2E", ".%2e", "%2e.", "%2e", "%2F", "%2f", "a%2Fb", "..%2f..", "%5C", "a%5cb", "%00", "a%00b",
    ])
    func traversalRefused(segment: String) {
        let shapes = [
            "/\(segment)", "/\(segment)/b/c", "/a/\(segment)/c", "/a/b/\(segment)", "/a/b/\(segment)/", "/a/b/\(segment)?q=1",
        ]
        for target in shapes {
            #expect(throws: RequestTargetError(.pathTraversal), "target \(target)") { try RequestTarget(parsing: target) }
            #expect(throws: RequestTargetError(.pathTraversal), "target \(target)") { try HTTPRequest(method: "GET", target: target) }
        }
    }

    @Test("look-alikes of '..' that are plain names are accepted", arguments: ["...", ".hidden", "a..b", "..a", "%2e%2e%2e", "a.b"])
    func lookAlikesAccepted(segment: String) throws {
        let target = try RequestTarget(parsing: "/x/\(segment)/y")
        #expect(target.segments.count == 3)
        #expect(!target.segments.contains(".."))
    }

    @Test("encoded '/' in the query is fine: only path segments are checked")
    func encodedSlashInQuery() throws {
        let target = try RequestTarget(parsing: "/a?path=..%2F..%2Fetc&b=%00")
        #expect(target.query.map(\.value) == ["../../etc", "\0"])
    }

    @Test("targets that are not origin-form are refused", arguments: ["", "*", "a/b", "http://example.com/a", "?q=1"])
    func notOriginForm(target: String) {
        #expect(throws: RequestTargetError(.notOriginForm)) { try RequestTarget(parsing: target) }
    }

    @Test("errors describe themselves for the 400 body")
    func errorDescriptions() {
        #expect(RequestTargetError(.pathTraversal).description.contains(".."))
        #expect(!RequestTargetError(.badPercentEncoding).description.isEmpty)
        #expect(!RequestTargetError(.notOriginForm).description.isEmpty)
    }
}

@Suite("HTTP headers")
struct HTTPHeadersTests {
    @Test("names compare case-insensitively; set replaces every field of that name; add keeps them")
    func caseInsensitive() {
        var headers = HTTPHeaders([("Content-Type", "text/plain"), ("X-A", "1")])
        headers.add("x-a", "2")
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["X-a"] == "1")
        #expect(headers.values(for: "X-A") == ["1", "2"])
        headers.set("X-A", "3")
        #expect(headers.values(for: "x-a") == ["3"])
        headers.remove("CONTENT-TYPE")
        #expect(headers["Content-Type"] == nil)
        #expect(Array(headers).count == 1)
    }

    @Test("ASCII case folding does not fold non-letters")
    func foldingOnlyLetters() {
        #expect("ETag".caseInsensitiveEquals("etag"))
        #expect(!"a-b".caseInsensitiveEquals("a\rb"))  // '-' (0x2D) | 0x20 == '\r' | 0x20: must not match
        #expect(!"[".caseInsensitiveEquals("{"))
        #expect(!"ab".caseInsensitiveEquals("abc"))
    }
}
