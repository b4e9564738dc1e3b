import Foundation
import LicenseProtocol
import MicroHTTP
import MockBackend
import TestKit
import Testing
import WireModels

/// Static URL delivery (issue 26): `…/videos/{id}/master.m3u8?bcov_auth=JWT`, `high.mp4`,
/// `low.mp4` and `manifest.mpd`, against a live server, with curl and ffprobe.
@Suite("Static URL delivery, live")
struct StaticURLDeliveryTests {
    static let videos = "/playback/v1/accounts/\(Fixture.northwind)/videos"
    static func token(_ claims: String = "") -> String {
        TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(TestKeys.now + 3600)\#(claims)}"#)
    }

    /// A live server whose Northwind account has the test key registered (through the admin API).
    static func withKey(_ body: (MockBackendServer) async throws -> Void) async throws {
        try await withLiveServer { server in
            let registration = try JSONSerialization.data(withJSONObject: ["id": TestKeys.kid, "public_key": TestKeys.publicKeyPEM])
            let registered = try await Contract.admin(server, "/_admin/v1/accounts/\(Fixture.northwind)/playback-keys",
                                                      ["-X", "POST", "-H", "Content-Type: application/json",
                                                       "--data-binary", String(decoding: registration, as: UTF8.self)])
            try #require(registered.status == 201, "\(registered.text)")
            try await body(server)
        }
    }

    static func get(_ server: MockBackendServer, _ path: String, _ options: [String] = []) async throws -> CurlResponse {
        try await Curl.fetch(server.baseURL + path, options)
    }

