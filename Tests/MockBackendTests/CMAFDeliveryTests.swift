import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import MicroHTTP
@testable import MockBackend
import TestKit
import Testing
import WireModels

/// Dynamic Delivery's v2 sources (issue 41): the Playback API's `sources` in the real order,
/// the account's delivery formats, HLS v7 and DASH manifests over CMAF segments, their tokens,
/// digests and timelines. Requests go straight to the app; `CMAFLiveTests` uses real players.
@Suite("CMAF HLS v7 and DASH delivery")
struct CMAFDeliveryTests {
    static let account = "/_admin/v1/accounts/\(Fixture.northwind)"

    static func patchAccount(_ app: MockBackendApp, _ body: [String: Any]) throws -> HTTPResponse {
        try app.request("PATCH", account, headers: [("Content-Type", "application/json")],
                        body: Array(try JSONSerialization.data(withJSONObject: body)))
    }

    /// The sources' kinds in order: "hls5", "hls7", "dash", "mp4".
    static func kinds(_ video: Video) -> [String] {
        video.sources.map { source in
            if source.isDASH { return "dash" }
            if source.isHLS { return "hls\(source.extXVersion ?? "?")" }
            return source.container == "MP4" && source.type == nil ? "mp4" : "?"
        }
    }

    @Test("sources in the real answer's order and shapes: TS HLS, HLS v7, DASH, then the MP4s of a clear video (high first)")
    func sourcesInOrder() async throws {
        try await withApp { app, _ in
            let clear = try app.video(Fixture.clearVideo)
            #expect(Self.kinds(clear) == ["hls5", "hls7", "dash", "mp4", "mp4"])
            let v7 = clear.sources[1]
            // The account delivers HEVC and the asset has a ladder: "hvc" in the URL, as Brightcove's HEVC sources.
            #expect(v7.codecs == "avc1,hvc1,mp4a" && v7.type == VideoSource.hlsType)
            #expect(pathSegments(ofURL: v7.src).prefix(5) == ["manifest", "v2", "hls", "v7", "clear"])
            #expect(pathSegments(ofURL: v7.src).contains("avc1_hvc1_mp4a"))
            let dash = clear.sources[2]
            #expect(dash.profiles == "urn:mpeg:dash:profile:isoff-live:2011" && dash.type == "application/dash+xml" && dash.codecs == "avc1,hvc1,mp4a")
            #expect(pathSegments(ofURL: dash.src).prefix(5) == ["manifest", "v2", "dash", "live-baseurl", "clear"])
            #expect(URL(string: dash.src)?.lastPathComponent == "manifest.mpd")
            // The MP4s: no type, their real size, picture and bit rate; the file is served at the URL.
            let high = clear.sources[3], low = clear.sources[4]
            #expect(high.width == 960 && high.height == 540 && low.width == 416 && low.height == 234)
            for (source, name) in [(high, "high"), (low, "low")] {
                let file = try Fixture.media("mp4/\(name).mp4")
                #expect(source.size == file.count && source.duration == 12000 && source.codec == "H264")
                #expect(source.averageBitrate == file.count * 8 * 1000 / 12000)
                let served = try app.get(url: source.src)
                let servedBytes = try served.bytes()
                #expect(served.status == 200 && servedBytes == file)
            }
            // The JSON keys are the real API's.
            let raw = try app.playback("/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)").text()
            #expect(raw.contains(#""avg_bitrate":"#) && raw.contains(#""container":"MP4""#) && raw.contains(#""profiles":"#))
            // Protected videos: HLSe has its TS HLS only; FairPlay CMAF too (HLS v7 cbcs with the FairPlay keys, DASH cenc
            // with ClearKey); neither lists an MP4.
            #expect(Self.kinds(try app.video(Fixture.aesVideo)) == ["hls5"])
            let fairPlay = try app.video(Fixture.fairPlayVideo)
            #expect(Self.kinds(fairPlay) == ["hls5", "hls7", "dash"])
            #expect(fairPlay.sources[1].fairPlay == fairPlay.sources[0].fairPlay && fairPlay.sources[1].fairPlay != nil)
            #expect(pathSegments(ofURL: fairPlay.sources[2].src)[4] == "bccenc")
            let clearKey = try #require(fairPlay.sources[2].keySystems?["org.w3.clearkey"]?.licenseURL)
            #expect(pathSegments(ofURL: clearKey).prefix(3) == ["license", "v1", "clearkey"])
            // A video that repeats its asset lists no MP4 (the file holds one pass).
            #expect(Self.kinds(try app.video(Fixture.marathonVideo)) == ["hls5", "hls7", "dash"])
        }
    }

