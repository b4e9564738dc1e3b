import Foundation
import TestKit
import MicroHTTP
import MockBackend
import Testing
import WireModels

/// `fastly_token` on manifest, media and key URLs.
@Suite("Signed media URLs")
struct URLTokenTests {
    /// One URL of each kind for the AES-128 video: master, video rendition, first segment, key.
    struct URLs {
        var master: String
        var rendition: String
        var segment: String
        var key: String
        var subtitleSegment: String
        var all: [String] { [master, rendition, segment, key, subtitleSegment] }
    }

    static func urls(_ app: MockBackendApp) throws -> URLs {
        let master = try app.masterURL(Fixture.aesVideo)
        let parsed = try app.master(Fixture.aesVideo)
        let rendition = try #require(parsed.variants.last?.uri)
        let media = try app.mediaPlaylist(url: rendition)
        let subtitles = try app.mediaPlaylist(url: try #require(parsed.renditions.first { $0.type == .subtitles }?.uri))
        return URLs(master: master, rendition: rendition, segment: try #require(media.segments.first?.uri),
                    key: try #require(media.segments.first?.key?.uri), subtitleSegment: try #require(subtitles.segments.first?.uri))
    }

    static func withoutQuery(_ url: String) -> String { String(url.prefix { $0 != "?" }) }

    /// The same URL with one hex digit of the token's HMAC changed.
    static func forged(_ url: String) throws -> String {
        let token = try #require(URLToken.token(inURL: url))
        let text = String(decoding: try #require(Data(base64Encoded: token)), as: UTF8.self)
        var characters = Array(text)
        characters[characters.count - 1] = characters[characters.count - 1] == "0" ? "1" : "0"
        return URLToken.appending(token: Data(String(characters).utf8).base64EncodedString(), to: url)
    }

    /// The same URL with the token's expiry pushed a day later (HMAC unchanged).
    static func extended(_ url: String) throws -> String {
        let token = try #require(URLToken.token(inURL: url))
        let text = String(decoding: try #require(Data(base64Encoded: token)), as: UTF8.self)
        let expiry = try #require(UInt32(text.prefix(8), radix: 16))
        let later = String(expiry + 86_400, radix: 16)
        return URLToken.appending(token: Data((later + text.dropFirst(8)).utf8).base64EncodedString(), to: url)
    }

    @Test("every URL handed out works as given")
    func validURLs() async throws {
        try await withApp { app, _ in
            for url in try Self.urls(app).all {
                let response = try app.get(url: url)
                #expect(response.status == 200, "\(url): \(response.debugText)")
            }
        }
    }

    @Test("no token is 403 ACCESS_DENIED/TOKEN_REQUIRED; an empty one too")
    func missingToken() async throws {
        try await withApp { app, _ in
            for url in try Self.urls(app).all {
                try expectError(try app.get(url: Self.withoutQuery(url)), 403, "ACCESS_DENIED", "TOKEN_REQUIRED")
                try expectError(try app.get(url: Self.withoutQuery(url) + "?fastly_token="), 403, "ACCESS_DENIED", "TOKEN_REQUIRED")
            }
        }
    }

    @Test("a forged or tampered token is 403 ACCESS_DENIED/TOKEN_VALIDATION")
    func forgedToken() async throws {
        try await withApp { app, _ in
            for url in try Self.urls(app).all {
                try expectError(try app.get(url: try Self.forged(url)), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
                try expectError(try app.get(url: try Self.extended(url)), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
                // A character of the URL's token flipped as it stands (may no longer even be base64).
                var characters = Array(url)
                let tokenStart = try #require(url.range(of: "fastly_token=")).upperBound
                let index = url.distance(from: url.startIndex, to: tokenStart) + 2  // base64 of the expiry's hex digits
                characters[index] = characters[index] == "A" ? "B" : "A"
                try expectError(try app.get(url: String(characters)), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
                try expectError(try app.get(url: Self.withoutQuery(url) + "?fastly_token=garbage"), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            }
        }
    }

    @Test("a token made for another path is 403 ACCESS_DENIED/TOKEN_VALIDATION")
    func tokenForAnotherPath() async throws {
        try await withApp { app, _ in
            let urls = try Self.urls(app)
            let all = urls.all
            for (index, url) in all.enumerated() {
                let donor = all[(index + 1) % all.count]
                let token = try #require(URLToken.token(inURL: donor))
                let swapped = URLToken.appending(token: token, to: Self.withoutQuery(url))
                try expectError(try app.get(url: swapped), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            }
            // The same token on the same path of another video.
            let otherMaster = try app.masterURL(Fixture.clearVideo)
            let moved = URLToken.appending(token: try #require(URLToken.token(inURL: otherMaster)), to: Self.withoutQuery(urls.master))
            try expectError(try app.get(url: moved), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("once the backend clock passes the expiry, every URL is 403 ACCESS_DENIED/TOKEN_EXPIRED; moving it back revives them")
    func expired() async throws {
        try await withApp { app, _ in
            let urls = try Self.urls(app)
            app.clock.offset = 7 * 3600
            for url in urls.all {
                try expectError(try app.get(url: url), 403, "ACCESS_DENIED", "TOKEN_EXPIRED")
            }
            // A forged token is never reported as merely expired.
            try expectError(try app.get(url: try Self.forged(urls.segment)), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            // Fresh URLs fetched now work again.
            #expect(try app.get(url: try app.masterURL(Fixture.aesVideo)).status == 200)
            app.clock.offset = 0
            for url in urls.all {
                #expect(try app.get(url: url).status == 200)
            }
        }
    }

    @Test("manifest URLs of a 1-hour account expire after an hour while media URLs live 6 hours")
    func shortManifestTTL() async throws {
        try await withApp { app, _ in
            let master = try app.masterURL(Fixture.contosoClearVideo, account: Fixture.contoso, key: Fixture.contosoPlayKey)
            let masterResponse = try app.get(url: master)
            let playlist = try MasterPlaylist(parsing: try masterResponse.text())
            let rendition = try #require(playlist.variants.first?.uri)
            let segment = try #require(try app.mediaPlaylist(url: rendition).segments.first?.uri)
            app.clock.offset = 2 * 3600
            try expectError(try app.get(url: master), 403, "ACCESS_DENIED", "TOKEN_EXPIRED")
            try expectError(try app.get(url: rendition), 403, "ACCESS_DENIED", "TOKEN_EXPIRED")
            #expect(try app.get(url: segment).status == 200)
        }
    }

    @Test("FairPlay manifests are served, and a FairPlay segment is never the clear fixture bytes")
    func fairPlayManifest() async throws {
        try await withApp { app, _ in
            for id in [Fixture.fairPlayVideo, "6415818918104", "6415818918108"] {
                let response = try app.get(url: try app.masterURL(id))
                #expect(response.status == 200)
                #expect(try response.text().hasPrefix("#EXTM3U"))
                let master = try MasterPlaylist(parsing: try response.text())
                let video = try app.mediaPlaylist(url: try #require(master.variants.first { $0.resolution?.width == 416 }?.uri))
                let segment = try app.get(url: video.segments[0].uri).bytes()
                #expect(!segment.isEmpty)
                #expect(segment != (try Fixture.media("video/416x234/seg_000.ts")))
            }
        }
    }

    @Test("FairPlay certificate and license endpoints: the certificate is DER, bad license requests get error arrays")
    func fairPlayEndpoints() async throws {
        try await withApp { app, _ in
            let source = try #require(try app.video(Fixture.fairPlayVideo).sources.first?.fairPlay)
            let license = try app.request("POST", try app.target(of: try #require(source.keyRequestURL)),
                                          headers: [("Content-Type", "application/json")], body: Array(#"{"server_playback_context":""}"#.utf8))
            try expectError(license, 400, "BAD_REQUEST", "INVALID_BASE64")
            let unsigned = try app.request("POST", Self.withoutQuery(try app.target(of: try #require(source.keyRequestURL))))
            try expectError(unsigned, 403, "ACCESS_DENIED", "TOKEN_REQUIRED")
            let certificate = try app.get(url: try #require(source.certificateURL))
            #expect(certificate.status == 200)
            #expect(certificate.headers["Content-Type"] == "application/pkix-cert")
            #expect(try certificate.bytes().first == 0x30)  // a DER SEQUENCE
            try expectError(try app.request("GET", "/license/v1/fairplay_app_cert/\(Fixture.contoso)"),
                            422, "UNPROCESSABLE_ENTITY", "FAIRPLAY_NOT_CONFIGURED")
            try expectError(try app.request("GET", "/license/v1/fairplay_app_cert/999"), 404, "NOT_FOUND", nil)
        }
    }
}
