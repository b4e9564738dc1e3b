import Foundation
import TestKit
import MicroHTTP
import MockBackend
import Testing
import WireModels

@Suite("Playback API: the video object")
struct VideoJSONTests {
    static let uuidPattern = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

    static func matches(_ text: String, _ pattern: String) -> Bool {
        text.range(of: "^" + pattern + "$", options: .regularExpression) != nil
    }

    static func escaped(_ text: String) -> String { NSRegularExpression.escapedPattern(for: text) }

    /// The raw JSON object of a video.
    static func rawVideo(_ app: MockBackendApp, _ id: String) throws -> [String: Any] {
        let response = try app.playback("/accounts/\(Fixture.northwind)/videos/\(id)")
        try #require(response.status == 200)
        return try #require(try JSONSerialization.jsonObject(with: Data(try response.bytes())) as? [String: Any])
    }

    @Test("the video decodes as WireModels.Video with the catalog's metadata")
    func decodes() async throws {
        try await withApp { app, _ in
            let video = try app.video(Fixture.clearVideo)
            #expect(video.accountID == Fixture.northwind)
            #expect(video.name == "Color Bars (clear)")
            #expect(video.referenceID == "nw-clear-bars")
            #expect(video.economics == "FREE")
            #expect(video.tags == ["demo", "clear", "bars"])
            #expect(video.customFields == ["genre": "documentary", "rating": "G"])
            #expect(video.cuePoints.isEmpty)
            #expect(video.link == nil)
            #expect(video.adKeys == nil)
            #expect(video.createdAt == WireDate.date(from: "2024-03-01T09:00:00.000Z"))
            #expect(video.updatedAt == WireDate.date(from: "2024-03-02T10:30:00.000Z"))
            #expect(video.publishedAt == WireDate.date(from: "2024-03-01T12:00:00.000Z"))
            #expect(video.longDescription?.isEmpty == false)
        }
    }

    @Test("duration is in milliseconds", arguments: [
        (Fixture.clearVideo, 12_000), (Fixture.marathonVideo, 7_200_000), ("6415818918107", 600_000), (Fixture.englishOnlyVideo, 12_000),
    ] as [(String, Int)])
    func duration(id: String, milliseconds: Int) async throws {
        try await withApp { app, _ in
            let video = try app.video(id)
            #expect(video.duration == milliseconds)
        }
    }

    @Test("raw JSON: ext_x_version is the string \"5\", dates carry milliseconds, nulls are explicit, offline_enabled is a bool")
    func rawShapes() async throws {
        try await withApp { app, _ in
            let object = try Self.rawVideo(app, Fixture.clearVideo)
            let sources = try #require(object["sources"] as? [[String: Any]])
            // TS HLS, HLS v7, DASH, two MP4s (CMAFDeliveryTests checks them all).
            #expect(sources.count == 5)
            #expect(sources.first?["ext_x_version"] as? String == "5")
            #expect(sources.first?["type"] as? String == "application/x-mpegURL")
            #expect(sources.first?["codecs"] as? String == "avc1,mp4a")
            for key in ["created_at", "updated_at", "published_at"] {
                let text = try #require(object[key] as? String)
                #expect(Self.matches(text, #"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"#), "\(key) = \(text)")
            }
            #expect(object["offline_enabled"] as? Bool == true)
            #expect(object["link"] is NSNull)
            #expect(object["ad_keys"] is NSNull)
            #expect(object["duration"] as? Int == 12_000)
            for key in ["id", "account_id", "name", "description", "long_description", "reference_id", "economics", "custom_fields",
                        "tags", "cue_points", "poster", "poster_sources", "thumbnail", "thumbnail_sources", "text_tracks", "sources"] {
                #expect(object[key] != nil, "missing \(key)")
            }
            let response = try app.playback("/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)")
            let text = try response.text()
            #expect(!text.contains("\\/"), "URLs must not be written with escaped slashes")
            #expect(text.contains(#""offline_enabled":true"#))
            #expect(text.contains(#""ext_x_version":"5""#))
        }
    }

    @Test("offline_enabled follows the catalog", arguments: [
        (Fixture.clearVideo, true), (Fixture.aesVideo, false), (Fixture.streamOnlyVideo, false), (Fixture.fairPlayVideo, true),
    ] as [(String, Bool)])
    func offlineEnabled(id: String, expected: Bool) async throws {
        try await withApp { app, _ in
            let video = try app.video(id)
            #expect(video.offlineEnabled == expected)
            #expect(try Self.rawVideo(app, id)["offline_enabled"] as? Bool == expected)
        }
    }

    @Test("the master URL has the reference's shape for each protection", arguments: [
        (Fixture.clearVideo, "clear"), (Fixture.aesVideo, "aes128"), (Fixture.fairPlayVideo, "fairplay"),
    ] as [(String, String)])
    func masterURLShape(id: String, protection: String) async throws {
        try await withApp { app, _ in
            let source = try #require(try app.video(id).sources.first)
            let pattern = Self.escaped(app.baseURL) + "/manifest/v1/hls/v5/\(protection)/\(Fixture.northwind)/"
                + Self.uuidPattern + "/2s/master\\.m3u8\\?fastly_token=[A-Za-z0-9%._~-]+"
            #expect(Self.matches(source.src, pattern), "\(source.src)")
            #expect(source.isHLS)
        }
    }

