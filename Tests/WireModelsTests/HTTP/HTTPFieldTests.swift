import Foundation
import Testing
import WireModels

@Suite("Repr-Digest and Retry-After fields")
struct HTTPFieldTests {
    /// `printf hello | openssl dgst -sha256 -binary | base64`
    static let hello = "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="

    @Test("a digest is written as RFC 9530 says and read back; hex and ETag come from the same bytes")
    func digestRoundTrip() throws {
        let digest = ReprDigest(of: Data("hello".utf8))
        #expect(digest.headerValue == "sha-256=:\(Self.hello):")
        #expect(ReprDigest(headerValue: digest.headerValue) == digest)
        #expect(ReprDigest(hex: digest.hex) == digest)
        #expect(digest.hex.hasPrefix("2cf24dba5fb0a30e"))
        #expect(digest.etag == "\"sha256-2cf24dba5fb0a30e26e83b2ac5b9e29e\"")
        #expect(ReprDigest(of: Data("hellO".utf8)) != digest)
    }

    @Test("the sha-256 member is found among others, with parameters and spaces; anything malformed is nil")
    func digestParsing() {
        let digest = ReprDigest(of: Data("hello".utf8))
        #expect(ReprDigest(headerValue: "sha-512=:AAAA:, sha-256=:\(Self.hello):") == digest)
        #expect(ReprDigest(headerValue: "  SHA-256=:\(Self.hello):;p=1 ") == digest)
        for bad in ["", "sha-256", "sha-256=", "sha-256=\(Self.hello)", "sha-256=:AAAA:", "sha-256=:not base64!:",
                    "md5=:\(Self.hello):", "sha-256=::"] {
            #expect(ReprDigest(headerValue: bad) == nil, "\(bad)")
        }
        #expect(ReprDigest(hex: "xyz") == nil)
        #expect(ReprDigest(hex: String(repeating: "g", count: 64)) == nil)
        #expect(ReprDigest(sha256: [1, 2, 3]) == nil)
    }

    @Test("Retry-After in seconds or as a date, capped; nonsense is nil")
    func retryAfter() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(RetryAfter.delay(from: "2", now: now) == .seconds(2))
        #expect(RetryAfter.delay(from: " 0 ", now: now) == .zero)
        #expect(RetryAfter.delay(from: "99999999999999", now: now) == RetryAfter.longest)
        #expect(RetryAfter.delay(from: "Tue, 14 Nov 2023 22:13:25 GMT", now: now) == .seconds(5))
        #expect(RetryAfter.delay(from: "Tue, 14 Nov 2023 22:13:00 GMT", now: now) == .zero, "a date past is no wait")
        #expect(RetryAfter.delay(from: "Tuesday, 14-Nov-23 22:13:30 GMT", now: now) == .seconds(10))
        for bad in ["", "-1", "1.5", "soon", "Tue, 14 Nov"] {
            #expect(RetryAfter.delay(from: bad, now: now) == nil, "\(bad)")
        }
    }
}
