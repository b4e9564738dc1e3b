import Locking
import MicroHTTP
import Testing

@Suite("Range header parsing")
struct ByteRangeTests {
    @Test("single ranges: a-b, a-, -n, clamped to the size", arguments: [
        ("bytes=0-99", 0, 99),
        ("bytes=100-", 100, 999),
        ("bytes=-100", 900, 999),
        ("bytes=-1000", 0, 999),
        ("bytes=-5000", 0, 999),
        ("bytes=500-5000", 500, 999),
        ("bytes=999-999", 999, 999),
        ("bytes=0-0", 0, 0),
        ("bytes=0-", 0, 999),
        ("Bytes=1-2", 1, 2),
        ("  bytes= 3 - 4 ", 3, 4),
    ] as [(String, UInt64, UInt64)])
    func satisfiable(header: String, lower: UInt64, upper: UInt64) {
        #expect(ByteRange.parse(header, size: 1000) == .range(lower, upper))
    }

    @Test("ranges that start at or past the end, and '-0', are unsatisfiable", arguments: [
        "bytes=1000-", "bytes=1000-1001", "bytes=5000-6000", "bytes=-0",
    ])
    func unsatisfiable(header: String) {
        #expect(ByteRange.parse(header, size: 1000) == .unsatisfiable)
    }

    @Test("multiple ranges, other units and nonsense are not understood (nil: ignore the header)", arguments: [
        "bytes=0-1,5-6", "bytes=0-1, 5-6", "items=0-1", "bytes 0-1", "bytes=", "bytes=-", "bytes=abc",
        "bytes=5-2", "bytes=a-b", "bytes=1-x", "bytes=--1", "0-1", "",
    ])
    func notUnderstood(header: String) {
        #expect(ByteRange.parse(header, size: 1000) == nil)
    }

    @Test("a zero-length body satisfies no range", arguments: ["bytes=0-", "bytes=0-0", "bytes=-1", "bytes=-0"])
    func zeroLength(header: String) {
        #expect(ByteRange.parse(header, size: 0) == .unsatisfiable)
    }

    @Test("a one-byte body")
    func oneByte() {
        #expect(ByteRange.parse("bytes=0-", size: 1) == .range(0, 0))
        #expect(ByteRange.parse("bytes=-7", size: 1) == .range(0, 0))
        #expect(ByteRange.parse("bytes=1-", size: 1) == .unsatisfiable)
    }
}

@Suite("Conditional and range responses")
struct ConditionalTests {
    static let etag = "\"5f1e-3e8\""
    static let body: [UInt8] = Array(0..<10)

    static func ok(_ body: HTTPResponse.Body = .bytes(ConditionalTests.body), etag: String? = ConditionalTests.etag) -> HTTPResponse {
        var headers = HTTPHeaders([("Content-Type", "application/octet-stream"), ("Cache-Control", "max-age=60"), ("X-Other", "1"),
                                   ("Access-Control-Allow-Origin", "*")])
        if let etag { headers.add("ETag", etag) }
        return HTTPResponse(status: 200, headers: headers, body: body)
    }

    static func request(_ headers: [(String, String)]) throws -> HTTPRequest {
        try request(method: "GET", headers)
    }

    static func request(method: String, _ headers: [(String, String)]) throws -> HTTPRequest {
        try HTTPRequest(method: method, target: "/thing", headers: HTTPHeaders(headers))
    }

    @Test("If-None-Match matching the ETag gives 304 keeping ETag and Cache-Control, with no body", arguments: [
        ConditionalTests.etag, "\"other\", \(ConditionalTests.etag)", "\"a\",\(ConditionalTests.etag),\"b\"",
        "W/\(ConditionalTests.etag)", "*", " \(ConditionalTests.etag) ",
    ])
    func notModified(condition: String) throws {
        for method in ["GET", "HEAD"] {
            let response = Self.ok().applyingConditionals(for: try Self.request(method: method, [("If-None-Match", condition)]))
            #expect(response.status == 304)
            #expect(response.headers["ETag"] == Self.etag)
            #expect(response.headers["Cache-Control"] == "max-age=60")
            #expect(response.headers["Access-Control-Allow-Origin"] == "*", "a browser drops a cross-origin 304 without it")
            #expect(response.headers["Content-Type"] == nil)
            #expect(response.headers["X-Other"] == nil)
            #expect(response.body == .empty)
        }
    }

    @Test("a weak ETag on the response is matched by its strong form")
    func weakResponseETag() throws {
        let response = Self.ok(etag: "W/\(Self.etag)").applyingConditionals(for: try Self.request([("If-None-Match", Self.etag)]))
        #expect(response.status == 304)
    }

