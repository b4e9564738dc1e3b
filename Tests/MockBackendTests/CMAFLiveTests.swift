import Foundation
import MicroHTTP
import MockBackend
import TestKit
import Testing
import WireModels

/// HLS v7 and DASH against a live server, read by clients this project did not write: ffmpeg
/// (its HLS and DASH demuxers: the decoded frames and audio equal the TS form's), GStreamer's
/// `hlsdemux2` and `dashdemux2` (played to the end), curl (ranges).
@Suite("CMAF HLS v7 and DASH, live")
struct CMAFLiveTests {
    /// The hash column of ffmpeg's framemd5 of stream `map` of `input`.
    static func frameHashes(_ input: [String], map: String) async throws -> [String] {
        let output = try await Run.process("/usr/bin/ffmpeg", ["-nostdin", "-v", "error"] + input + ["-map", map, "-f", "framemd5", "-"])
        #expect(output.exitCode == 0, "ffmpeg \(input): \(output.stderrText)")
        return output.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }
            .compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    /// The fixture's TS segments of a rendition folder, as one ffmpeg `concat:` input.
    static func tsInput(_ folder: String) -> [String] {
        let files = (0 ..< 6).map { Fixture.mediaDirectory.appendingPathComponent(String(format: "\(folder)/seg_%03d.ts", $0)).path }
        return ["-i", "concat:" + files.joined(separator: "|")]
    }

    @Test("ffmpeg decodes the same video frames and audio samples from HLS v7 and from DASH as from the TS fixtures")
    func sameFramesAsTheTransportStreams() async throws {
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.clearVideo)
            let master = try MasterPlaylist(parsing: try await Curl.fetch(video.sources[1].src).text)
            let videoPlaylist = try #require(master.variants.first { $0.resolution?.width == 416 }?.uri)
            let audioPlaylist = try #require(master.renditions.first { $0.type == .audio && $0.language == "en" }?.uri)
            let expectedVideo = try await Self.frameHashes(Self.tsInput("video/416x234"), map: "0:v:0")
            let expectedAudio = try await Self.frameHashes(Self.tsInput("audio/en"), map: "0:a:0")
            #expect(expectedVideo.count == 300)
            #expect(try await Self.frameHashes(["-i", videoPlaylist], map: "0:v:0") == expectedVideo)
            #expect(try await Self.frameHashes(["-i", audioPlaylist], map: "0:a:0") == expectedAudio)
            let mpd = video.sources[2].src
            #expect(try await Self.frameHashes(["-i", mpd], map: "0:v:0") == expectedVideo)
            #expect(try await Self.frameHashes(["-i", mpd], map: "0:a:0") == expectedAudio)
            // The HEVC ladder: the same frames as its TS fixture (which no TS source lists).
            let expectedHEVC = try await Self.frameHashes(Self.tsInput("video-hevc/416x234"), map: "0:v:0")
            #expect(expectedHEVC.count == 300)
            let hevcPlaylist = try #require(master.variants.first { $0.resolution?.width == 416 && $0.codecs?.hasPrefix("hvc1") == true }?.uri)
            #expect(try await Self.frameHashes(["-i", hevcPlaylist], map: "0:v:0") == expectedHEVC)
        }
    }

    @Test("GStreamer (hlsdemux2, dashdemux2) plays clear CMAF HLS v7 and DASH to the end")
    func gstreamerPlaysToTheEnd() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: GStreamer.launch),
                     "gst-launch-1.0 is missing: make test-deps installs gstreamer1.0-tools and its plugins")
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.clearVideo)
            for source in [video.sources[1], video.sources[2]] {
                let played = try await GStreamer.play(source.src)
                #expect(played.eos, "\(source.src): \(played.log.suffix(2000))")
                // The last frame is presented at 12.04 s (0.08 s + 299 frames of 0.04 s).
                #expect(played.lastVideoPTS > 11.9, "\(source.src): last video PTS \(played.lastVideoPTS)")
            }
        }
    }

    @Test("CMAF files answer ranges (206 with Content-Range, 416 past the end) and conditional GETs, as every media file does")
    func rangesAndConditionals() async throws {
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.clearVideo)
            let master = try MasterPlaylist(parsing: try await Curl.fetch(video.sources[1].src).text)
            let media = try MediaPlaylist(parsing: try await Curl.fetch(master.variants[0].uri).text)
            for url in [try #require(media.segments.first?.map?.uri), media.segments[1].uri] {
                let whole = try await Curl.fetch(url)
                #expect(whole.status == 200)
                let size = whole.body.count
                let part = try await Curl.fetch(url, ["-r", "10-99"])
                #expect(part.status == 206 && part.body == Array(whole.body[10 ... 99]))
                #expect(part.header("Content-Range") == "bytes 10-99/\(size)")
                #expect(part.header("Repr-Digest") == whole.header("Repr-Digest"))
                let past = try await Curl.fetch(url, ["-r", "\(size)-\(size + 10)"])
                #expect(past.status == 416 && past.header("Content-Range") == "bytes */\(size)")
                let etag = try #require(whole.header("ETag"))
                #expect(try await Curl.fetch(url, ["-H", "If-None-Match: \(etag)"]).status == 304)
            }
        }
    }
}

