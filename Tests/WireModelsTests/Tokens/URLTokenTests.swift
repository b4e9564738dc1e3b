import Crypto
import Foundation
import Testing
import WireModels

@Suite("fastly_token URL tokens")
struct URLTokenTests {
    static let secret = SymmetricKey(data: Data("mock-secret".utf8))
    static let path = "/manifest/v1/hls/v5/clear/1752604059001/6c1e5a2e-3f0b-4d5e-9a55-1f0e2d3c4b5a/6s/master.m3u8"
    static let expiry = Date(timeIntervalSince1970: 1_709_294_400)
    /// Computed independently (Python's hmac/base64) for `secret`, `path` and `expiry`.
    static let knownToken =
        "NjVlMWMzNDBfMTQ0OGNhMWQ4Nzg1ZWYwMjJjNTNlOWMzZjJkNzc2MjQ3NzE0NDE2OTUyNjZlNmI0ZGY1MzlhNjg4MjlkMTJlMQ=="

    @Test("make produces the wire format: base64 of {8 hex expiry}_{64 hex HMAC-SHA256}")
    func knownAnswer() throws {
        let token = URLToken.make(path: Self.path, expiresAt: Self.expiry, secret: Self.secret)
        #expect(token == Self.knownToken)
        let text = String(decoding: try #require(Data(base64Encoded: token)), as: UTF8.self)
        #expect(text.hasPrefix("65e1c340_"))
        #expect(text.count == 8 + 1 + 64)
        #expect(URLToken.make(path: Self.path, expiresAt: Self.expiry.addingTimeInterval(0.9), secret: Self.secret) == token)
        #expect(URLToken.make(path: Self.path, expiresAt: Self.expiry, secret: Array("mock-secret".utf8)) == token)
    }

    @Test("a token verifies for its path and secret until it expires")
    func roundTrip() throws {
        let token = URLToken.make(path: Self.path, expiresAt: Self.expiry, secret: Self.secret)
        #expect(try URLToken.verify(token, path: Self.path, secret: Self.secret, now: Self.expiry.addingTimeInterval(-3600)) == Self.expiry)
        #expect(try URLToken.verify(token, path: Self.path, secret: Self.secret, now: Self.expiry) == Self.expiry)
        #expect(throws: Never.self) {
            try URLToken.verify(token, path: Self.path, secret: Data("mock-secret".utf8), now: Self.expiry)
        }
    }

