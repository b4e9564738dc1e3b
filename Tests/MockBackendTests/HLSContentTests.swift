import Foundation
import TestKit
import MicroHTTP
@testable import MockBackend
import Testing
import WireModels

@Suite("HLS playlists and segments")
struct HLSContentTests {
    @Test("the master has 3 variants with every attribute a player needs")
    func masterVariants() async throws {
        try await withApp { app, _ in
            let masterURL = try app.masterURL(Fixture.clearVideo)
            let response = try app.get(url: masterURL)
            #expect(response.headers["Content-Type"] == "application/vnd.apple.mpegurl")
            let text = try response.text()
            let master = try MasterPlaylist(parsing: text)
            #expect(master.version == 5)
            #expect(master.independentSegments)
            #expect(master.sessionKeys.isEmpty)
            #expect(master.variants.count == 3)
            #expect(master.variants.map { $0.resolution?.width } == [416, 640, 960])
            #expect(master.variants.map { $0.resolution?.height } == [234, 360, 540])
            for variant in master.variants {
                #expect(variant.bandwidth > 0)
                let average = try #require(variant.averageBandwidth)
                #expect(average > 0 && average <= variant.bandwidth)
                let codecs = try #require(variant.codecs).split(separator: ",")
                #expect(codecs.count == 2)
                #expect(codecs.first?.hasPrefix("avc1.") == true)
                #expect(codecs.last == "mp4a.40.2")
                #expect(variant.frameRate == 25)
                #expect(variant.audio == "audio")
                #expect(variant.subtitles == "subs")
                #expect(variant.closedCaptions == "NONE")
                #expect(variant.uri.hasPrefix(app.baseURL + "/manifest/v1/hls/v5/clear/\(Fixture.northwind)/"))
                #expect(Self.lastPathPart(variant.uri) == "rendition.m3u8")
                #expect(URLToken.expiry(ofURL: variant.uri) != nil)
            }
            #expect(master.variants.map(\.bandwidth) == master.variants.map(\.bandwidth).sorted())
            let streamInfLines = text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
            #expect(streamInfLines.count == 3)
            for line in streamInfLines {
                for attribute in ["BANDWIDTH=", "AVERAGE-BANDWIDTH=", "CODECS=\"", "RESOLUTION=", "FRAME-RATE=", "AUDIO=\"audio\"",
                                  "SUBTITLES=\"subs\"", "CLOSED-CAPTIONS=NONE"] {
                    #expect(line.contains(attribute), "\(attribute) missing in \(line)")
                }
            }
        }
    }

    static func lastPathPart(_ url: String) -> String { pathSegments(ofURL: url).last ?? "" }