    @Test("If-None-Match with other tags, or without an ETag to compare, gives the full 200")
    func modified() throws {
        let other = Self.ok().applyingConditionals(for: try Self.request([("If-None-Match", "\"nope\", W/\"x\"")]))
        #expect(other.status == 200)
        #expect(other.body == .bytes(Self.body))
        #expect(other.headers["Accept-Ranges"] == "bytes")
        let noETag = Self.ok(etag: nil).applyingConditionals(for: try Self.request([("If-None-Match", "*")]))
        #expect(noETag.status == 200)
    }

    @Test("Range on an in-memory body gives 206 with Content-Range and the sliced bytes")
    func rangeOnBytes() throws {
        let response = Self.ok().applyingConditionals(for: try Self.request([("Range", "bytes=2-5")]))
        #expect(response.status == 206)
        #expect(response.headers["Content-Range"] == "bytes 2-5/10")
        #expect(response.headers["ETag"] == Self.etag)
        #expect(response.headers["Accept-Ranges"] == "bytes")
        #expect(response.body == .bytes([2, 3, 4, 5]))
        let suffix = Self.ok().applyingConditionals(for: try Self.request([("Range", "bytes=-3")]))
        #expect(suffix.body == .bytes([7, 8, 9]))
        #expect(suffix.headers["Content-Range"] == "bytes 7-9/10")
    }

    @Test("Range on a file region offsets into the file instead of reading it")
    func rangeOnFile() throws {
        let file = Self.ok(.file(path: "/some/file", offset: 100, length: 1000))
        let response = file.applyingConditionals(for: try Self.request([("Range", "bytes=10-19")]))
        #expect(response.status == 206)
        #expect(response.headers["Content-Range"] == "bytes 10-19/1000")
        #expect(response.body == .file(path: "/some/file", offset: 110, length: 10))
        let open = file.applyingConditionals(for: try Self.request([("Range", "bytes=990-")]))
        #expect(open.body == .file(path: "/some/file", offset: 1090, length: 10))
    }

    @Test("an unsatisfiable Range gives 416 with 'bytes */size' and no body")
    func unsatisfiable() throws {
        let response = Self.ok().applyingConditionals(for: try Self.request([("Range", "bytes=10-")]))
        #expect(response.status == 416)
        #expect(response.headers["Content-Range"] == "bytes */10")
        #expect(response.headers["Access-Control-Allow-Origin"] == "*")
        #expect(response.body == .empty)
        let file = Self.ok(.file(path: "/f", offset: 0, length: 228_984))
            .applyingConditionals(for: try Self.request([("Range", "bytes=228984-")]))
        #expect(file.status == 416)
        #expect(file.headers["Content-Range"] == "bytes */228984")
    }

    @Test("a Range header that is not a single bytes range is ignored: full 200")
    func ignoredRange() throws {
        for header in ["bytes=0-1,4-5", "items=0-1", "bytes=x"] {
            let response = Self.ok().applyingConditionals(for: try Self.request([("Range", header)]))
            #expect(response.status == 200, "Range: \(header)")
            #expect(response.body == .bytes(Self.body))
        }
    }

    @Test("If-Range with another validator sends the whole current body; with the same ETag the range applies")
    func ifRange() throws {
        let mismatch = Self.ok().applyingConditionals(for: try Self.request([("Range", "bytes=0-1"), ("If-Range", "\"old\"")]))
        #expect(mismatch.status == 200)
        #expect(mismatch.body == .bytes(Self.body))
        #expect(mismatch.headers["Content-Range"] == nil)
        let dated = Self.ok().applyingConditionals(
            for: try Self.request([("Range", "bytes=0-1"), ("If-Range", "Wed, 21 Oct 2015 07:28:00 GMT")]))
        #expect(dated.status == 200)
        let match = Self.ok().applyingConditionals(for: try Self.request([("Range", "bytes=0-1"), ("If-Range", Self.etag)]))
        #expect(match.status == 206)
        #expect(match.body == .bytes([0, 1]))
    }

    @Test("If-Range compares strongly: a weak tag, given or answered, sends the whole body")
    func ifRangeIsStrong() throws {
        let weakGiven = Self.ok().applyingConditionals(for: try Self.request([("Range", "bytes=0-1"), ("If-Range", "W/\(Self.etag)")]))
        #expect(weakGiven.status == 200)
        #expect(weakGiven.body == .bytes(Self.body))
        let weakOwn = Self.ok(etag: "W/\(Self.etag)").applyingConditionals(
            for: try Self.request([("Range", "bytes=0-1"), ("If-Range", "W/\(Self.etag)")]))
        #expect(weakOwn.status == 200)
        let strong = Self.ok(etag: "\"sha256-0123\"").applyingConditionals(
            for: try Self.request([("Range", "bytes=2-3"), ("If-Range", " \"sha256-0123\" ")]))
        #expect(strong.status == 206)
        #expect(strong.body == .bytes([2, 3]))
    }