    @Test("an account's delivery_formats say which sources it lists and which manifests it serves; unknown names are refused")
    func deliveryFormats() async throws {
        try await withApp { app, _ in
            let before = try app.video(Fixture.clearVideo)
            let patched = try Self.patchAccount(app, ["delivery_formats": ["hls_ts", "dash"]])
            #expect(patched.status == 200, "\(patched.debugText)")
            let after = try app.video(Fixture.clearVideo)
            #expect(Self.kinds(after) == ["hls5", "dash"])
            // The v7 master handed out before is not served any more; the DASH one still is.
            try expectError(try app.get(url: before.sources[1].src), 404, "NOT_FOUND", nil)
            #expect(try app.get(url: after.sources[1].src).status == 200)
            for bad: Any in [["webm"], ["dash", "dash"], [String]()] {
                try expectError(try Self.patchAccount(app, ["delivery_formats": bad]), 400, "BAD_REQUEST", "INVALID_ACCOUNT")
            }
            #expect(try Self.patchAccount(app, ["delivery_formats": NSNull()]).status == 200)
            #expect(Self.kinds(try app.video(Fixture.clearVideo)) == ["hls5", "hls7", "dash", "mp4", "mp4"])
            // Without HEVC delivery the v2 sources carry the H.264 ladder alone.
            #expect(try Self.patchAccount(app, ["delivery_formats": ["hls_ts", "hls_cmaf", "dash", "mp4"]]).status == 200)
            let h264 = try app.video(Fixture.clearVideo)
            #expect(h264.sources[1].codecs == "avc1,mp4a" && pathSegments(ofURL: h264.sources[1].src).contains("avc1_mp4a"))
            let master = try MasterPlaylist(parsing: try app.get(url: h264.sources[1].src).text())
            #expect(master.variants.allSatisfy { $0.codecs?.hasPrefix("avc1.") == true } && master.variants.count == 3)
        }
    }

    @Test("a catalog file naming an unknown delivery format is refused at start with a sentence")
    func unknownFormatAtStart() async throws {
        try await Self.expectRefusedAtStart(accountSetting: #""delivery_formats": ["hls_ts", "smooth"]"#,
                                            saying: "delivery format 'smooth' is not one of hls_ts, hls_cmaf, dash, mp4, hevc")
    }

