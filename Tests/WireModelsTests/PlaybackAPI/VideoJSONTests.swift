import Foundation
import Testing
import WireModels

@Suite("Video JSON")
struct VideoJSONTests {
    @Test("encoding a video gives the reference-shaped fixture, field for field")
    func encodingMatchesFixture() throws {
        let encoded = try WireJSON.encoder().encode(VideoFixture.video)
        let fixture = try TestResources.data("JSON/video.json")
        #expect(try canonicalJSON(encoded) == canonicalJSON(fixture))
    }

    @Test("decoding the fixture gives the video back")
    func decodingFixture() throws {
        let decoded = try WireJSON.decoder().decode(Video.self, from: TestResources.data("JSON/video.json"))
        #expect(decoded == VideoFixture.video)
    }

    @Test("encode then decode is the identity")
    func roundTrip() throws {
        let data = try WireJSON.encoder().encode(VideoFixture.video)
        #expect(try WireJSON.decoder().decode(Video.self, from: data) == VideoFixture.video)
    }

    @Test("nil optionals, link and ad_keys are written as explicit nulls")
    func nullsArePresent() throws {
        let minimal = Video(
            id: "1", accountID: "2", name: "n", duration: 1000,
            createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0),
            publishedAt: Date(timeIntervalSince1970: 0))
        let object = try jsonObject(WireJSON.encoder().encode(minimal))
        for key in ["description", "long_description", "reference_id", "poster", "thumbnail", "link", "ad_keys"] {
            #expect(object[key] is NSNull, "\(key) should be null")
        }
        #expect(object["custom_fields"] as? [String: String] == [:])
        #expect((object["tags"] as? [Any])?.isEmpty == true)
        #expect(object["offline_enabled"] as? Bool == false)

        let fixture = try jsonObject(WireJSON.encoder().encode(VideoFixture.video))
        let cuePoint = try #require((fixture["cue_points"] as? [[String: Any]])?.first)
        #expect(cuePoint["metadata"] is NSNull)
        let track = try #require((fixture["text_tracks"] as? [[String: Any]])?.first)
        #expect(track["asset_id"] is NSNull)
    }

    @Test("dates are ISO-8601 UTC with milliseconds, duration is integer milliseconds, ext_x_version a string")
    func scalarShapes() throws {
        let text = String(decoding: try WireJSON.encoder().encode(VideoFixture.video), as: UTF8.self)
        #expect(text.contains(#""created_at":"2024-03-01T12:00:00.000Z""#))
        #expect(text.contains(#""updated_at":"2024-03-02T08:30:15.250Z""#))
        #expect(text.contains(#""published_at":"2024-03-01T12:00:00.123Z""#))
        #expect(text.contains(#""duration":596480"#))
        #expect(text.contains(#""ext_x_version":"5""#))
        #expect(text.contains(#""time":120.5"#))
        #expect(!text.contains(#"\/"#))
    }

    @Test("absent source members are omitted, not null")
    func sourceOmitsNils() throws {
        let object = try jsonObject(WireJSON.encoder().encode(VideoFixture.video.sources[1]))
        #expect(Set(object.keys) == ["type", "src", "ext_x_version"])
        let image = try jsonObject(WireJSON.encoder().encode(ImageSource(src: "x")))
        #expect(Set(image.keys) == ["src"])
        let keySystem = try jsonObject(WireJSON.encoder().encode(KeySystem(certificateURL: "c")))
        #expect(Set(keySystem.keys) == ["certificate_url"])
    }

    @Test("the types write wire dates even under a plain JSONEncoder")
    func plainEncoderStillWritesWireDates() throws {
        let text = String(decoding: try JSONEncoder().encode(VideoFixture.video), as: UTF8.self)
        #expect(text.contains(#""created_at":"2024-03-01T12:00:00.000Z""#))
        #expect(try JSONDecoder().decode(Video.self, from: JSONEncoder().encode(VideoFixture.video)) == VideoFixture.video)
    }

    @Test("decoding accepts dates without fractional seconds and leaves out absent collections")
    func lenientDecoding() throws {
        let json = #"""
        {"id":"1","account_id":"2","name":"n","duration":5000,"economics":"FREE",
         "created_at":"2024-03-01T12:00:00Z","updated_at":"2024-03-01T13:00:00+01:00",
         "published_at":"2024-03-01T12:00:00.5Z"}
        """#
        let video = try WireJSON.decoder().decode(Video.self, from: Data(json.utf8))
        #expect(video.createdAt == Date(timeIntervalSince1970: 1_709_294_400))
        #expect(video.updatedAt == video.createdAt)
        #expect(video.publishedAt == Date(timeIntervalSince1970: 1_709_294_400.5))
        #expect(video.sources.isEmpty && video.tags.isEmpty && video.customFields.isEmpty)
        #expect(video.link == nil && video.description == nil && !video.offlineEnabled)
    }

    @Test("a malformed date is a decoding error")
    func malformedDate() {
        let json = #"{"id":"1","account_id":"2","name":"n","duration":5,"economics":"FREE","created_at":"yesterday","updated_at":"2024-03-01T12:00:00Z","published_at":"2024-03-01T12:00:00Z"}"#
        #expect(throws: DecodingError.self) { try WireJSON.decoder().decode(Video.self, from: Data(json.utf8)) }
    }

    @Test("a link, when present, is {text, url}")
    func linkShape() throws {
        var video = VideoFixture.video
        video.link = Link(text: "More", url: "https://example.com/more")
        let object = try jsonObject(WireJSON.encoder().encode(video))
        #expect(object["link"] as? [String: String] == ["text": "More", "url": "https://example.com/more"])
    }
}
