import CurlTransfer
import Foundation
@testable import OfflineSDK
import Testing
import WireModels

@Suite("Download rules (pure)")
struct RulesTests {
    static let master = try! MasterPlaylist(parsing: """
        #EXTM3U
        #EXT-X-VERSION:5
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",LANGUAGE="en",NAME="English",DEFAULT=NO,AUTOSELECT=YES,URI="a/en.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",LANGUAGE="fr-CA",NAME="Français",DEFAULT=YES,AUTOSELECT=YES,URI="a/fr.m3u8"
        #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",LANGUAGE="de",NAME="Deutsch",DEFAULT=NO,AUTOSELECT=NO,URI="s/de.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=900000,CODECS="avc1.4d401e,mp4a.40.2",RESOLUTION=640x360,AUDIO="aud",SUBTITLES="subs"
        v/640.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=400000,CODECS="avc1.4d401e,mp4a.40.2",RESOLUTION=416x234,AUDIO="aud",SUBTITLES="subs"
        v/416.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.2",AUDIO="aud"
        v/audio-only.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS="avc1.4d401f,mp4a.40.2",RESOLUTION=960x540,AUDIO="aud",SUBTITLES="subs"
        v/960.m3u8

        """)

    @Test("bitrate: the largest variant at or below the request; none or too low takes the lowest with video",
          arguments: [(nil, 400_000), (399_999, 400_000), (400_000, 400_000), (899_999, 400_000), (900_000, 900_000),
                      (1_999_999, 900_000), (5_000_000, 2_000_000), (64_000, 400_000)] as [(Int?, Int)])
    func bitrate(requested: Int?, expected: Int) {
        #expect(RenditionChooser.variant(in: Self.master, requestedBitrate: requested)?.bandwidth == expected)
    }

    @Test("no bitrate, named: a download takes the lowest variant with video, an estimate the largest")
    func noBitrate() {
        #expect(RenditionChooser.largest(in: Self.master)?.bandwidth == 2_000_000)
        func name(_ rule: VariantRule) -> String {
            switch rule {
            case .atOrBelow(let bitrate): "at or below \(bitrate)"
            case .lowestWithVideo: "lowest with video"
            case .largest: "largest"
            case .qualifiers: "qualifiers"
            }
        }
        #expect(name(.bitrate(nil, otherwise: .lowestWithVideo)) == "lowest with video")
        #expect(name(.bitrate(nil, otherwise: .largest)) == "largest")
        #expect(name(.bitrate(900_000, otherwise: .largest)) == "at or below 900000")
        #expect(name(DownloadSpec(mediaSelections: nil, parameters: DownloadParameters()).variant) == "lowest with video")
    }