    /// Expects the default catalog, with `accountSetting` added to its FairPlay account, to be
    /// refused at load with an error that says `sentence`.
    static func expectRefusedAtStart(accountSetting: String, saying sentence: String) async throws {
        try await withTemporaryDirectory { directory in
            var text = try String(contentsOf: BackendConfiguration.defaultCatalogFile, encoding: .utf8)
            text = text.replacingOccurrences(of: #""fairplay": true,"#, with: #""fairplay": true, "# + accountSetting + ",")
            let file = directory.appendingPathComponent("catalog.json")
            try text.write(to: file, atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(at: directory.appendingPathComponent("media"),
                                                       withDestinationURL: BackendConfiguration.defaultCatalogFile.deletingLastPathComponent().appendingPathComponent("media"))
            #expect {
                try Catalog.load(from: file)
            } throws: { error in
                "\(error)".contains(sentence)
            }
        }
    }

    @Test("HLS v7: version 7, EXT-X-MAP on every media playlist, .m4s segments, the TS form's renditions and durations")
    func hlsPlaylists() async throws {
        try await withApp { app, _ in
            let video = try app.video(Fixture.clearVideo)
            let masterResponse = try app.get(url: video.sources[1].src)
            #expect(masterResponse.status == 200 && masterResponse.headers["Content-Type"] == "application/vnd.apple.mpegurl")
            let master = try MasterPlaylist(parsing: try masterResponse.text())
            let tsMaster = try app.master(Fixture.clearVideo)
            #expect(master.version == 7)
            // The H.264 ladder as in the TS form, then the HEVC one (hvc1, the codec string from its SPS); never HEVC in TS.
            #expect(master.variants.prefix(3).map(\.resolution) == tsMaster.variants.map(\.resolution))
            #expect(master.variants.prefix(3).map(\.codecs) == tsMaster.variants.map(\.codecs))
            #expect(master.variants.dropFirst(3).map(\.resolution) == tsMaster.variants.map(\.resolution))
            #expect(master.variants.dropFirst(3).compactMap(\.codecs) == ["hvc1.1.6.L60.90,mp4a.40.2", "hvc1.1.6.L63.90,mp4a.40.2", "hvc1.1.6.L90.90,mp4a.40.2"])
            #expect(tsMaster.variants.allSatisfy { $0.codecs?.hasPrefix("avc1.") == true })
            #expect(master.renditions.map(\.language) == tsMaster.renditions.map(\.language))
            for variant in master.variants { #expect(variant.averageBandwidth ?? 0 > 0 && variant.frameRate == 25) }
            for uri in master.variants.map(\.uri) + master.renditions.compactMap(\.uri) {
                let media = try app.mediaPlaylist(url: uri)
                #expect(media.version == 7 && media.playlistType == .vod && media.endList && media.segments.count == 6)
                #expect(abs(media.totalDuration - 12) < 0.05, "\(media.totalDuration)")
                let isText = master.renditions.contains { $0.uri == uri && $0.type == .subtitles }
                if isText {
                    #expect(media.segments.allSatisfy { $0.map == nil && $0.uri.contains(".vtt?") })
                } else {
                    let map = try #require(media.segments.first?.map)
                    #expect(map.uri.contains("/init.mp4?fastly_token="))
                    #expect(media.segments.allSatisfy { $0.uri.contains(".m4s?fastly_token=") })
                }
            }
        }
    }

    @Test("CMAF files: video/mp4 and audio/mp4, Repr-Digest and a strong ETag of the body, init then fragments in order")
    func segmentsAndDigests() async throws {
        try await withApp { app, _ in
            let master = try MasterPlaylist(parsing: try app.get(url: try app.video(Fixture.clearVideo).sources[1].src).text())
            for (uri, type) in [(master.variants[0].uri, "video/mp4"), (try #require(master.renditions.first?.uri), "audio/mp4")] {
                let media = try app.mediaPlaylist(url: uri)
                var previousEnd: UInt64?
                for (index, segment) in media.segments.enumerated() {
                    if let map = segment.map {
                        let initResponse = try app.get(url: map.uri)
                        #expect(initResponse.status == 200 && initResponse.headers["Content-Type"] == type)
                        #expect(Array(try initResponse.bytes()[4 ..< 8]) == Array("ftyp".utf8))
                        try Self.expectDigest(initResponse)
                    }
                    let response = try app.get(url: segment.uri)
                    #expect(response.status == 200 && response.headers["Content-Type"] == type)
                    try Self.expectDigest(response)
                    let fragment = try BoxReader.fragment(try response.bytes())
                    #expect(fragment.sequenceNumber == UInt32(index + 1))
                    if let previousEnd { #expect(fragment.baseDecodeTime == previousEnd, "segment \(index) of \(type)") }
                    previousEnd = fragment.baseDecodeTime + fragment.duration
                }
            }
        }
    }

    static func expectDigest(_ response: HTTPResponse, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let body = try response.bytes()
        let digest = ReprDigest(of: body)
        #expect(response.headers["Repr-Digest"] == digest.headerValue, sourceLocation: sourceLocation)
        #expect(response.headers["ETag"] == digest.etag && response.headers["ETag"]?.hasPrefix("W/") == false, sourceLocation: sourceLocation)
    }

    @Test("bad URLs: an edited token, another video's folder, a segment past the end, an unknown file: the documented 4xx with the error array")
    func badRequests() async throws {
        try await withApp { app, _ in
            let clear = try app.video(Fixture.clearVideo)
            let mpd = try app.get(url: clear.sources[2].src)
            let text = try mpd.text()
            let token = try #require(text.firstMatch(of: /fastly_token=([^"]+)"/)?.1)
            let base = try #require(text.firstMatch(of: /<BaseURL>([^<]+)<\/BaseURL>/)?.1)
            let rendition = try #require(text.firstMatch(of: /Representation id="([^"]+)"/)?.1)
            let segment = "\(base)\(rendition)/0.m4s?fastly_token=\(token)"
            #expect(try app.get(url: segment).status == 200)
            // An edited token.
            let edited = segment.replacingOccurrences(of: "fastly_token=N", with: "fastly_token=M")
            try expectError(try app.get(url: edited), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            // The folder token does not open another video's folder, nor climbs out of its own.
            let other = try app.video(Fixture.marathonVideo)
            let otherMPD = try app.get(url: other.sources[2].src).text()
            let otherBase = try #require(otherMPD.firstMatch(of: /<BaseURL>([^<]+)<\/BaseURL>/)?.1)
            let otherRendition = try #require(otherMPD.firstMatch(of: /Representation id="([^"]+)"/)?.1)
            try expectError(try app.get(url: "\(otherBase)\(otherRendition)/0.m4s?fastly_token=\(token)"), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            // (A path with dot segments is refused before any route, by the request parser.)
            #expect(throws: (any Error).self) { try app.get(url: "\(base)\(rendition)/../../x/0.m4s?fastly_token=\(token)") }
            // Past the end, not a segment name, the wrong encryption's folder: 404.
            try expectError(try app.get(url: "\(base)\(rendition)/6.m4s?fastly_token=\(token)"), 404, "NOT_FOUND", nil)
            try expectError(try app.get(url: "\(base)\(rendition)/-1.m4s?fastly_token=\(token)"), 404, "NOT_FOUND", nil)
            try expectError(try app.get(url: "\(base)\(rendition)/0.ts?fastly_token=\(token)"), 404, "NOT_FOUND", nil)
            // No token at all.
            try expectError(try app.get(url: "\(base)\(rendition)/0.m4s"), 403, "ACCESS_DENIED", "TOKEN_REQUIRED")
            // A v2 manifest of a FairPlay video (its CMAF needs cbcs) or with another codecs label: 404.
            let bad = clear.sources[1].src.replacingOccurrences(of: "avc1_hvc1_mp4a", with: "avc1_mp4a")
            try expectError(try app.get(url: bad), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("a video that repeats its asset: times keep increasing across passes, audio never overlaps, the MPD timeline and HLS durations add up")
    func repeatedPasses() async throws {
        try await withApp { app, _ in
            let video = try app.video(Fixture.marathonVideo)
            let catalogVideo = try #require(app.catalog.videos[Fixture.marathonVideo])
            #expect(catalogVideo.repeatCount == 600)
            let master = try MasterPlaylist(parsing: try app.get(url: video.sources[1].src).text())
            let videoMedia = try app.mediaPlaylist(url: master.variants[0].uri)
            let audioMedia = try app.mediaPlaylist(url: try #require(master.renditions.first { $0.type == .audio }?.uri))
            #expect(videoMedia.segments.count == 3600 && audioMedia.segments.count == 3600)
            #expect(abs(videoMedia.totalDuration - 7200) < 0.01, "\(videoMedia.totalDuration)")
            #expect(abs(audioMedia.totalDuration - videoMedia.totalDuration) < 0.05, "\(audioMedia.totalDuration)")
            #expect(!videoMedia.segments.contains { $0.discontinuity })
            // Video: pass 1 starts exactly 12 s after pass 0; the last segment is pass 599's.
            let v5 = try BoxReader.fragment(try app.get(url: videoMedia.segments[5].uri).bytes())
            let v6 = try BoxReader.fragment(try app.get(url: videoMedia.segments[6].uri).bytes())
            let last = try BoxReader.fragment(try app.get(url: videoMedia.segments[3599].uri).bytes())
            #expect(v6.baseDecodeTime == v5.baseDecodeTime + v5.duration)
            #expect(v6.baseDecodeTime == 1_080_000)
            #expect(last.baseDecodeTime == 599 * 1_080_000 + v5.baseDecodeTime)
            #expect(last.sequenceNumber == 3600)
            // Audio: a pass's last fragment ends by the time the next pass begins (its overhanging frame left out).
            let a5 = try BoxReader.fragment(try app.get(url: audioMedia.segments[5].uri).bytes())
            let a6 = try BoxReader.fragment(try app.get(url: audioMedia.segments[6].uri).bytes())
            let aLast = try BoxReader.fragment(try app.get(url: audioMedia.segments[3599].uri).bytes())
            #expect(a5.baseDecodeTime + a5.duration <= a6.baseDecodeTime)
            #expect(a6.baseDecodeTime - (a5.baseDecodeTime + a5.duration) < 1024)
            #expect(aLast.sampleCount == a5.sampleCount + 1)
            // DASH: the video timeline is one run; each audio set's covers all 3600 segments.
            let mpd = try app.get(url: video.sources[2].src).text()
            #expect(mpd.contains(#"<S t="7200" d="180000" r="3599"/>"#))
            #expect(mpd.contains(#"mediaPresentationDuration="PT7200.000S""#))
        }
    }

    @Test("CMAF HLS subtitle segments carry their timestamp map on the CMAF timeline, moved on by whole passes")
    func subtitleTimestampMap() async throws {
        try await withApp { app, _ in
            let video = try app.video(Fixture.marathonVideo)
            let master = try MasterPlaylist(parsing: try app.get(url: video.sources[1].src).text())
            let subtitles = try app.mediaPlaylist(url: try #require(master.renditions.first { $0.type == .subtitles }?.uri))
            #expect(subtitles.segments.count == 3600)
            let first = try app.get(url: subtitles.segments[0].uri)
            #expect(first.status == 200 && first.headers["Content-Type"] == "text/vtt; charset=utf-8")
            try Self.expectDigest(first)
            // The TS form maps LOCAL 0 to MPEGTS 126000 (the first video frame); the CMAF timeline starts at the earliest DTS, 118800.
            #expect(try first.text().contains("X-TIMESTAMP-MAP=MPEGTS:7200,LOCAL:00:00:00.000"))
            #expect(try app.get(url: subtitles.segments[6].uri).text().contains("X-TIMESTAMP-MAP=MPEGTS:1087200,LOCAL:00:00:00.000"))
        }
    }
}

/// Just enough of a media segment's boxes to check its numbering and times.
enum BoxReader {
    struct FragmentInfo {
        var sequenceNumber: UInt32
        var baseDecodeTime: UInt64
        var duration: UInt64
        var sampleCount: Int
    }

    static func fragment(_ bytes: [UInt8]) throws -> FragmentInfo {
        let moof = try #require(find("moof", in: bytes, range: 0 ..< bytes.count))
        let mfhd = try #require(find("mfhd", in: bytes, range: moof))
        let traf = try #require(find("traf", in: bytes, range: moof))
        let tfhd = try #require(find("tfhd", in: bytes, range: traf))
        let tfdt = try #require(find("tfdt", in: bytes, range: traf))
        let trun = try #require(find("trun", in: bytes, range: traf))
        let tfhdFlags = u32(bytes, tfhd.lowerBound) & 0xFF_FFFF
        var defaultDuration: UInt64 = 0
        var offset = tfhd.lowerBound + 8
        if tfhdFlags & 0x01 != 0 { offset += 8 }
        if tfhdFlags & 0x02 != 0 { offset += 4 }
        if tfhdFlags & 0x08 != 0 { defaultDuration = UInt64(u32(bytes, offset)) }
        let time = bytes[tfdt.lowerBound] == 1 ? UInt64(u32(bytes, tfdt.lowerBound + 4)) << 32 | UInt64(u32(bytes, tfdt.lowerBound + 8))
            : UInt64(u32(bytes, tfdt.lowerBound + 4))
        let flags = u32(bytes, trun.lowerBound) & 0xFF_FFFF
        let count = Int(u32(bytes, trun.lowerBound + 4))
        var cursor = trun.lowerBound + 8
        if flags & 0x01 != 0 { cursor += 4 }
        if flags & 0x04 != 0 { cursor += 4 }
        let fields = [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count
        var duration: UInt64 = 0
        for _ in 0 ..< count {
            duration += flags & 0x100 != 0 ? UInt64(u32(bytes, cursor)) : defaultDuration
            cursor += 4 * fields
        }
        return FragmentInfo(sequenceNumber: u32(bytes, mfhd.lowerBound + 4), baseDecodeTime: time, duration: duration, sampleCount: count)
    }

    /// The body range (after the 8-byte header) of the first box of `type` directly inside `range`.
    static func find(_ type: String, in bytes: [UInt8], range: Range<Int>) -> Range<Int>? {
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            let size = Int(u32(bytes, offset))
            guard size >= 8, offset + size <= range.upperBound else { return nil }
            if String(decoding: bytes[offset + 4 ..< offset + 8], as: UTF8.self) == type { return offset + 8 ..< offset + size }
            offset += size
        }
        return nil
    }

    static func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}

extension CMAFDeliveryTests {
    /// What DASH-IF's Interoperability Points (IOP 4.3, 3.2) and the live profile (ISO/IEC
    /// 23009-1 8.4) ask of a static MPD, checked element by element.
    @Test("the MPD is what DASH-IF asks of a static live-profile MPD: durations, one timeline per set, ids, codecs, languages, roles")
    func mpdFollowsDASHIF() async throws {
        try await withApp { app, _ in
            for id in [Fixture.clearVideo, Fixture.marathonVideo] {
                let video = try app.video(id)
                let document = try XMLDocument(data: Data(try app.get(url: video.sources[2].src).bytes()))
                let mpd = try #require(document.rootElement())
                #expect(mpd.name == "MPD" && mpd.uri == "urn:mpeg:dash:schema:mpd:2011")
                #expect(Self.attr(mpd, "type") == "static")
                #expect(Self.attr(mpd, "profiles") == "urn:mpeg:dash:profile:isoff-live:2011")
                let total = try #require(Self.seconds(Self.attr(mpd, "mediaPresentationDuration")))
                #expect(abs(total - Double(video.duration) / 1000) < 0.001)
                #expect(Self.seconds(Self.attr(mpd, "minBufferTime")) != nil)
                let periods = mpd.elements(forName: "Period")
                #expect(periods.count == 1)
                let sets = periods.first?.elements(forName: "AdaptationSet") ?? []
                #expect(sets.map { Self.attr($0, "contentType") } == ["video", "video", "audio", "audio", "audio", "text", "text", "text", "image"])
                // The H.264 set is the main one; the HEVC ladder is a set of its own.
                #expect(sets.prefix(2).map { Self.attr($0.elements(forName: "Role").first, "value") } == ["main", "alternate"])
                #expect(sets[1].elements(forName: "Representation").allSatisfy { Self.attr($0, "codecs")?.hasPrefix("hvc1.") == true })
                // The thumbnail sprites (DASH-IF IOP 6.2.6): one tile layout, a template of whole sprites.
                let image = try #require(sets.last)
                #expect(Self.attr(image, "mimeType") == "image/jpeg")
                let tile = image.elements(forName: "Representation").first?.elements(forName: "EssentialProperty").first
                #expect(Self.attr(tile, "schemeIdUri") == "http://dashif.org/guidelines/thumbnail_tile" && Self.attr(tile, "value") == "3x2")
                let spriteTemplate = image.elements(forName: "SegmentTemplate").first
                #expect(Self.attr(spriteTemplate, "duration") == "12" && Self.attr(spriteTemplate, "media")?.contains("tile_$Number$.jpg") == true)
                var ids = Set<String>()
                for set in sets.dropLast() {
                    let type = Self.attr(set, "contentType") ?? ""
                    #expect(Self.attr(set, "mimeType") == (type == "text" ? "text/vtt" : "\(type)/mp4"))
                    #expect(Self.attr(set.elements(forName: "Role").first, "schemeIdUri") == "urn:mpeg:dash:role:2011")
                    if type != "video" { #expect(Self.attr(set, "lang")?.isEmpty == false) }
                    let representations = set.elements(forName: "Representation")
                    #expect(!representations.isEmpty)
                    for representation in representations {
                        let rid = try #require(Self.attr(representation, "id"))
                        #expect(ids.insert(rid).inserted, "representation ids are unique in the period")
                        #expect(Int(Self.attr(representation, "bandwidth") ?? "") ?? 0 > 0)
                    }
                    guard type != "text" else { continue }
                    // Segments aligned and starting with a SAP of type 1; one template for the set.
                    #expect(Self.attr(set, "segmentAlignment") == "true")
                    #expect(Self.attr(set, "startWithSAP") == "1")
                    for representation in representations {
                        #expect(Self.attr(representation, "codecs")?.contains(".") == true)
                        if type == "video" {
                            for name in ["width", "height", "frameRate"] { #expect(Self.attr(representation, name) != nil) }
                        } else {
                            #expect(Self.attr(representation, "audioSamplingRate") == "48000")
                        }
                    }
                    if type == "audio" { #expect(!set.elements(forName: "AudioChannelConfiguration").isEmpty) }
                    let template = try #require(set.elements(forName: "SegmentTemplate").first)
                    let timescale = try #require(Double(Self.attr(template, "timescale") ?? ""))
                    #expect(Self.attr(template, "media")?.contains("$Number$") == true)
                    #expect(Self.attr(template, "initialization")?.contains("$RepresentationID$") == true)
                    // The timeline covers the whole presentation, without gaps or overlaps.
                    let entries = template.elements(forName: "SegmentTimeline").first?.elements(forName: "S") ?? []
                    var count = 0
                    var end: Double?
                    for entry in entries {
                        let d = try #require(Double(Self.attr(entry, "d") ?? ""))
                        let r = Double(Self.attr(entry, "r") ?? "0") ?? 0
                        let t = Self.attr(entry, "t").flatMap { Double($0) }
                        if let t, let end { #expect(t == end, "a gap or overlap in the \(type) timeline") }
                        end = (t ?? end ?? 0) + d * (r + 1)
                        count += Int(r) + 1
                    }
                    let catalogVideo = try #require(app.catalog.videos[id])
                    #expect(count == 6 * catalogVideo.repeatCount)
                    let offset = Double(Self.attr(template, "presentationTimeOffset") ?? "0") ?? 0
                    let covered = ((end ?? 0) - offset) / timescale
                    #expect(abs(covered - total) < 0.05, "\(type) timeline covers \(covered) s of \(total) s")
                }
            }
        }
    }

    /// An attribute's value by its name (FoundationXML's own lookup misses some on an element that declares namespaces).
    static func attr(_ element: XMLElement?, _ name: String) -> String? {
        element?.attributes?.first { $0.name == name || $0.localName == name }?.stringValue
    }

    /// `PT12.000S` in seconds (the forms the mock writes: hours, minutes, seconds).
    static func seconds(_ duration: String?) -> Double? {
        guard let duration, let match = duration.wholeMatch(of: /PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?/) else { return nil }
        return Double(match.1 ?? "0")! * 3600 + Double(match.2 ?? "0")! * 60 + Double(match.3 ?? "0")!
    }
}

extension CMAFDeliveryTests {
    @Test("the thumbnail track: in text_tracks as the real API shapes it, a WebVTT cue per tile over the whole video, sprites served, an HLS image stream and playlist")
    func thumbnailTrack() async throws {
        try await withApp { app, _ in
            // The raw entry: null id, language and asset, kind metadata, the tile size and a bit rate.
            let raw = try JSONSerialization.jsonObject(with: Data(try app.playback("/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)").bytes()))
            let tracks = try #require((raw as? [String: Any])?["text_tracks"] as? [[String: Any]])
            let entry = try #require(tracks.last)
            #expect(entry["id"] is NSNull && entry["srclang"] is NSNull && entry["asset_id"] is NSNull)
            #expect(entry["label"] as? String == "thumbnails" && entry["kind"] as? String == "metadata" && entry["mime_type"] as? String == "text/webvtt")
            #expect(entry["width"] as? Int == 160 && entry["height"] as? Int == 90 && (entry["bandwidth"] as? Int ?? 0) > 0)
            let sprite = try Fixture.media("thumbnails/sprite_000.jpg")
            for (id, passes) in [(Fixture.clearVideo, 1), (Fixture.marathonVideo, 600)] {
                let video = try app.video(id)
                let track = try #require(video.textTracks.first { $0.label == "thumbnails" })
                let vtt = try app.get(url: track.src)
                #expect(vtt.status == 200 && vtt.headers["Content-Type"] == "text/vtt; charset=utf-8")
                let text = try vtt.text()
                let cues = text.matches(of: /(\d\d:\d\d:\d\d\.\d\d\d) --> (\d\d:\d\d:\d\d\.\d\d\d)\n(\S+)#xywh=(\d+),(\d+),160,90/)
                #expect(cues.count == 6 * passes)
                #expect(cues.first.map { "\($0.1) \($0.2) \($0.4),\($0.5)" } == "00:00:00.000 00:00:02.000 0,0")
                #expect(cues.last.map { "\($0.2) \($0.4),\($0.5)" } == (passes == 1 ? "00:00:12.000 320,90" : "02:00:00.000 320,90"))
                // Every pass names the same sprite, which is the fixture's.
                #expect(Set(cues.map { String($0.3) }).count == 1)
                let served = try app.get(url: String(try #require(cues.first?.3)))
                let servedBytes = try served.bytes()
                #expect(served.status == 200 && served.headers["Content-Type"] == "image/jpeg" && servedBytes == sprite)
            }
            // HLS v7: the image stream (Roku's tag) and its image playlist of whole sprites.
            let marathon = try app.video(Fixture.marathonVideo)
            let master = try app.get(url: marathon.sources[1].src).text()
            let imageLine = try #require(master.split(separator: "\n").first { $0.hasPrefix("#EXT-X-IMAGE-STREAM-INF:") })
            #expect(imageLine.contains("RESOLUTION=160x90") && imageLine.contains(#"CODECS="jpeg""#))
            let uri = try #require(imageLine.firstMatch(of: /URI="([^"]+)"/)?.1)
            let images = try app.get(url: String(uri)).text()
            #expect(images.contains("#EXT-X-IMAGES-ONLY") && images.contains("#EXT-X-TILES:RESOLUTION=160x90,LAYOUT=3x2,DURATION=2.000"))
            let sprites = images.split(separator: "\n").filter { $0.hasPrefix("http") }
            #expect(sprites.count == 600 && images.components(separatedBy: "#EXTINF:12.000,").count == 601)
            #expect(try app.get(url: String(sprites[599])).status == 200)
            try expectError(try app.get(url: String(sprites[599]).replacingOccurrences(of: "tile_600.jpg", with: "tile_601.jpg")), 404, "NOT_FOUND", nil)
            try expectError(try app.get(url: String(sprites[0]).replacingOccurrences(of: "tile_1.jpg", with: "tile_01.jpg")), 404, "NOT_FOUND", nil)
        }
    }
}

extension CMAFDeliveryTests {
    @Test("a DRM video's MPD signals cenc as DASH-IF asks: default_KID as in every init segment's tenc, the ClearKey descriptor and license URL, the common pssh the init segments carry")
    func protectedMPD() async throws {
        try await withApp { app, _ in
            let video = try app.video(Fixture.fairPlayVideo)
            let mpd = try app.get(url: video.sources[2].src).text()
            let document = try XMLDocument(data: Data(mpd.utf8))
            let sets = try #require(document.rootElement()?.elements(forName: "Period").first?.elements(forName: "AdaptationSet"))
            let media = sets.filter { ["video", "audio"].contains(Self.attr($0, "contentType")) }
            #expect(media.count == 5)
            let base = try #require(mpd.firstMatch(of: /<BaseURL>([^<]+)<\/BaseURL>/)?.1)
            let token = try #require(mpd.firstMatch(of: /media="\$RepresentationID\$\/\$Number\$\.m4s\?fastly_token=([^"]+)"/)?.1)
            for set in media {
                let descriptors = set.elements(forName: "ContentProtection")
                #expect(descriptors.map { Self.attr($0, "schemeIdUri") } == ["urn:mpeg:dash:mp4protection:2011",
                                                                           "urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e",
                                                                           "urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b"])
                let kid = try #require(Self.attr(descriptors.first, "default_KID"))
                #expect(kid.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/) != nil)
                #expect(Self.attr(descriptors.first, "value") == "cenc")
                let laurl = descriptors[1].elements(forName: "dashif:laurl").first?.stringValue
                #expect(laurl == video.sources[2].keySystems?["org.w3.clearkey"]?.licenseURL)
                let pssh = try #require(descriptors[2].elements(forName: "cenc:pssh").first?.stringValue.flatMap { Data(base64Encoded: $0) })
                // Each representation's init segment: encv/enca, tenc with this KID, and the same pssh.
                for representation in set.elements(forName: "Representation") {
                    let id = try #require(Self.attr(representation, "id"))
                    let initSegment = try app.get(url: "\(base)\(id)/init.mp4?fastly_token=\(token)")
                    #expect(initSegment.status == 200)
                    let bytes = try initSegment.bytes()
                    let tenc = try #require(bytes.firstRange(of: Array("tenc".utf8)))
                    // tenc: version/flags (4), reserved, pattern, isProtected, IV size, then the KID.
                    let tencKID = Array(bytes[tenc.upperBound + 8 ..< tenc.upperBound + 24]).map { String(format: "%02x", $0) }.joined()
                    #expect(tencKID == kid.replacingOccurrences(of: "-", with: ""))
                    #expect(bytes[tenc.upperBound + 7] == 8, "cenc: 8-byte IVs per sample")
                    #expect(bytes.firstRange(of: Array(pssh)) != nil, "the init segment carries the MPD's pssh")
                    #expect(bytes.firstRange(of: Array("encv".utf8)) != nil || bytes.firstRange(of: Array("enca".utf8)) != nil)
                }
            }
        }
    }
}

extension CMAFDeliveryTests {
    @Test("CMAF segments are made once into the data directory's cache and served as files: a restart reuses them, a deleted cache is made again, the same bytes; other keys and media get other paths")
    func segmentFilesInTheCache() async throws {
        try await withApp { app, _ in
            try await withTemporaryDirectory { directory in
                let video = try #require(app.catalog.videos[Fixture.marathonVideo])
                let ref = video.videoRenditions[0]
                let packager = CMAFPackager(cache: MediaFileCache(directory: directory))
                let first = try packager.segment(video, ref, index: 7, .clear)
                let bytes = try Data(contentsOf: URL(fileURLWithPath: first.path))
                #expect(first.path.hasPrefix(directory.path + "/cmaf/v\(CMAFPackager.formatVersion)/") && first.path.hasSuffix("/x600/clear/video-0/7.m4s"))
                #expect(UInt64(bytes.count) == first.size && ReprDigest(of: bytes) == first.digest)
                #expect(try packager.segment(video, ref, index: 7, .clear) == first)
                // A restart: a new packager on the same folder finds the file (and reads its digest from it).
                let restarted = CMAFPackager(cache: MediaFileCache(directory: directory))
                #expect(try restarted.segment(video, ref, index: 7, .clear) == first)
                // The cache removed while serving: made again, the same bytes.
                try FileManager.default.removeItem(at: directory.appendingPathComponent("cmaf"))
                let again = try packager.segment(video, ref, index: 7, .clear)
                let madeAgain = try Data(contentsOf: URL(fileURLWithPath: again.path))
                #expect(again == first && madeAgain == bytes)
                // Another encryption, another repeat count: other folders.
                let key = try #require(app.contentKeys[Fixture.fairPlayVideo])
                let fairPlay = try #require(app.catalog.videos[Fixture.fairPlayVideo])
                let cbcs = try packager.segment(fairPlay, fairPlay.videoRenditions[0], index: 1, .cbcs(key))
                #expect(cbcs.path.contains("/x1/cbcs-\(key.keyID)/video-0/") && cbcs.digest != first.digest)
            }
        }
    }
}

extension CMAFDeliveryTests {
    /// POSTs a ClearKey request for the FairPlay video's DASH key, with `headers`.
    static func clearKey(_ app: MockBackendApp, type: String = "temporary", headers: [(String, String)] = []) throws -> HTTPResponse {
        let dash = try #require(try app.video(Fixture.fairPlayVideo).sources.first { $0.isDASH })
        let url = try #require(dash.keySystems?["org.w3.clearkey"]?.licenseURL)
        let key = try #require(app.contentKeys[Fixture.fairPlayVideo]?.commonEncryptionKey)
        let kid = ClearKeyRequest.base64URL(key.keyIDBytes)
        return try app.request("POST", try app.target(of: url), headers: [("Content-Type", "application/json")] + headers,
                               body: Array(#"{"kids":["\#(kid)"],"type":"\#(type)"}"#.utf8))
    }

    @Test("ClearKey licenses follow the FairPlay policy: a rental's terms in headers, the token's device limit by X-Device-ID, offline needing its terms, the request stored, revocation")
    func clearKeyPolicy() async throws {
        try await withApp { app, _ in
            try app.registerPlaybackKey()
            // A rental, offline: its end and play window come back as headers.
            let rental = try Self.clearKey(app, type: "persistent-license", headers: LicenseRoutesTests.rental(app, days: 2, playHours: 6))
            #expect(rental.status == 200, "\(rental.debugText)")
            #expect(rental.headers["X-License-Rental-End"] != nil && rental.headers["X-License-Play-Duration"] == "21600")
            #expect(rental.headers["Cache-Control"] == "no-store")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(rental.bytes())) as? [String: Any])
            #expect(json["type"] as? String == "persistent-license")
            // Offline without its terms is refused, as for FairPlay.
            try expectError(try Self.clearKey(app, type: "persistent-license"), 400, "BAD_REQUEST", "CRT_REQUIRED")
            // A token with a user and one device slot: the device must say who it is, and a second one is refused.
            let token = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","uid":"ana","dlimit":1,"exp":\#(TestKeys.now + 3600)}"#)
            try expectError(try Self.clearKey(app, headers: [("BCOV-Auth", token)]), 400, "BAD_REQUEST", "DEVICE_ID_REQUIRED")
            try expectError(try Self.clearKey(app, headers: [("BCOV-Auth", token), ("X-Device-ID", "bad id!")]), 400, "BAD_REQUEST", "INVALID_DEVICE_ID")
            #expect(try Self.clearKey(app, headers: [("BCOV-Auth", token), ("X-Device-ID", "laptop")]).status == 200)
            #expect(try Self.clearKey(app, headers: [("BCOV-Auth", token), ("X-Device-ID", "laptop")]).status == 200)
            try expectError(try Self.clearKey(app, headers: [("BCOV-Auth", token), ("X-Device-ID", "tablet")]),
                            403, "ACCESS_DENIED", "DENIED_BY_DEVICE_LIMITING")
            // The licenses are the store's, listed by the admin API like FairPlay's.
            let listed = try JSONSerialization.jsonObject(with: Data(try app.request("GET", "/_admin/v1/licenses?user=ana").bytes())) as? [String: Any]
            let licenses = try #require(listed?["licenses"] as? [[String: Any]])
            // Two acquisitions from the laptop, each a license (no Idempotency-Key), as FairPlay acquisitions are.
            #expect(licenses.count == 2 && licenses.allSatisfy { $0["device_id"] as? String == "laptop" && $0["video_id"] as? String == Fixture.fairPlayVideo })
            // Revoked: listed so; a ClearKey request is always an acquisition (EME renews nothing
            // the server can tell apart), so the laptop's next session acquires a new license
            // under the same rules, and the tablet is still over the limit.
            let id = try #require(licenses.first?["id"] as? String)
            #expect(try app.request("POST", "/_admin/v1/licenses/\(id)/revoke").status == 200)
            let revoked = try JSONSerialization.jsonObject(with: Data(try app.request("GET", "/_admin/v1/licenses/\(id)").bytes())) as? [String: Any]
            #expect(revoked?["state"] as? String == "revoked", "\(String(describing: revoked))")
            let after = try Self.clearKey(app, headers: [("BCOV-Auth", token), ("X-Device-ID", "laptop")])
            #expect(after.status == 200 && after.headers["X-License-ID"] != id)
            try expectError(try Self.clearKey(app, headers: [("BCOV-Auth", token), ("X-Device-ID", "tablet")]),
                            403, "ACCESS_DENIED", "DENIED_BY_DEVICE_LIMITING")
        }
    }
}