    @Test("an expired token reports its expiry")
    func expired() {
        let token = URLToken.make(path: Self.path, expiresAt: Self.expiry, secret: Self.secret)
        let error = #expect(throws: URLTokenError.self) {
            try URLToken.verify(token, path: Self.path, secret: Self.secret, now: Self.expiry.addingTimeInterval(1))
        }
        #expect(error?.code == .expired)
        #expect(error?.expiry == Self.expiry)
    }

    @Test("a flipped HMAC digit, another path or another secret is forged")
    func forged() throws {
        let now = Self.expiry.addingTimeInterval(-60)
        let token = URLToken.make(path: Self.path, expiresAt: Self.expiry, secret: Self.secret)
        var text = Array(String(decoding: try #require(Data(base64Encoded: token)), as: UTF8.self))
        text[20] = text[20] == "a" ? "b" : "a"
        let flipped = Data(String(text).utf8).base64EncodedString()
        #expect(refusal { try URLToken.verify(flipped, path: Self.path, secret: Self.secret, now: now) } == .forged)
        #expect(refusal {
            try URLToken.verify(token, path: Self.path.replacingOccurrences(of: "clear", with: "fairplay"), secret: Self.secret, now: now)
        } == .forged)
        #expect(refusal {
            try URLToken.verify(token, path: Self.path, secret: SymmetricKey(data: Data("other".utf8)), now: now)
        } == .forged)
        // A later expiry with the old HMAC must not pass either.
        let extended = Data(("7fffffff" + String(text).dropFirst(8)).utf8).base64EncodedString()
        #expect(refusal { try URLToken.verify(extended, path: Self.path, secret: Self.secret, now: now) } == .forged)
    }

    @Test("a token for one path is not valid for another, even of the same video")
    func pathBound() {
        let segment = "/media/v1/hls/v5/clear/1752604059001/6c1e5a2e/v720/segment0.ts"
        let token = URLToken.make(path: segment, expiresAt: Self.expiry, secret: Self.secret)
        #expect(refusal {
            try URLToken.verify(token, path: segment.replacingOccurrences(of: "segment0", with: "segment1"), secret: Self.secret, now: Self.expiry)
        } == .forged)
    }

    @Test("malformed tokens are refused before anything else", arguments: [
        "not base64!",
        Data("65e1c340".utf8).base64EncodedString(),
        Data("65e1c340-\(String(repeating: "a", count: 64))".utf8).base64EncodedString(),
        Data("65e1c3_\(String(repeating: "a", count: 64))".utf8).base64EncodedString(),
        Data("65e1c340_\(String(repeating: "a", count: 63))".utf8).base64EncodedString(),
        Data("65e1c34g_\(String(repeating: "a", count: 64))".utf8).base64EncodedString(),
        Data("65e1c340_\(String(repeating: "z", count: 64))".utf8).base64EncodedString(),
        Data("65E1C340_\(String(repeating: "a", count: 64))".utf8).base64EncodedString(),
        "",
    ])
    func malformed(token: String) {
        #expect(refusal {
            try URLToken.verify(token, path: Self.path, secret: Self.secret, now: Self.expiry)
        } == .malformed)
        #expect(URLToken.expiry(of: token) == nil)
    }

    @Test("a client reads the expiry from a full URL with a percent-encoded token")
    func expiryFromURL() {
        let url = "https://mock.example\(Self.path)?fastly_token=\(URLToken.percentEncode(Self.knownToken))&x=1#frag"
        #expect(url.contains("%3D%3D"))
        #expect(URLToken.expiry(ofURL: url) == Self.expiry)
        #expect(URLToken.expiry(of: Self.knownToken) == Self.expiry)
        #expect(URLToken.expiry(of: URLToken.percentEncode(Self.knownToken)) == Self.expiry)
        #expect(URLToken.expiry(ofURL: "https://mock.example\(Self.path)") == nil)
        #expect(URLToken.expiry(ofURL: "https://mock.example\(Self.path)?fastly_token=garbage") == nil)
        #expect(URLToken.expiry(ofURL: "https://mock.example\(Self.path)?other_token=\(Self.knownToken)") == nil)
    }

    @Test("appending a token percent-encodes '+', '/' and '=' and picks '?' or '&'")
    func appending() {
        #expect(URLToken.percentEncode("a+b/c=d") == "a%2Bb%2Fc%3Dd")
        #expect(URLToken.appending(token: "ab+/=", to: "https://h/p.m3u8") == "https://h/p.m3u8?fastly_token=ab%2B%2F%3D")
        #expect(URLToken.appending(token: "t", to: "https://h/p.m3u8?a=1") == "https://h/p.m3u8?a=1&fastly_token=t")
        #expect(URLToken.appending(token: "new", to: "/p?fastly_token=old&a=1#f") == "/p?a=1&fastly_token=new#f")
    }

    @Test("signing a URL uses its path only, and the signed URL verifies")
    func signURL() throws {
        let url = "https://mock.example\(Self.path)?config_id=7"
        let signed = URLToken.sign(url: url, expiresAt: Self.expiry, secret: Self.secret)
        #expect(signed == "\(url)&fastly_token=\(URLToken.percentEncode(Self.knownToken))")
        let token = try #require(URLToken.token(inURL: signed))
        #expect(try URLToken.verify(token, path: URLToken.path(ofURL: signed), secret: Self.secret, now: Self.expiry) == Self.expiry)
    }

    @Test("the path of a URL is taken exactly as written", arguments: [
        ("https://h:8080/a/b%20c.m3u8?x=1#f", "/a/b%20c.m3u8"),
        ("http://h", "/"),
        ("/relative/p.ts?q", "/relative/p.ts"),
        ("https://h/", "/"),
        ("http://h?x=1", "/"),
        ("http://h#/not/a/path", "/"),
        ("", "/"),
        ("https://h/a?u=http://other/b", "/a"),
    ])
    func pathOfURL(url: String, path: String) {
        #expect(URLToken.path(ofURL: url) == path)
    }
}

/// The code `verify` refuses with; nil when it accepts (or throws something else).
private func refusal(_ verify: () throws -> Date) -> URLTokenError.Code? {
    do { _ = try verify(); return nil } catch { return (error as? URLTokenError)?.code }
}