    @Test("a 206 and a 304 keep the Repr-Digest of the whole representation")
    func reprDigestKept() throws {
        var ok = Self.ok()
        ok.headers.add("Repr-Digest", "sha-256=:whole:")
        let partial = ok.applyingConditionals(for: try Self.request([("Range", "bytes=0-1")]))
        #expect(partial.status == 206)
        #expect(partial.headers["Repr-Digest"] == "sha-256=:whole:")
        let notModified = ok.applyingConditionals(for: try Self.request([("If-None-Match", Self.etag)]))
        #expect(notModified.status == 304)
        #expect(notModified.headers["Repr-Digest"] == "sha-256=:whole:")
    }

    @Test("non-200 answers and other methods are left untouched")
    func untouched() throws {
        var notFound = Self.ok()
        notFound.status = 404
        let headers = [("Range", "bytes=0-1"), ("If-None-Match", Self.etag)]
        let answered = notFound.applyingConditionals(for: try Self.request(headers))
        #expect(answered.status == 404)
        #expect(answered.body == .bytes(Self.body))
        #expect(answered.headers == notFound.headers)
        let post = Self.ok().applyingConditionals(for: try Self.request(method: "POST", headers))
        #expect(post.status == 200)
        #expect(post.headers == Self.ok().headers)
    }

    @Test("an empty body gets no Accept-Ranges and ignores Range")
    func emptyBody() throws {
        let response = Self.ok(.empty).applyingConditionals(for: try Self.request([("Range", "bytes=0-1")]))
        #expect(response.status == 200)
        #expect(response.headers["Accept-Ranges"] == nil)
    }

    @Test("If-None-Match wins over Range")
    func notModifiedBeatsRange() throws {
        let response = Self.ok().applyingConditionals(for: try Self.request([("Range", "bytes=0-1"), ("If-None-Match", Self.etag)]))
        #expect(response.status == 304)
    }

    /// A ranged body over `ConditionalTests.body` that records each range it is asked for.
    static func ranged(_ asked: Locked<[ClosedRange<UInt64>]>) -> HTTPResponse.Body {
        .ranged(RangedBody(length: UInt64(body.count)) { lower, upper in
            asked.withLock { $0.append(lower ... upper) }
            return .bytes(Array(ConditionalTests.body[Int(lower) ... Int(upper)]))
        })
    }

    @Test("a ranged body is asked for exactly the range sent: the range of a 206, the whole of a 200, nothing for a 304 or 416")
    func rangedBody() throws {
        let asked = Locked<[ClosedRange<UInt64>]>([])
        let part = Self.ok(Self.ranged(asked)).applyingConditionals(for: try Self.request([("Range", "bytes=2-4")]))
        #expect(part.status == 206 && part.body == .bytes([2, 3, 4]) && part.headers["Content-Range"] == "bytes 2-4/10")
        #expect(asked.withLock { $0 } == [2 ... 4])
        let whole = Self.ok(Self.ranged(asked)).applyingConditionals(for: try Self.request([]))
        #expect(whole.status == 200 && whole.body == .bytes(Self.body) && whole.headers["Accept-Ranges"] == "bytes")
        let otherTag = Self.ok(Self.ranged(asked)).applyingConditionals(for: try Self.request([("Range", "bytes=2-4"), ("If-Range", "\"old\"")]))
        #expect(otherTag.status == 200 && otherTag.body == .bytes(Self.body))
        let multiple = Self.ok(Self.ranged(asked)).applyingConditionals(for: try Self.request([("Range", "bytes=0-1,4-5")]))
        #expect(multiple.status == 200 && multiple.body == .bytes(Self.body))
        #expect(asked.withLock { $0 } == [2 ... 4, 0 ... 9, 0 ... 9, 0 ... 9])
        let past = Self.ok(Self.ranged(asked)).applyingConditionals(for: try Self.request([("Range", "bytes=10-")]))
        #expect(past.status == 416 && past.body == .empty)
        let notModified = Self.ok(Self.ranged(asked)).applyingConditionals(for: try Self.request([("If-None-Match", Self.etag)]))
        #expect(notModified.status == 304 && notModified.body == .empty)
        #expect(asked.withLock { $0 }.count == 4, "nothing made for a 416 or a 304")
    }
}
