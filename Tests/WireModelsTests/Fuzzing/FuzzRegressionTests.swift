import Foundation
import Testing
import WireModels

/// Inputs the fuzz targets (Fuzz/, `make fuzz`) trapped on, or turned up while they were
/// written; each stays here with the behaviour that replaced the trap.
@Suite("Fuzzing regressions: WireModels")
struct WireModelsFuzzRegressionTests {
    @Test("a long fraction on a date far from 1970 parses instead of overflowing (crt target, fuzzer-found)")
    func longFractionFarFromEpoch() throws {
        // Found by the crt target in this X-BC-CRT-CONFIG rental: seconds × 10^16 overflowed Int64.
        let date = try #require(WireDate.date(from: "1025-12-01T00:00:00.1231536000000003+22:00"))
        #expect(WireDate.string(from: date) == "1025-11-30T02:00:00.123Z")
        let late = try #require(WireDate.date(from: "9999-12-31T23:59:59.123456789Z"))
        #expect(WireDate.string(from: late) == "9999-12-31T23:59:59.123Z")
        let early = try #require(WireDate.date(from: "0001-01-01T00:00:00.999999999-00:00"))
        #expect(WireDate.string(from: early) == "0001-01-01T00:00:01.000Z")
    }

    @Test("instants outside the years 0000-9999 in UTC are refused: string(from:) could not write them back", arguments: [
        "9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59.9999Z", "9999-12-31T23:59:60Z", "0000-01-01T00:00:00+00:01",
    ])
    func outsideWritableYears(text: String) {
        #expect(WireDate.date(from: text) == nil)
    }

    @Test("the first and last writable instants still round-trip")
    func writableBounds() throws {
        for text in ["0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"] {
            #expect(WireDate.string(from: try #require(WireDate.date(from: text))) == text)
        }
    }

    @Test("a video whose created_at lies past 9999 in UTC is refused, not decoded into a date it cannot encode")
    func videoPastYear9999() throws {
        var object = try #require(try JSONSerialization.jsonObject(with: try TestResources.data("JSON/video.json")) as? [String: Any])
        object["created_at"] = "9999-12-31T23:59:59-23:59"
        let data = try JSONSerialization.data(withJSONObject: object)
        #expect(throws: DecodingError.self) { try WireJSON.decoder().decode(Video.self, from: data) }
        object["created_at"] = "9999-12-31T23:59:59.123456789Z"
        let video = try WireJSON.decoder().decode(Video.self, from: try JSONSerialization.data(withJSONObject: object))
        let again = try WireJSON.decoder().decode(Video.self, from: try WireJSON.encoder().encode(video))
        #expect(WireDate.string(from: again.createdAt) == "9999-12-31T23:59:59.123Z")
    }

    @Test("byte ranges whose offsets add up past Int.max resolve to nil instead of trapping")
    func byteRangeOverflow() throws {
        let playlist = try MediaPlaylist(parsing: """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXTINF:2,
            #EXT-X-BYTERANGE:9223372036854775807@0
            a.ts
            #EXTINF:2,
            #EXT-X-BYTERANGE:9223372036854775807
            a.ts
            #EXTINF:2,
            #EXT-X-BYTERANGE:1
            a.ts
            #EXTINF:2,
            #EXT-X-BYTERANGE:1@9223372036854775807
            a.ts
            #EXTINF:2,
            #EXT-X-BYTERANGE:1
            a.ts
            """)
        #expect(playlist.resolvedByteRange(forSegmentAt: 1) == ByteRange(length: .max, offset: .max))
        #expect(playlist.resolvedByteRange(forSegmentAt: 2) == nil)
        #expect(playlist.resolvedByteRange(forSegmentAt: 3) == ByteRange(length: 1, offset: .max))
        #expect(playlist.resolvedByteRange(forSegmentAt: 4) == nil)
    }
}