    @Test("the master URL's token expires about the account's manifest TTL from now", arguments: [
        (Fixture.northwind, Fixture.clearVideo, Fixture.northwindSearchKey, 21_600.0),
        (Fixture.contoso, Fixture.contosoClearVideo, Fixture.contosoPlayKey, 3600.0),
    ] as [(String, String, String, Double)])
    func manifestTTL(account: String, id: String, key: String, ttl: Double) async throws {
        try await withApp { app, _ in
            let url = try app.masterURL(id, account: account, key: key)
            let expiry = try #require(URLToken.expiry(ofURL: url))
            let remaining = expiry.timeIntervalSinceNow
            // Expiries are rounded down to a time bucket (at most 60 s) so bodies can be cached.
            #expect(remaining > ttl - 62 && remaining <= ttl + 1, "expires in \(remaining) s, TTL \(ttl)")
        }
    }

    @Test("poster and thumbnail URLs have the shape {base}/image/v1/{acct}/{uuid}/{W}x{H}/image.jpg")
    func images() async throws {
        try await withApp { app, _ in
            let video = try app.video(Fixture.clearVideo)
            let uuid = pathSegments(ofURL: try #require(video.sources.first?.src))[6]
            #expect(Self.matches(uuid, Self.uuidPattern))
            #expect(video.poster == "\(app.baseURL)/image/v1/\(Fixture.northwind)/\(uuid)/1280x720/image.jpg")
            #expect(video.posterSources.map(\.src) == [video.poster])
            #expect(video.thumbnail == "\(app.baseURL)/image/v1/\(Fixture.northwind)/\(uuid)/160x90/image.jpg")
            #expect(video.thumbnailSources.map(\.src) == [video.thumbnail])
        }
    }

    @Test("sideband text_tracks have src and sources, language, label, kind and one default")
    func textTracks() async throws {
        try await withApp { app, _ in
            let wire = try app.video(Fixture.clearVideo)
            // The sideband tracks first; the thumbnail track (CMAFDeliveryTests) last.
            #expect(wire.textTracks.last?.label == "thumbnails")
            var video = wire
            video.textTracks.removeLast()
            let uuid = pathSegments(ofURL: try #require(video.sources.first?.src))[6]
            #expect(video.textTracks.map(\.srclang) == ["en", "fr", "de"])
            #expect(video.textTracks.map(\.label) == ["English", "Français", "Deutsch"])
            #expect(video.textTracks.filter(\.isDefault).count == 1)
            #expect(video.textTracks.first?.isDefault == true)
            for track in video.textTracks {
                #expect(track.src == "\(app.baseURL)/text/v1/\(Fixture.northwind)/\(uuid)/\(track.srclang)/subtitles.vtt")
                #expect(track.sources.map(\.src) == [track.src])
                #expect(track.kind == (track.srclang == "de" ? "subtitles" : "captions"))
                #expect(track.mimeType == "text/vtt")
                #expect(track.accountID == Fixture.northwind)
                #expect(Self.matches(track.id, Self.uuidPattern))
                let response = try app.get(url: track.src)
                #expect(response.status == 200)
                #expect(response.headers["Content-Type"]?.hasPrefix("text/vtt") == true)
                #expect(try response.text().hasPrefix("WEBVTT"))
            }
            #expect(Set(video.textTracks.map(\.id)).count == 3)
            // Videos without sideband tracks list only the thumbnail track.
            #expect(try app.video(Fixture.aesVideo).textTracks.map(\.label) == ["thumbnails"])
        }
    }

    @Test("FairPlay videos carry key_systems with key_request_url and certificate_url in the reference's shapes")
    func fairPlayKeySystems() async throws {
        try await withApp { app, _ in
            let video = try app.video(Fixture.fairPlayVideo)
            let source = try #require(video.sources.first)
            let uuid = pathSegments(ofURL: source.src)[6]
            let fairPlay = try #require(source.keySystems?["com.apple.fps.1_0"])
            #expect(source.fairPlay == fairPlay)
            let keyRequest = try #require(fairPlay.keyRequestURL)
            let pattern = Self.escaped("\(app.baseURL)/license/v1/fairplay/\(Fixture.northwind)/\(uuid)/") + Self.uuidPattern
                + "\\?fastly_token=[A-Za-z0-9%._~-]+"
            #expect(Self.matches(keyRequest, pattern), "\(keyRequest)")
            #expect(fairPlay.certificateURL == "\(app.baseURL)/license/v1/fairplay_app_cert/\(Fixture.northwind)")
            // Clear and AES-128 videos have none.
            #expect(try app.video(Fixture.clearVideo).sources.first?.keySystems == nil)
            #expect(try app.video(Fixture.aesVideo).sources.first?.keySystems == nil)
        }
    }

    @Test("video URLs use distinct stable uuids per video")
    func distinctUUIDs() async throws {
        try await withApp { app, _ in
            let uuids = try Fixture.northwindVideos.map { pathSegments(ofURL: try app.masterURL($0))[6] }
            #expect(Set(uuids).count == uuids.count)
        }
    }
}