extension CMAFLiveTests {
    /// POSTs a ClearKey request for `kids` to `url`; the response and, on 200, the JSON.
    static func clearKey(_ url: String, kids: [String], type: String = "temporary", _ options: [String] = []) async throws -> (CurlResponse, [String: Any]?) {
        let body = try JSONSerialization.data(withJSONObject: ["kids": kids, "type": type])
        let response = try await Curl.fetch(url, ["-X", "POST", "-H", "Content-Type: application/json",
                                                  "--data-binary", String(decoding: body, as: UTF8.self)] + options)
        return (response, try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    /// base64url without padding → hex.
    static func hex(base64URL text: String) -> String? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { $0.map { String(format: "%02x", $0) }.joined() }
    }

    @Test("a FairPlay video's CMAF: HLS v7 cbcs (SAMPLE-AES, the test key) and DASH cenc (the key from the ClearKey license) decrypt to the TS form's frames")
    func protectedCMAFDecrypts() async throws {
        try await withLiveServer({ $0.plainSampleAESKeysForTesting = true }) { server in
            let video = try await server.fetchVideo(Fixture.fairPlayVideo)
            let expectedVideo = try await Self.frameHashes(Self.tsInput("video/416x234"), map: "0:v:0")
            let expectedAudio = try await Self.frameHashes(Self.tsInput("audio/en"), map: "0:a:0")
            // HLS v7: ffmpeg's HLS demuxer fetches the identity key and hands it to the mov demuxer (cbcs).
            let master = try MasterPlaylist(parsing: try await Curl.fetch(video.sources[1].src).text)
            let videoPlaylist = try #require(master.variants.first { $0.resolution?.width == 416 }?.uri)
            let media = try await Curl.fetch(videoPlaylist).text
            #expect(media.contains("#EXT-X-KEY:METHOD=SAMPLE-AES") && media.contains("/cbcs/") && !media.contains("IV="), "\(media.prefix(600))")
            #expect(try await Self.frameHashes(["-i", videoPlaylist], map: "0:v:0") == expectedVideo)
            let audioPlaylist = try #require(master.renditions.first { $0.type == .audio && $0.language == "en" }?.uri)
            #expect(try await Self.frameHashes(["-i", audioPlaylist], map: "0:a:0") == expectedAudio)
            // HEVC cbcs too (slice headers of 2-byte NAL headers left clear).
            let hevcPlaylist = try #require(master.variants.first { $0.resolution?.width == 640 && $0.codecs?.hasPrefix("hvc1") == true }?.uri)
            #expect(try await Self.frameHashes(["-i", hevcPlaylist], map: "0:v:0") == (try await Self.frameHashes(Self.tsInput("video-hevc/640x360"), map: "0:v:0")))
            // The init segment signals it: an encv entry with its tenc.
            let initURL = try #require(MediaPlaylist(parsing: media).segments.first?.map?.uri)
            let initBody = try await Curl.fetch(initURL).body
            #expect(initBody.firstRange(of: Array("encv".utf8)) != nil && initBody.firstRange(of: Array("tenc".utf8)) != nil)

            // DASH: the MPD's default_KID, a ClearKey license for it, then ffmpeg's DASH demuxer with that key.
            let mpdURL = video.sources[2].src
            let mpd = try await Curl.fetch(mpdURL).text
            let kid = try #require(mpd.firstMatch(of: /cenc:default_KID="([0-9a-f-]{36})"/)?.1)
            let kidBytes = String(kid).replacingOccurrences(of: "-", with: "")
            let kidB64 = Data(stride(from: 0, to: 32, by: 2).map { UInt8(kidBytes.dropFirst($0).prefix(2), radix: 16)! })
                .base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let licenseURL = try #require(video.sources[2].keySystems?["org.w3.clearkey"]?.licenseURL)
            // The MPD's license URL is the source's (each signed when its answer was made, so compared without the token).
            let mpdLicense = try #require(mpd.firstMatch(of: /<dashif:laurl>([^<?]+)\?fastly_token=/)?.1)
            #expect(licenseURL.hasPrefix(String(mpdLicense) + "?fastly_token="))
            let (answer, json) = try await Self.clearKey(licenseURL, kids: [kidB64])
            #expect(answer.status == 200 && answer.header("Content-Type") == "application/json", "\(answer.text)")
            let jwk = try #require((json?["keys"] as? [[String: Any]])?.first)
            #expect(jwk["kty"] as? String == "oct" && jwk["kid"] as? String == kidB64)
            let k = try #require(jwk["k"] as? String)
            #expect(!k.contains("=") && !k.contains("+") && !k.contains("/"))
            let keyHex = try #require(Self.hex(base64URL: k))
            #expect(try await Self.frameHashes(["-cenc_decryption_key", keyHex, "-i", mpdURL], map: "0:v:0") == expectedVideo)
            #expect(try await Self.frameHashes(["-cenc_decryption_key", keyHex, "-i", mpdURL], map: "0:a:0") == expectedAudio)
        }
    }

    @Test("the ClearKey license server refuses what it should, with the error array: malformed JSON, padded or unknown key ids, an edited token, a clear video")
    func clearKeyRefusals() async throws {
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.fairPlayVideo)
            let url = try #require(video.sources[2].keySystems?["org.w3.clearkey"]?.licenseURL)
            let post = { (body: String) in try await Curl.fetch(url, ["-X", "POST", "--data-binary", body]) }
            try Contract.expectError(try await post("{not json"), 400, "BAD_REQUEST", "INVALID_BODY")
            try Contract.expectError(try await post(#"{"kids":[]}"#), 400, "BAD_REQUEST", "INVALID_BODY")
            try Contract.expectError(try await post(#"{"kids":["AAECAwQFBgcICQoLDA0ODw=="]}"#), 400, "BAD_REQUEST", "INVALID_KEY_ID")
            try Contract.expectError(try await post(#"{"kids":["AAECAwQFBgcICQoLDA0ODw"],"type":"x"}"#), 400, "BAD_REQUEST", "INVALID_BODY")
            try Contract.expectError(try await post(#"{"kids":["AAECAwQFBgcICQoLDA0ODw"]}"#), 404, "NOT_FOUND", "KEY_NOT_FOUND")
            let edited = url.replacingOccurrences(of: "fastly_token=N", with: "fastly_token=M")
            try Contract.expectError(try await Curl.fetch(edited, ["-X", "POST", "--data-binary", #"{"kids":["AAECAwQFBgcICQoLDA0ODw"]}"#]),
                                     403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            // A clear video has no ClearKey license server.
            let clear = url.replacingOccurrences(of: try #require(pathSegments(ofURL: url).last), with: "00000000-0000-0000-0000-000000000000")
            #expect(try await Curl.fetch(clear, ["-X", "POST", "--data-binary", "{}"]).status == 403)
        }
    }
}