    @Test("the master has 3 audio renditions (en/fr/es) and 3 subtitle renditions, one DEFAULT=YES each, and every group exists")
    func masterRenditions() async throws {
        try await withApp { app, _ in
            let master = try app.master(Fixture.clearVideo)
            let audio = master.renditions.filter { $0.type == .audio }
            #expect(audio.map(\.language) == ["en", "fr", "es"])
            #expect(audio.map(\.name) == ["English", "Français", "Español"])
            #expect(audio.filter(\.isDefault).count == 1)
            #expect(audio.first?.isDefault == true)
            #expect(audio.allSatisfy { $0.autoselect && $0.channels == "2" && $0.groupID == "audio" && $0.uri != nil })
            let subtitles = master.renditions.filter { $0.type == .subtitles }
            #expect(subtitles.map(\.language) == ["en", "fr", "de"])
            #expect(subtitles.filter(\.isDefault).count == 1)
            #expect(subtitles.allSatisfy { $0.autoselect && $0.groupID == "subs" && $0.uri != nil })
            #expect(master.renditions.count == 6)
            for variant in master.variants {
                #expect(!master.renditions(inGroup: try #require(variant.audio), type: .audio).isEmpty)
                #expect(!master.renditions(inGroup: try #require(variant.subtitles), type: .subtitles).isEmpty)
            }
            for rendition in master.renditions {
                let uri = try #require(rendition.uri)
                #expect(VideoJSONTests.matches(uri, VideoJSONTests.escaped(app.baseURL + "/manifest/v1/hls/v5/clear/\(Fixture.northwind)/")
                    + VideoJSONTests.uuidPattern + "/" + VideoJSONTests.uuidPattern + "/2s/rendition\\.m3u8\\?fastly_token=[A-Za-z0-9%._~-]+"))
            }
            let uris = master.renditions.compactMap(\.uri) + master.variants.map(\.uri)
            #expect(Set(uris.map { pathSegments(ofURL: $0)[7] }).count == 9, "each rendition has its own uuid")
        }
    }

    @Test("a video with one audio language and no manifest subtitles lists exactly that", arguments: [
        (Fixture.englishOnlyVideo, ["en"]), ("6415818918107", ["en", "fr", "es"]),
    ] as [(String, [String?])])
    func withoutSubtitles(id: String, languages: [String?]) async throws {
        try await withApp { app, _ in
            let response = try app.get(url: try app.masterURL(id))
            let text = try response.text()
            let master = try MasterPlaylist(parsing: text)
            #expect(master.renditions.filter { $0.type == .audio }.map(\.language) == languages)
            #expect(master.renditions.filter { $0.type == .subtitles }.isEmpty)
            #expect(master.variants.count == 3)
            #expect(master.variants.allSatisfy { $0.subtitles == nil && $0.audio == "audio" })
            #expect(!text.contains("SUBTITLES="))
            #expect(!text.contains("TYPE=SUBTITLES"))
        }
    }

    @Test("media playlists: VOD, ENDLIST, MEDIA-SEQUENCE 0, TARGETDURATION at least every EXTINF, absolute signed segment URLs")
    func mediaPlaylists() async throws {
        try await withApp { app, _ in
            let master = try app.master(Fixture.clearVideo)
            let urls = master.variants.map(\.uri) + master.renditions.compactMap(\.uri)
            #expect(urls.count == 9)
            for url in urls {
                let response = try app.get(url: url)
                #expect(response.headers["Content-Type"] == "application/vnd.apple.mpegurl")
                let text = try response.text()
                let playlist = try MediaPlaylist(parsing: text)
                #expect(playlist.playlistType == .vod)
                #expect(playlist.endList)
                #expect(playlist.mediaSequence == 0)
                #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:0\n"))
                #expect(text.contains("#EXT-X-PLAYLIST-TYPE:VOD\n"))
                #expect(text.hasSuffix("#EXT-X-ENDLIST\n"))
                #expect(playlist.segments.count == 6)
                #expect(abs(playlist.totalDuration - 12) < 0.01)
                #expect(!text.contains("#EXT-X-KEY"))
                for segment in playlist.segments {
                    #expect(Int(segment.duration.rounded()) <= playlist.targetDuration)
                    #expect(!segment.discontinuity)
                }
                let isSubtitles = master.renditions.contains { $0.uri == url && $0.type == .subtitles }
                let names = playlist.segments.map { HLSContentTests.lastPathPart($0.uri) }
                #expect(names == (0..<6).map { "\($0).\(isSubtitles ? "vtt" : "ts")" })
                #expect(playlist.segments.allSatisfy {
                    $0.uri.hasPrefix(app.baseURL + "/media/v1/hls/v5/clear/\(Fixture.northwind)/") && URLToken.expiry(ofURL: $0.uri) != nil
                })
            }
        }
    }

    @Test("the 2-hour rendition has 3600 segments numbered 0…3599 with a DISCONTINUITY at every 6th segment but the first")
    func marathon() async throws {
        try await withApp { app, _ in
            let master = try app.master(Fixture.marathonVideo)
            for url in [master.variants[2].uri, try #require(master.renditions.first { $0.type == .audio }?.uri)] {
                let playlist = try app.mediaPlaylist(url: url)
                #expect(playlist.segments.count == 3600)
                let discontinuities = playlist.segments.indices.filter { playlist.segments[$0].discontinuity }
                #expect(discontinuities == Array(stride(from: 6, to: 3600, by: 6)))
                let numbers = playlist.segments.map { Int(HLSContentTests.lastPathPart($0.uri).dropLast(3)) }
                #expect(numbers == (0..<3600).map { $0 })
                #expect(playlist.endList && playlist.playlistType == .vod && playlist.mediaSequence == 0)
            }
            // The last segment exists; it serves the last fixture file.
            let last = try #require(try app.mediaPlaylist(url: master.variants[0].uri).segments.last)
            let response = try app.get(url: last.uri)
            #expect(response.status == 200)
            #expect(try response.bytes() == (try Fixture.media("video/416x234/seg_005.ts")))
        }
    }

    @Test("generated playlists and video objects are kept for their time bucket only: a clock minutes on keeps one bucket's worth")
    func responseCacheDropsPastBuckets() async throws {
        try await withTemporaryDirectory { directory in
            // A clock that stands still (10 s into a minute): only the test moves it to a new bucket.
            let app = try MockBackendApp(configuration: BackendConfiguration(dataDirectory: directory), baseURL: testBaseURL,
                                         clock: BackendClock(fixedAt: Date(timeIntervalSince1970: 1_800_000_010)), logger: quietLogger)
            func fetchAll() throws {
                let master = try app.master(Fixture.marathonVideo)
                for url in master.variants.map(\.uri) + master.renditions.compactMap(\.uri) {
                    #expect(try app.get(url: url).status == 200)
                }
            }
            try fetchAll()
            let oneBucket = app.cache.count
            #expect(oneBucket >= 8, "the video, its master and its media playlists")
            try fetchAll()
            #expect(app.cache.count == oneBucket, "the same bucket: served from the cache")
            for minute in 1...5 {
                app.clock.offset = Double(minute) * 60  // a new bucket (60 s with the default token lifetimes)
                try fetchAll()
                #expect(app.cache.count == oneBucket, "minute \(minute): the past buckets' bodies are gone")
            }
        }
    }

    @Test("the 2-hour video lasts 7200 s and its audio timeline stays aligned with the video across all 600 discontinuities")
    func marathonTimelines() async throws {
        try await withApp { app, _ in
            let master = try app.master(Fixture.marathonVideo)
            let video = try app.mediaPlaylist(url: master.variants[0].uri)
            #expect(abs(video.totalDuration - 7200) < 0.01)
            // Players line renditions up by discontinuity sequence and EXTINF sums: where each
            // pass starts must agree between video and audio, or the audio drifts away.
            func passStarts(_ playlist: MediaPlaylist) -> [Double] {
                var starts: [Double] = [], elapsed = 0.0
                for segment in playlist.segments {
                    if segment.discontinuity { starts.append(elapsed) }
                    elapsed += segment.duration
                }
                return starts
            }
            let videoStarts = passStarts(video)
            for rendition in master.renditions where rendition.type == .audio {
                let audio = try app.mediaPlaylist(url: try #require(rendition.uri))
                let audioStarts = passStarts(audio)
                #expect(audioStarts.count == videoStarts.count)
                let drift = zip(videoStarts, audioStarts).map { abs($0 - $1) }.max() ?? 0
                #expect(drift < 0.1, "\(rendition.language ?? "?") audio starts the last pass \(drift) s away from the video (total \(audio.totalDuration) s)")
            }
        }
    }

    @Test("AES-128 renditions have one EXT-X-KEY, METHOD=AES-128 with a signed key URI and a 16-byte IV; subtitles have none")
    func aesKeys() async throws {
        try await withApp { app, _ in
            let master = try app.master(Fixture.aesVideo)
            let uuid = pathSegments(ofURL: master.variants[0].uri)[6]
            var keyURIs: Set<String> = []
            for url in master.variants.map(\.uri) + master.renditions.filter({ $0.type == .audio }).compactMap(\.uri) {
                let text = try app.get(url: url).text()
                let playlist = try MediaPlaylist(parsing: text)
                #expect(text.components(separatedBy: "#EXT-X-KEY:").count - 1 == 1)
                let key = try #require(playlist.segments.first?.key)
                #expect(key.method == .aes128)
                let uri = try #require(key.uri)
                #expect(VideoJSONTests.matches(uri, VideoJSONTests.escaped("\(app.baseURL)/license/v1/aes128/\(Fixture.northwind)/\(uuid)/")
                    + VideoJSONTests.uuidPattern + "\\?fastly_token=[A-Za-z0-9%._~-]+"), "\(uri)")
                let iv = try #require(key.iv)
                #expect(VideoJSONTests.matches(iv, "0x[0-9a-fA-F]{32}"), "\(iv)")
                #expect(key.ivBytes?.count == 16)
                #expect(key.keyFormat == nil || key.keyFormat == "identity")
                #expect(playlist.keyInEffect(forSegmentAt: 5) == key)
                keyURIs.insert(String(uri.prefix { $0 != "?" }))
            }
            #expect(keyURIs.count == 1, "one key for the whole video")
            for url in master.renditions.filter({ $0.type == .subtitles }).compactMap(\.uri) {
                #expect(!(try app.get(url: url).text().contains("#EXT-X-KEY")))
            }
        }
    }

    @Test("subtitle segments are WebVTT with the MPEG-TS timestamp map")
    func subtitleSegments() async throws {
        try await withApp { app, _ in
            let master = try app.master(Fixture.clearVideo)
            for rendition in master.renditions where rendition.type == .subtitles {
                let playlist = try app.mediaPlaylist(url: try #require(rendition.uri))
                for segment in playlist.segments {
                    let response = try app.get(url: segment.uri)
                    #expect(response.status == 200)
                    #expect(response.headers["Content-Type"] == "text/vtt; charset=utf-8")
                    let text = try response.text()
                    #expect(text.hasPrefix("WEBVTT"))
                    #expect(text.contains("X-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000"))
                }
            }
        }
    }

    @Test("clear segments are the fixture files, with an ETag")
    func clearSegments() async throws {
        try await withApp { app, _ in
            let master = try app.master(Fixture.clearVideo)
            let video = try app.mediaPlaylist(url: master.variants[1].uri)
            let response = try app.get(url: video.segments[3].uri)
            #expect(response.headers["Content-Type"] == "video/mp2t")
            #expect(response.headers["ETag"] != nil)
            #expect(try response.bytes() == (try Fixture.media("video/640x360/seg_003.ts")))
            let french = try app.mediaPlaylist(url: try #require(master.renditions.first { $0.language == "fr" && $0.type == .audio }?.uri))
            #expect(try app.get(url: french.segments[0].uri).bytes() == (try Fixture.media("audio/fr/seg_000.ts")))
        }
    }

    @Test("segment numbers out of range, wrong extensions and other videos' renditions are 404, even when correctly signed")
    func segmentNotFound() async throws {
        try await withApp { app, directory in
            let secret = try urlSigningSecret(dataDirectory: directory)
            let now = app.clock.now()
            let master = try app.master(Fixture.clearVideo)
            let videoSegment = try app.mediaPlaylist(url: master.variants[0].uri).segments[0].uri
            let subtitleURL = try #require(master.renditions.first { $0.type == .subtitles }?.uri)
            let subtitleSegment = try app.mediaPlaylist(url: subtitleURL).segments[0].uri
            let videoDir = URLToken.path(ofURL: videoSegment).split(separator: "/").dropLast().joined(separator: "/")
            let subtitleDir = URLToken.path(ofURL: subtitleSegment).split(separator: "/").dropLast().joined(separator: "/")

            // The signing helper is right: a correctly signed known segment is served.
            #expect(try app.request("GET", signedTarget("/\(videoDir)/5.ts", secret: secret, now: now)).status == 200)
            #expect(try app.request("GET", signedTarget("/\(subtitleDir)/5.vtt", secret: secret, now: now)).status == 200)

            for name in ["6.ts", "999999999.ts", "1000000000.ts", "0.vtt", "0.mp4", "0.TS", "-1.ts", ".ts", "ts", "0", "a.ts", "0.ts.ts"] {
                let response = try app.request("GET", signedTarget("/\(videoDir)/\(name)", secret: secret, now: now))
                try expectError(response, 404, "NOT_FOUND", nil)
            }
            for name in ["6.vtt", "0.ts", "0.webvtt"] {
                try expectError(try app.request("GET", signedTarget("/\(subtitleDir)/\(name)", secret: secret, now: now)), 404, "NOT_FOUND", nil)
            }

            // A rendition uuid of another video, under this video's path.
            let other = try app.master(Fixture.streamOnlyVideo)
            let foreignRendition = pathSegments(ofURL: other.variants[0].uri)[7]
            var parts = videoDir.split(separator: "/").map(String.init)
            parts[7] = foreignRendition
            try expectError(try app.request("GET", signedTarget("/\(parts.joined(separator: "/"))/0.ts", secret: secret, now: now)),
                            404, "NOT_FOUND", nil)
            // This video under another protection or account.
            var wrongProtection = videoDir.split(separator: "/").map(String.init)
            wrongProtection[4] = "aes128"
            try expectError(try app.request("GET", signedTarget("/\(wrongProtection.joined(separator: "/"))/0.ts", secret: secret, now: now)),
                            404, "NOT_FOUND", nil)
            var wrongAccount = videoDir.split(separator: "/").map(String.init)
            wrongAccount[5] = Fixture.contoso
            try expectError(try app.request("GET", signedTarget("/\(wrongAccount.joined(separator: "/"))/0.ts", secret: secret, now: now)),
                            404, "NOT_FOUND", nil)

            // A rendition playlist of another video, and a master with the wrong segment label.
            let masterPath = URLToken.path(ofURL: try app.masterURL(Fixture.clearVideo))
            let foreignPlaylist = masterPath.replacingOccurrences(of: "/2s/master.m3u8", with: "/\(foreignRendition)/2s/rendition.m3u8")
            try expectError(try app.request("GET", signedTarget(foreignPlaylist, secret: secret, now: now)), 404, "NOT_FOUND", nil)
            let wrongLabel = masterPath.replacingOccurrences(of: "/2s/", with: "/4s/")
            try expectError(try app.request("GET", signedTarget(wrongLabel, secret: secret, now: now)), 404, "NOT_FOUND", nil)
        }
    }

    @Test("the marathon's segment 3599 exists and 3600 does not")
    func marathonBounds() async throws {
        try await withApp { app, directory in
            let secret = try urlSigningSecret(dataDirectory: directory)
            let first = try app.mediaPlaylist(url: try app.master(Fixture.marathonVideo).variants[0].uri).segments[0].uri
            let dir = URLToken.path(ofURL: first).split(separator: "/").dropLast().joined(separator: "/")
            #expect(try app.request("GET", signedTarget("/\(dir)/3599.ts", secret: secret, now: app.clock.now())).status == 200)
            try expectError(try app.request("GET", signedTarget("/\(dir)/3600.ts", secret: secret, now: app.clock.now())), 404, "NOT_FOUND", nil)
        }
    }
}