    /// A playlist with its URLs' tokens cut out (they are made per answer and may differ by a bucket).
    static func untokened(_ playlist: String) -> String {
        playlist.replacing(/fastly_token=[^"\s&]*/, with: "fastly_token=")
    }

    @Test("master.m3u8 with the JWT in bcov_auth, BCOV-Auth or Authorization: Bearer: the master the video's sources name, whose media playlists play")
    func master() async throws {
        try await Self.withKey { server in
            let jwt = Self.token()
            let path = "\(Self.videos)/\(Fixture.clearVideo)/master.m3u8"
            let byQuery = try await Self.get(server, path + "?bcov_auth=\(jwt)")
            #expect(byQuery.status == 200, "\(byQuery.text)")
            #expect(byQuery.header("Content-Type") == "application/vnd.apple.mpegurl")
            #expect(byQuery.header("Repr-Digest") != nil && byQuery.header("ETag") != nil)
            for header in ["BCOV-Auth: \(jwt)", "Authorization: Bearer \(jwt)"] {
                let byHeader = try await Self.get(server, path, ["-H", header])
                #expect(byHeader.status == 200 && Self.untokened(byHeader.text) == Self.untokened(byQuery.text), "\(header): \(byHeader.text)")
            }
            // The same playlist as the signed master URL in the Playback API's answer.
            let video = try await server.fetchVideo(Fixture.clearVideo)
            let signed = try await Curl.fetch(try #require(video.sources.first?.src))
            #expect(Self.untokened(signed.text) == Self.untokened(byQuery.text))
            // By reference id too; and its media playlists and their segments are served.
            let byReference = try await Self.get(server, "\(Self.videos)/ref:\(try #require(video.referenceID))/master.m3u8?bcov_auth=\(jwt)")
            #expect(byReference.status == 200 && Self.untokened(byReference.text) == Self.untokened(byQuery.text))
            let master = try MasterPlaylist(parsing: byQuery.text)
            let variant = try #require(master.variants.first)
            let media = try await Curl.fetch(variant.uri)
            #expect(media.status == 200 && media.text.contains("#EXTINF"), "\(media.text)")
            let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0",
                                                                    server.baseURL + path + "?bcov_auth=\(jwt)"])
            #expect(probe.exitCode == 0 && probe.stdoutText.contains("video"), "\(probe.stderrText)")
        }
    }

    @Test("refusals: no token 401 TOKEN_REQUIRED (a policy key is not enough), forged 401 TOKEN_VALIDATION, another account 403, another conid 403, unknown 404, twice 400")
    func refusals() async throws {
        try await Self.withKey { server in
            let path = "\(Self.videos)/\(Fixture.clearVideo)/master.m3u8"
            for name in ["master.m3u8", "high.mp4", "low.mp4", "manifest.mpd"] {
                let target = "\(Self.videos)/\(Fixture.clearVideo)/\(name)"
                try Contract.expectError(try await Self.get(server, target), 401, "ACCESS_DENIED", "TOKEN_REQUIRED")
                try Contract.expectError(try await Self.get(server, target, ["-H", "BCOV-Policy: \(Fixture.northwindSearchKey)"]),
                                         401, "ACCESS_DENIED", "TOKEN_REQUIRED")
                try Contract.expectError(try await Self.get(server, target + "?bcov_auth="), 401, "ACCESS_DENIED", "TOKEN_REQUIRED")
            }
            let forged = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(TestKeys.now + 3600)}"#, key: TestKeys.other)
            try Contract.expectError(try await Self.get(server, path + "?bcov_auth=\(forged)"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            try Contract.expectError(try await Self.get(server, path + "?bcov_auth=not-a-jwt"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let expired = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(TestKeys.now - 60)}"#)
            try Contract.expectError(try await Self.get(server, path + "?bcov_auth=\(expired)"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let contoso = TestKeys.jwt(#"{"accid":"\#(Fixture.contoso)","exp":\#(TestKeys.now + 3600)}"#)
            try Contract.expectError(try await Self.get(server, path + "?bcov_auth=\(contoso)"), 403, "ACCESS_DENIED", "ACCOUNT_ID")
            let otherContent = Self.token(#","conid":"\#(Fixture.englishOnlyVideo)""#)
            try Contract.expectError(try await Self.get(server, path + "?bcov_auth=\(otherContent)"), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let ownContent = Self.token(#","conid":"\#(Fixture.clearVideo)""#)
            #expect(try await Self.get(server, path + "?bcov_auth=\(ownContent)").status == 200)
            let jwt = Self.token()
            try Contract.expectError(try await Self.get(server, "\(Self.videos)/404404/master.m3u8?bcov_auth=\(jwt)"), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            try Contract.expectError(try await Self.get(server, "\(Self.videos)/\(Fixture.contosoClearVideo)/high.mp4?bcov_auth=\(jwt)"),
                                     404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            try Contract.expectError(try await Self.get(server, path + "?bcov_auth=\(jwt)&bcov_auth=\(jwt)"), 400, "BAD_REQUEST", "DUPLICATE_PARAMETERS")
        }
    }

    @Test("DRM on static URLs: the masters and MPDs of AES-128 and FairPlay videos, their FairPlay and ClearKey licenses and the certificate with the JWT; never an MP4")
    func protectedStatic() async throws {
        try await withApp { app, _ in
            let registration = try JSONSerialization.data(withJSONObject: ["id": TestKeys.kid, "public_key": TestKeys.publicKeyPEM])
            let registered = try app.request("POST", "/_admin/v1/accounts/\(Fixture.northwind)/playback-keys",
                                             headers: [("Content-Type", "application/json")], body: Array(registration))
            try #require(registered.status == 201, "\(registered.debugText)")
            let jwt = Self.token()
            let auth = "?bcov_auth=\(jwt)"
            for video in [Fixture.aesVideo, Fixture.fairPlayVideo] {
                for name in ["high.mp4", "low.mp4"] {
                    try expectError(try app.request("GET", "\(Self.videos)/\(video)/\(name)\(auth)"), 403, "ACCESS_DENIED", "VIDEO_NOT_PLAYABLE")
                }
            }
            // The masters: HLSe with its signed key URL, FairPlay with its skd:// session key.
            let aes = try app.request("GET", "\(Self.videos)/\(Fixture.aesVideo)/master.m3u8\(auth)")
            #expect(aes.status == 200)
            let aesMedia = try app.mediaPlaylist(url: try #require(MasterPlaylist(parsing: aes.text()).variants.first?.uri))
            #expect(aesMedia.segments.first?.key?.method == .aes128)
            let fairPlay = try app.request("GET", "\(Self.videos)/\(Fixture.fairPlayVideo)/master.m3u8\(auth)")
            let fairPlayText = try fairPlay.text()
            #expect(fairPlay.status == 200 && fairPlayText.contains(#"URI="skd://"#))
            // The MPD of the FairPlay video (cenc, ClearKey); HLSe has no DASH.
            let mpd = try app.request("GET", "\(Self.videos)/\(Fixture.fairPlayVideo)/manifest.mpd\(auth)")
            let mpdText = try mpd.text()
            #expect(mpd.status == 200 && mpdText.contains(#"cenc:default_KID=""#))
            try expectError(try app.request("GET", "\(Self.videos)/\(Fixture.aesVideo)/manifest.mpd\(auth)"), 404, "NOT_FOUND", nil)
            // The certificate, then a FairPlay license for the video's key: the same CKC exchange, with the JWT.
            let certificate = try app.request("GET", "/playback/v1/accounts/\(Fixture.northwind)/fairplay_app_cert\(auth)")
            let signedCertificate = try app.request("GET", "/license/v1/fairplay_app_cert/\(Fixture.northwind)")
            let certificateBytes = try certificate.bytes(), signedCertificateBytes = try signedCertificate.bytes()
            #expect(certificate.status == 200 && certificateBytes == signedCertificateBytes)
            try expectError(try app.request("GET", "/playback/v1/accounts/\(Fixture.northwind)/fairplay_app_cert"), 401, "ACCESS_DENIED", "TOKEN_REQUIRED")
            let client = try LicenseTestClient(app)
            let pending = try client.makeRequest()
            let answer = try app.request("POST", "\(Self.videos)/\(Fixture.fairPlayVideo)/licenses/fairplay\(auth)",
                                         headers: [("Content-Type", "application/json")] + LicenseTestClient.offline(LicenseProfile(.purchase)),
                                         body: pending.body())
            #expect(answer.status == 200, "\(answer.debugText)")
            let license = try pending.open(try answer.bytes())
            #expect(license.terms.videoID == Fixture.fairPlayVideo)
            try expectError(try app.request("POST", "\(Self.videos)/\(Fixture.aesVideo)/licenses/fairplay\(auth)", body: pending.body()),
                            404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            // ClearKey, for the MPD's key id: the same key as the DASH source's license URL gives.
            let kid = try #require(mpdText.firstMatch(of: /cenc:default_KID="([0-9a-f-]{36})"/)?.1).replacingOccurrences(of: "-", with: "")
            let kidB64 = Data(stride(from: 0, to: 32, by: 2).map { UInt8(kid.dropFirst($0).prefix(2), radix: 16)! }).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let body = Array(#"{"kids":["\#(kidB64)"]}"#.utf8)
            let byStatic = try app.request("POST", "\(Self.videos)/\(Fixture.fairPlayVideo)/licenses/cenc/clearkey\(auth)", body: body)
            let signedURL = try #require(try app.video(Fixture.fairPlayVideo).sources.first { $0.isDASH }?.keySystems?["org.w3.clearkey"]?.licenseURL)
            let bySigned = try app.request("POST", try app.target(of: signedURL), body: body)
            #expect(byStatic.status == 200 && bySigned.status == 200, "\(byStatic.debugText)")
            let key = { (response: HTTPResponse) throws -> String? in
                ((try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [String: Any])?["keys"] as? [[String: Any]])?.first?["k"] as? String
            }
            let staticKey = try key(byStatic), signedKey = try key(bySigned)
            #expect(staticKey != nil && staticKey == signedKey)
        }
    }

    @Test("high.mp4 and low.mp4: the fixture's progressive MP4s (960x540 and 416x234 with audio), with ranges; manifest.mpd the DASH source's MPD, 404 without DASH delivery")
    func progressive() async throws {
        try await Self.withKey { server in
            let jwt = Self.token()
            for (name, size) in [("high", "960,540"), ("low", "416,234")] {
                let path = "\(Self.videos)/\(Fixture.clearVideo)/\(name).mp4?bcov_auth=\(jwt)"
                let whole = try await Self.get(server, path)
                #expect(whole.status == 200 && whole.header("Content-Type") == "video/mp4", "\(whole.text.prefix(200))")
                let file = try Data(contentsOf: Fixture.mediaDirectory.appendingPathComponent("mp4/\(name).mp4"))
                #expect(Data(whole.body) == file)
                let part = try await Self.get(server, path, ["-H", "Range: bytes=0-99"])
                #expect(part.status == 206 && Data(part.body) == file.prefix(100))
                let head = try await Self.get(server, path, ["-I"])
                #expect(head.status == 200 && head.header("Content-Length") == "\(file.count)")
                let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width,height",
                                                                        "-of", "csv=p=0", server.baseURL + path])
                #expect(probe.exitCode == 0, "\(probe.stderrText)")
                #expect(probe.stdoutText.contains("video,\(size)") && probe.stdoutText.contains("audio"), "\(probe.stdoutText)")
            }
            // manifest.mpd: the same MPD as the video's DASH source, which ffprobe reads.
            let mpd = try await Self.get(server, "\(Self.videos)/\(Fixture.clearVideo)/manifest.mpd?bcov_auth=\(jwt)")
            #expect(mpd.status == 200 && mpd.header("Content-Type") == "application/dash+xml", "\(mpd.text.prefix(300))")
            let video = try await server.fetchVideo(Fixture.clearVideo)
            let signed = try await Curl.fetch(try #require(video.sources.first { $0.isDASH }?.src))
            #expect(Self.untokened(signed.text) == Self.untokened(mpd.text))
            let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0",
                                                                    server.baseURL + "\(Self.videos)/\(Fixture.clearVideo)/manifest.mpd?bcov_auth=\(jwt)"])
            #expect(probe.exitCode == 0 && Set(probe.stdoutText.split(separator: "\n")) == ["video", "audio", "subtitle"], "\(probe.stderrText)")
            // An account without DASH delivery: 404 with the sentence.
            let patched = try await Contract.admin(server, "/_admin/v1/accounts/\(Fixture.northwind)",
                                                   ["-X", "PATCH", "-H", "Content-Type: application/json", "--data-binary", #"{"delivery_formats":["hls_ts"]}"#])
            #expect(patched.status == 200, "\(patched.text)")
            try Contract.expectError(try await Self.get(server, "\(Self.videos)/\(Fixture.clearVideo)/manifest.mpd?bcov_auth=\(jwt)"),
                                     404, "NOT_FOUND", nil)
            try Contract.expectError(try await Self.get(server, "\(Self.videos)/404404/manifest.mpd?bcov_auth=\(jwt)"),
                                     404, "NOT_FOUND", "VIDEO_NOT_FOUND")
        }
    }

    @Test("hls.vmap and dash.vmap: a VMAP whose content is the video's HLS master or DASH MPD, with a break at the start and at each AD cue point; 500 without vod.ssai")
    func vmap() async throws {
        try await Self.withKey { server in
            let withSSAI = Self.token(#","vod":{"ssai":"ad-config-1"}"#)
            for (name, manifest) in [("hls.vmap", "master.m3u8"), ("dash.vmap", "manifest.mpd")] {
                let path = "\(Self.videos)/\(Fixture.clearVideo)/\(name)"
                let answer = try await Self.get(server, path + "?bcov_auth=\(withSSAI)")
                #expect(answer.status == 200 && answer.header("Content-Type") == "application/xml", "\(answer.text)")
                #expect(answer.text.contains(#"<vmap:VMAP xmlns:vmap="http://www.iab.net/videosuite/vmap" version="1.0">"#))
                #expect(answer.text.contains(#"<vmap:AdBreak timeOffset="start" breakType="linear" breakId="preroll">"#))
                #expect(answer.text.contains(#"adconfig="ad-config-1""#))
                let content = try #require(answer.text.firstMatch(of: /contenturi="([^"]+)"/)?.1)
                #expect(String(content).contains("/\(manifest)?fastly_token="))
                let stream = try await Curl.fetch(String(content).replacingOccurrences(of: "&amp;", with: "&"))
                #expect(stream.status == 200, "\(content): \(stream.text.prefix(200))")
                let breaks = answer.text.components(separatedBy: "<vmap:AdBreak ").count - 1
                let cues = try await server.fetchVideo(Fixture.clearVideo).cuePoints.filter { $0.type == "AD" && $0.time > 0 }
                #expect(breaks == 1 + Set(cues.map(\.time)).count)
                try Contract.expectError(try await Self.get(server, path + "?bcov_auth=\(Self.token())"), 500, "SERVER_ERROR", nil)
                try Contract.expectError(try await Self.get(server, path), 401, "ACCESS_DENIED", "TOKEN_REQUIRED")
            }
        }
    }

    @Test("bcov_auth opens the Playback API's video get too, as a JWT header does")
    func playbackAPIQueryToken() async throws {
        try await Self.withKey { server in
            let answer = try await Self.get(server, "\(Self.videos)/\(Fixture.clearVideo)?bcov_auth=\(Self.token())")
            #expect(answer.status == 200, "\(answer.text)")
            let forged = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(TestKeys.now + 3600)}"#, key: TestKeys.other)
            try Contract.expectError(try await Self.get(server, "\(Self.videos)/\(Fixture.clearVideo)?bcov_auth=\(forged)",
                                                        ["-H", "BCOV-Policy: \(Fixture.northwindPlayKey)"]), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }
}