    @Test("languages: default audio when none asked; prefix matching; unknown languages are errors")
    func languages() throws {
        let variant = try #require(RenditionChooser.variant(in: Self.master, requestedBitrate: nil))
        let defaults = try RenditionChooser.tracks(master: Self.master, variant: variant, audioLanguages: [], subtitleLanguages: [])
        #expect(defaults.map(\.kind) == [.video, .audio])
        #expect(defaults[1].language == "fr-CA", "the DEFAULT=YES rendition")
        let chosen = try RenditionChooser.tracks(master: Self.master, variant: variant, audioLanguages: ["EN", "fr", "en"], subtitleLanguages: ["de"])
        #expect(chosen.map(\.kind) == [.video, .audio, .audio, .subtitles])
        #expect(chosen.compactMap(\.language) == ["en", "fr-CA", "de"])
        let noSpanish = #expect(throws: OfflineVideoError.self) {
            try RenditionChooser.tracks(master: Self.master, variant: variant, audioLanguages: ["es"], subtitleLanguages: [])
        }
        #expect(noSpanish?.code == .invalidParameter)
        #expect(noSpanish?.reason == .noMatchingRendition)
        #expect(throws: OfflineVideoError.self) {
            try RenditionChooser.tracks(master: Self.master, variant: variant, audioLanguages: [], subtitleLanguages: ["ja"])
        }
    }

    @Test("license parameters: purchase or a positive rental; renewals take no bitrate")
    func parameters() throws {
        #expect(try ParameterRules.validateNewLicense(.purchase) == .purchase)
        #expect(try ParameterRules.validateNewLicense(.rental(duration: 60, playDuration: 30)) == .rental(duration: 60, playDuration: 30))
        for bad: RequestedLicense? in [nil, .rental(duration: 0), .rental(duration: -5), .rental(duration: 60, playDuration: 0),
                                    .rental(duration: .infinity), RequestedLicense(kind: .rental, playDuration: 60),
                                    RequestedLicense(kind: .purchase, rentalDuration: 60), RequestedLicense(kind: .purchase, playDuration: 60)] {
            let error = #expect(throws: OfflineVideoError.self) { try ParameterRules.validateNewLicense(bad) }
            #expect(error?.code == .invalidParameter)
            #expect(error?.reason == .invalidLicenseParameters)
        }
        #expect(throws: OfflineVideoError.self) {
            try ParameterRules.validateRenewal(DownloadParameters(requestedBitrate: 100, license: .purchase))
        }
        #expect(try ParameterRules.validateRenewal(DownloadParameters(license: .purchase)) == .purchase)
        #expect(throws: OfflineVideoError.self) { try ParameterRules.validateBitrate(0) }
    }

    @Test("license terms are a struct that reads what SDKs before it stored (an enum) and round-trips")
    func requestedLicenseCoding() throws {
        let decoder = JSONDecoder()
        #expect(try decoder.decode(RequestedLicense.self, from: Data(#"{"purchase":{}}"#.utf8)) == .purchase)
        #expect(try decoder.decode(RequestedLicense.self, from: Data(#"{"rental":{"duration":86400}}"#.utf8)) == .rental(duration: 86400))
        #expect(try decoder.decode(RequestedLicense.self, from: Data(#"{"rental":{"duration":86400,"playDuration":3600}}"#.utf8))
                    == .rental(duration: 86400, playDuration: 3600))
        let stored = try decoder.decode(DownloadParameters.self, from: Data(#"{"requestedBitrate":900000,"license":{"rental":{"duration":60}}}"#.utf8))
        #expect(stored == DownloadParameters(requestedBitrate: 900_000, license: .rental(duration: 60)))
        for terms in [RequestedLicense.purchase, .rental(duration: 60), .rental(duration: 60, playDuration: 30)] {
            #expect(try decoder.decode(RequestedLicense.self, from: JSONEncoder().encode(terms)) == terms)
        }
        #expect(throws: DecodingError.self) { try decoder.decode(RequestedLicense.self, from: Data(#"{"lease":{}}"#.utf8)) }
    }

    @Test("each item backs off exponentially with jitter up to a cap, never shorter than a Retry-After")
    func retryDelays() {
        let policy = RetryPolicy()
        #expect(policy.delay(afterFailures: 1, jitter: 0.999_999) <= .milliseconds(250))
        #expect(policy.delay(afterFailures: 1, jitter: 0) == .milliseconds(125), "equal jitter: at least half the back-off")
        #expect(policy.delay(afterFailures: 2, jitter: 1) == .milliseconds(500))
        #expect(policy.delay(afterFailures: 4, jitter: 1) == .seconds(2))
        #expect(policy.delay(afterFailures: 50, jitter: 1) == .seconds(8))
        #expect(policy.delay(afterFailures: 50, jitter: 0) == .seconds(4))
        #expect(policy.delay(afterFailures: 1, jitter: 0, retryAfter: .seconds(2)) == .seconds(2))
        #expect(policy.delay(afterFailures: 6, jitter: 1, retryAfter: .seconds(1)) == .seconds(8), "a shorter Retry-After does not cut the back-off")
        for failures in 1...8 {
            let delay = policy.delay(afterFailures: failures)
            #expect(delay >= policy.delay(afterFailures: failures, jitter: 0) && delay <= policy.delay(afterFailures: failures, jitter: 1))
        }
    }

    @Test("408, 429 and 5xx may pass; other statuses do not; transport failures that may pass are retried")
    func retryableFailures() {
        for status in [408, 429, 500, 502, 503, 504, 599] { #expect(RetryPolicy.isRetryable(status: status), "\(status)") }
        for status in [200, 400, 401, 403, 404, 410, 416] { #expect(!RetryPolicy.isRetryable(status: status), "\(status)") }
        #expect(RetryPolicy.isRetryable(TransferError(.http(503), "busy")))
        #expect(!RetryPolicy.isRetryable(TransferError(.http(404), "gone")))
        for code in [TransferError.Code.connectionLost, .couldNotConnect, .timedOut, .lengthMismatch, .contentMismatch] {
            #expect(RetryPolicy.isRetryable(TransferError(code, "x")), "\(code)")
        }
        for code in [TransferError.Code.cancelled, .untrustedCertificate, .invalidURL, .diskFull] {
            #expect(!RetryPolicy.isRetryable(TransferError(code, "x")), "\(code)")
        }
    }

    @Test("work gives up only after N failures AND a minimum time without progress; any progress starts both again")
    func progressWatch() {
        let start = ContinuousClock.now
        var watch = ProgressWatch<Int>(policy: RetryPolicy(failuresWithoutProgress: 3, timeWithoutProgress: .seconds(10)), start: start)
        // Many failures at once (parallel transfers failing together) are not a long outage.
        for item in 0..<12 { watch.recordFailure(of: item, cause: "HTTP 503") }
        #expect(!watch.shouldGiveUp(at: start + .seconds(1)))
        #expect(watch.shouldGiveUp(at: start + .seconds(10)))
        // Progress (a cut body's bytes kept, a body received) starts the count and the time again.
        watch.recordProgress(at: start + .seconds(9))
        #expect(watch.failures == 0)
        #expect(!watch.shouldGiveUp(at: start + .seconds(30)), "no failure since the progress")
        watch.recordFailure(of: 1, cause: "cut")
        watch.recordFailure(of: 2, cause: "cut")
        #expect(!watch.shouldGiveUp(at: start + .seconds(30)), "2 failures are fewer than 3")
        #expect(watch.recordFailure(of: 1, cause: "HTTP 503") == 3, "item 1's own count is not reset by progress elsewhere")
        #expect(!watch.shouldGiveUp(at: start + .seconds(18)))
        #expect(watch.shouldGiveUp(at: start + .seconds(19)))
        #expect(watch.summary(at: start + .seconds(21), noun: "segment") == "3 failures on 2 segments over 12 s without progress; the last: HTTP 503")
        // An item that succeeds starts its own back-off again.
        watch.recordProgress(of: 1, at: start + .seconds(22))
        #expect(watch.recordFailure(of: 1, cause: "x") == 1)
    }

    @Test("a segment is checked against its digest, else as whole transport-stream packets")
    func segmentCheck() {
        let packet = [UInt8(0x47)] + [UInt8](repeating: 0xFF, count: 187)
        let stream = packet + packet
        stream.withUnsafeBytes { bytes in
            #expect(SegmentCheck.problem(bytes, file: "0-video/00001.ts", digest: nil) == nil)
            #expect(SegmentCheck.problem(bytes, file: "0-video/00001.ts", digest: ReprDigest(of: stream)) == nil)
            #expect(SegmentCheck.problem(bytes, file: "0-video/00001.ts", digest: ReprDigest(of: packet)) != nil)
        }
        var flipped = stream
        flipped[188] = 0x48
        flipped.withUnsafeBytes { #expect(SegmentCheck.problem($0, file: "a.ts", digest: nil)?.contains("sync byte") == true) }
        Array(stream.dropLast()).withUnsafeBytes { #expect(SegmentCheck.problem($0, file: "a.ts", digest: nil) != nil) }
        flipped.withUnsafeBytes { #expect(SegmentCheck.problem($0, file: "sub/00001.vtt", digest: nil) == nil, "only .ts has a structure to check") }
        let verifier = SegmentCheck.verifier(file: "a.ts", digest: .init(digest: ReprDigest(of: stream), from: 0))
        #expect(flipped.withUnsafeBytes { verifier($0) }?.code == .contentMismatch)
        #expect(stream.withUnsafeBytes { verifier($0) } == nil)
    }

    @Test("a byte-range piece resumed after a cut is checked against its last answer's Content-Digest from where it resumed, and as whole boxes")
    func resumedPieceDigest() {
        // Two boxes: a 16-byte `moof`-like box and a 24-byte `mdat`.
        let box1: [UInt8] = [0, 0, 0, 16] + Array("moof".utf8) + [UInt8](repeating: 1, count: 8)
        let box2: [UInt8] = [0, 0, 0, 24] + Array("mdat".utf8) + [UInt8](repeating: 2, count: 16)
        let piece = box1 + box2
        let tail = SegmentCheck.Digest(digest: ReprDigest(of: Array(piece[20...])), from: 20)
        piece.withUnsafeBytes { #expect(SegmentCheck.problem($0, file: "1-audio/00003.m4s", check: tail) == nil) }
        var flippedTail = piece
        flippedTail[30] ^= 0x10
        flippedTail.withUnsafeBytes {
            #expect(SegmentCheck.problem($0, file: "1-audio/00003.m4s", check: tail)?.contains("from 20 on") == true)
        }
        // The kept prefix is not covered by the digest; a break in its structure still shows.
        var brokenPrefix = piece
        brokenPrefix[3] = 12
        brokenPrefix.withUnsafeBytes { #expect(SegmentCheck.problem($0, file: "1-audio/00003.m4s", check: tail) != nil) }
        // A whole piece with its digest is the digest's check alone.
        let whole = SegmentCheck.Digest(digest: ReprDigest(of: piece), from: 0)
        piece.withUnsafeBytes { #expect(SegmentCheck.problem($0, file: "1-audio/00003.m4s", check: whole) == nil) }
        flippedTail.withUnsafeBytes { #expect(SegmentCheck.problem($0, file: "1-audio/00003.m4s", check: whole) != nil) }
    }

    @Test("progress is bytes done over bytes expected, never 100 before the end, at most 10 reports a second")
    func progress() {
        #expect(ProgressMeter.percent(done: 0, remainingEstimate: 0, complete: false) == 0)
        #expect(ProgressMeter.percent(done: 50, remainingEstimate: 50, complete: false) == 50)
        #expect(ProgressMeter.percent(done: 1_000_000, remainingEstimate: 0, complete: false) < 100)
        #expect(ProgressMeter.percent(done: 10, remainingEstimate: 0, complete: true) == 100)
        var meter = ProgressMeter()
        let start = ContinuousClock.now
        let first = meter.shouldReport(at: start)
        let tooSoon = meter.shouldReport(at: start + .milliseconds(99))
        let later = meter.shouldReport(at: start + .milliseconds(100))
        #expect(first && !tooSoon && later)
        let reports = (0..<1000).filter { meter.shouldReport(at: start + .milliseconds(100 + $0)) }.count
        #expect(reports <= 10)
    }

    @Test("segment URLs kept front-coded read back exactly, in order")
    func segmentURLs() {
        let urls = [
            "http://h/media/v1/x/0.ts?fastly_token=abc", "http://h/media/v1/x/1.ts?fastly_token=abd",
            "http://h/media/v1/x/1.ts?fastly_token=abd",  // the same URL twice
            "http://h/media/v1/x/1.ts",  // a prefix of the one before
            "https://other/é/10.ts?t=ü", "", "h", "http://h/media/v1/x/11.ts?fastly_token=zz",
        ]
        let list = SegmentURLs(urls)
        #expect(list.count == urls.count)
        #expect(Array(list) == urls)
        #expect(Array(list) == urls)  // iterating again starts over
        #expect(Array(SegmentURLs()).isEmpty)
    }

    @Test("the offline source: HLS only, playable codecs, the FairPlay one of a protected video, the preferred format, HTTPS first, then the answer's order; HLSe refused")
    func offlineSource() throws {
        let fairPlay = [KeySystem.fairPlay: KeySystem(keyRequestURL: "https://h/license", certificateURL: "https://h/cert")]
        let ts = VideoSource(src: "http://h/manifest/v1/hls/v5/clear/1/v/2s/master.m3u8", extXVersion: "5")
        let tsHTTPS = VideoSource(src: "https://h/manifest/v1/hls/v5/clear/1/v/2s/master.m3u8", extXVersion: "5")
        let v7 = VideoSource(src: "https://h/manifest/v2/hls/v7/clear/avc1_mp4a/1/v/2s/master.m3u8", extXVersion: "7", codecs: "avc1,mp4a")
        let hevcOnly = VideoSource(src: "https://h/manifest/v2/hls/v7/clear/hvc1_mp4a/1/v/2s/master.m3u8", extXVersion: "7", codecs: "hvc1,mp4a")
        let mixed = VideoSource(src: "https://h/manifest/v2/hls/v7/clear/avc1_hvc1_mp4a/1/v/2s/master.m3u8", extXVersion: "7",
                                codecs: "avc1,hvc1,mp4a")
        let dash = VideoSource(type: VideoSource.dashType, src: "https://h/manifest.mpd")
        let mp4 = VideoSource(type: nil, src: "https://h/high.mp4")
        func choose(_ sources: [VideoSource], _ rule: OfflineSourceRule = OfflineSourceRule(),
                    format: HLSSourceFormat? = nil) throws(OfflineVideoError) -> VideoSource {
            try rule.choose(sources, videoID: "42", format: format)
        }
        // A Dynamic Delivery answer's order: TS HLS, HLS v7, DASH, MP4. By default the first HLS one (Brightcove's rule).
        #expect(try choose([tsHTTPS, v7, dash, mp4]) == tsHTTPS)
        #expect(try choose([v7, ts]) == v7)
        #expect(try choose([v7, dash]) == v7)
        // The preferred format when there is one, else the other.
        let preferCMAF = OfflineSourceRule(preference: .prefer(.cmaf))
        #expect(try choose([ts, v7, dash], preferCMAF) == v7)
        #expect(try choose([ts, dash], preferCMAF) == ts)
        #expect(try choose([v7, ts], OfflineSourceRule(preference: .prefer(.transportStream))) == ts)
        // HTTPS before HTTP, whatever the order (within the preferred format).
        #expect(try choose([ts, tsHTTPS]) == tsHTTPS)
        #expect(try choose([ts, v7], OfflineSourceRule(preference: .prefer(.transportStream))) == ts)
        // A FairPlay source before a clear one, even when HTTP and listed later, and before the preferred format.
        var protected = tsHTTPS
        protected.keySystems = fairPlay
        #expect(try choose([ts, protected]) == protected)
        var protectedHTTP = ts
        protectedHTTP.keySystems = fairPlay
        #expect(try choose([tsHTTPS, protectedHTTP]) == protectedHTTP)
        var protectedV7 = v7
        protectedV7.keySystems = fairPlay
        #expect(try choose([protected, protectedV7]) == protected)
        #expect(try choose([protected, protectedV7], preferCMAF) == protectedV7)
        #expect(try choose([protected, v7], preferCMAF) == protected)
        // Codecs the device cannot play: a source of only those is passed over, a mixed one kept.
        let noHEVC = OfflineSourceRule(preference: .prefer(.cmaf), unplayableCodecs: [.hevc])
        #expect(try choose([ts, hevcOnly], noHEVC) == ts)
        #expect(try choose([ts, mixed], noHEVC) == mixed)
        #expect(noHEVC.plays(codecs: "avc1.4d401f,mp4a.40.2") && !noHEVC.plays(codecs: "hvc1.2.4.L93.B0,mp4a.40.2") && noHEVC.plays(codecs: nil))
        // A download refreshing its URLs stays in its format.
        #expect(try choose([ts, v7], format: .cmaf) == v7)
        // Refusals, 69301 with a reason and a sentence.
        for (sources, rule, format, reason, words) in [
            ([dash, mp4], OfflineSourceRule(), nil, OfflineVideoError.Reason.noHLSSource, "has no HLS source"),
            ([hevcOnly, dash], noHEVC, nil, .noHLSSource, "no HLS source this device can play"),
            ([ts], OfflineSourceRule(), HLSSourceFormat.cmaf, .noHLSSource, "no longer has the CMAF HLS source"),
            ([VideoSource(src: "https://h/manifest/v1/hls/v5/aes128/1/v/2s/master.m3u8", extXVersion: "5")], OfflineSourceRule(), nil,
             .hlseNotSupported, "AES-128 (HLSe)"),
        ] {
            do {
                _ = try choose(sources, rule, format: format)
                Issue.record("not refused: \(sources.map(\.src))")
            } catch {
                #expect(error.code == .unsupported && error.reason == reason && error.message.contains(words), "\(error.message)")
            }
        }
    }

    @Test("media playlists offline downloads cannot take are refused, wherever the tag stands")
    func refusedMediaPlaylists() throws {
        let head = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n"
        let cases: [(String, OfflineVideoError.Reason)] = [
            (head + "#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:2,\nb.ts\n", .hlseNotSupported),
            // The AES-128 key stays in effect for the segments after it.
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:2,\na.ts\n#EXTINF:2,\nb.ts\n", .hlseNotSupported),
            (head + "#EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI=\"skd://k\"\n#EXTINF:2,\nb.m4s\n#EXT-X-ENDLIST\n", .malformedPlaylist),
            (head + "#EXT-X-MAP:URI=\"init.ts\"\n#EXTINF:2,\nb.ts\n#EXT-X-ENDLIST\n", .malformedPlaylist),
            (head + "#EXT-X-BYTERANGE:0@10\n#EXTINF:2,\nb.ts\n#EXT-X-ENDLIST\n", .malformedPlaylist),
            (head + "#EXTINF:2,\n", .malformedPlaylist),
            // Live (no ENDLIST) and event playlists: refused before anything is stored, never kept truncated.
            (head + "#EXTINF:2,\nb.ts\n", .liveNotSupported),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXTINF:2,\na.ts\n#EXT-X-ENDLIST\n", .liveNotSupported),
        ]
        for (text, reason) in cases {
            do {
                _ = try DownloadPlanner.readMedia(Array(text.utf8), url: "http://h/p.m3u8") { _, _, _ in }
                Issue.record("not refused: \(text)")
            } catch {
                #expect(error.reason == reason, "\(text)")
            }
        }
        // A key that ends (METHOD=NONE) before any AES-128 one is fine; relative URIs are made absolute.
        var urls: [String] = []
        _ = try DownloadPlanner.readMedia(Array((head + "#EXT-X-KEY:METHOD=NONE\n#EXTINF:2,\nb.ts\n#EXT-X-ENDLIST\n").utf8), url: "http://h/x/p.m3u8") { _, segment, _ in
            urls.append(segment.uri)
        }
        #expect(urls == ["http://h/x/a.ts", "http://h/x/b.ts"])
    }

    @Test("a CMAF playlist's init section and byte ranges are read, an omitted offset following the range before it")
    func cmafMediaPlaylist() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:2
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXT-X-MAP:URI="track.mp4",BYTERANGE="800@0"
            #EXTINF:2,
            #EXT-X-BYTERANGE:1000@900
            track.mp4
            #EXTINF:2,
            #EXT-X-BYTERANGE:500
            track.mp4
            #EXTINF:2,
            #EXT-X-BYTERANGE:300
            other.mp4
            #EXT-X-ENDLIST

            """
        var read: [(String, String?, SegmentRange?)] = []
        _ = try DownloadPlanner.readMedia(Array(text.utf8), url: "https://h/v/p.m3u8?t=1") { _, segment, range in
            read.append((segment.uri, segment.map?.uri, range))
        }
        #expect(read.map(\.0) == ["https://h/v/track.mp4", "https://h/v/track.mp4", "https://h/v/other.mp4"])
        #expect(read.map(\.1) == ["https://h/v/track.mp4", nil, nil])
        #expect(read.map(\.2) == [SegmentRange(offset: 900, length: 1000), SegmentRange(offset: 1900, length: 500),
                                  SegmentRange(offset: 0, length: 300)])
        #expect(DownloadPlanner.range(of: InitializationSection(uri: "x", byteRange: ByteRange(length: 800))) == SegmentRange(offset: 0, length: 800))
    }

    @Test("local playlists point at relative files named by track and sequence")
    func layout() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://abc",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
            #EXTINF:2.000,
            http://h/media/v1/x/0.ts?fastly_token=abc
            #EXTINF:1.500,
            1.ts?fastly_token=abc
            #EXT-X-ENDLIST

            """
        let choice = TrackChoice(kind: .audio, language: "en", name: "English", playlistURL: "http://h/media/v1/x/index.m3u8?t=1")
        let (track, local, firstKeys) = try DownloadPlanner.planTrack(Array(text.utf8), token: "t", position: 1, choice: choice)
        #expect(track.folder == "1-audio-en" && track.record.localPlaylist == "1-audio-en/index.m3u8")
        #expect(Array(track.urls) == ["http://h/media/v1/x/0.ts?fastly_token=abc", "http://h/media/v1/x/1.ts?fastly_token=abc"])
        #expect(track.durations == [2, 1.5])
        #expect(firstKeys.first?.uri == "skd://abc")
        let parsed = try MediaPlaylist(parsing: local)
        #expect(parsed.segments.map(\.uri) == ["00000.ts", "00001.ts"])
        #expect(parsed.segments.map(\.duration) == [2, 1.5])
        #expect(parsed.segments[0].key?.uri == "skd://abc" && parsed.endList)
        let plan = DownloadPlan(masterURL: "", variant: VariantStream(bandwidth: 1, uri: ""), tracks: [track], playlists: [:])
        let records = Array(plan.segmentRecords)
        #expect(records.map(\.file) == ["1-audio-en/00000.ts", "1-audio-en/00001.ts"])
        #expect(records.map(\.url) == Array(track.urls) && records.map(\.sequence) == [0, 1] && records.allSatisfy { $0.track == 1 })
        #expect(records.map(\.estimatedBytes) == [32_000, 24_000])  // 128 kbit/s for audio
        #expect(plan.estimatedBytes == 56_000)
        #expect(PackageLayout.segmentFile(trackFolder: "2-subtitles-fr", sequence: 7, remoteURL: "http://h/x/7.vtt?t=1", kind: .subtitles)
                == "2-subtitles-fr/00007.vtt")
        #expect(PackageLayout.segmentFile(trackFolder: "0-video", sequence: 123_456, remoteURL: "http://h/a.b/seg.aac", kind: .audio)
                == "0-video/123456.aac")
        // No extension, a long one, or one that is not alphanumeric: the kind's default.
        for url in ["http://h/x/7", "http://h/x/7.segment", "http://h/x/7.t-s", "http://h/x.y/7?f=a.b"] {
            #expect(PackageLayout.segmentFile(trackFolder: "0-video", sequence: 7, remoteURL: url, kind: .video) == "0-video/00007.ts")
        }
        #expect(PackageLayout.trackFolder(position: 3, TrackChoice(kind: .audio, language: "../x", name: "", playlistURL: "")) == "3-audio-___x")
    }
}
