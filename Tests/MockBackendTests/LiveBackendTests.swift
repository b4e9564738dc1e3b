import Foundation
import TestKit
import MicroHTTP
import MockBackend
import Testing
import WireModels

/// ffprobe's view of a stream or program.
private struct Probe: Decodable {
    struct Stream: Decodable {
        var codecType: String?
        var codecName: String?
        var width: Int?
        var height: Int?
        enum CodingKeys: String, CodingKey {
            case width, height
            case codecType = "codec_type"
            case codecName = "codec_name"
        }
    }

    struct Program: Decodable {
        var programID: Int?
        var streams: [Stream]?
        enum CodingKeys: String, CodingKey {
            case streams
            case programID = "program_id"
        }
    }

    var programs: [Program]?
    var streams: [Stream]?
}

@Suite("Live backend: real players and clients")
struct LiveMediaTests {
    @Test("ffprobe finds the 3 video renditions and each program's audio in every clear and AES-128 video")
    func ffprobeEveryVideo() async throws {
        try await withLiveServer { server in
            let videos = server.app.catalog.videoOrder.compactMap { server.app.catalog.videos[$0] }
                .filter { $0.protection != .fairplay }
            #expect(videos.count == 8)
            let account = server.app.catalog.accounts
            try await withThrowingTaskGroup(of: Void.self) { group in
                var running = 0
                for video in videos {
                    if running == 3 {
                        try await group.next()
                        running -= 1
                    }
                    running += 1
                    group.addTask {
                        let key = try #require(account[video.accountID]?.policyKeys.keys.sorted().first)
                        let wire = try await server.fetchVideo(video.id, account: video.accountID, key: key)
                        let master = try #require(wire.sources.first?.src)
                        let audioCount = video.id == Fixture.englishOnlyVideo ? 1 : 3
                        let output = try await Run.process("/usr/bin/ffprobe", [
                            "-v", "error", "-show_entries", "stream=codec_type,width,height,codec_name:program=program_id",
                            "-of", "json", master,
                        ])
                        #expect(output.exitCode == 0, "ffprobe \(video.id): \(output.stderrText)")
                        #expect(output.stderrText.isEmpty, "ffprobe \(video.id) complained: \(output.stderrText)")
                        let probe = try JSONDecoder().decode(Probe.self, from: Data(output.stdout))
                        let streams = probe.streams ?? []
                        let widths = streams.filter { $0.codecType == "video" }.compactMap(\.width).sorted()
                        #expect(widths == [416, 640, 960], "video \(video.id)")
                        #expect(streams.filter { $0.codecType == "video" }.allSatisfy { $0.codecName == "h264" })
                        let programs = probe.programs ?? []
                        #expect(programs.count == 3, "video \(video.id)")
                        for program in programs {
                            let programStreams = program.streams ?? []
                            #expect(programStreams.filter { $0.codecType == "audio" && $0.codecName == "aac" }.count == audioCount,
                                    "video \(video.id) program \(program.programID ?? -1)")
                            #expect(programStreams.filter { $0.codecType == "video" }.count == 1)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("ffmpeg decodes the AES-128 video's 960x540 rendition without a single complaint")
    func ffmpegDecodesAES() async throws {
        try await withLiveServer { server in
            let master = try #require(try await server.fetchVideo(Fixture.aesVideo).sources.first?.src)
            let playlist = try MasterPlaylist(parsing: try await Curl.fetch(master).text)
            let rendition = try #require(playlist.variants.first { $0.resolution?.width == 960 }?.uri)
            let output = try await Run.process("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", rendition, "-f", "null", "-"])
            #expect(output.exitCode == 0)
            #expect(output.stderrText.isEmpty, "ffmpeg said: \(output.stderrText)")
        }
    }

    @Test("byte ranges on a segment URL with curl -r: a-b, a-, -n, past the end; If-None-Match")
    func ranges() async throws {
        try await withLiveServer { server in
            let master = try #require(try await server.fetchVideo(Fixture.clearVideo).sources.first?.src)
            let playlist = try MasterPlaylist(parsing: try await Curl.fetch(master).text)
            let rendition = try #require(playlist.variants.first { $0.resolution?.width == 960 }?.uri)
            let media = try MediaPlaylist(parsing: try await Curl.fetch(rendition).text)
            let segment = media.segments[0].uri
            let fixture = try Fixture.media("video/960x540/seg_000.ts")
            let size = fixture.count

            let middle = try await Curl.fetch(segment, ["-r", "100-1099"])
            #expect(middle.status == 206)
            #expect(middle.header("Content-Range") == "bytes 100-1099/\(size)")
            #expect(middle.header("Content-Length") == "1000")
            #expect(middle.body == Array(fixture[100...1099]))

            let whole = try await Curl.fetch(segment, ["-r", "0-"])
            #expect(whole.status == 206)
            #expect(whole.header("Content-Range") == "bytes 0-\(size - 1)/\(size)")
            #expect(whole.body == fixture)

            let suffix = try await Curl.fetch(segment, ["-r", "-500"])
            #expect(suffix.status == 206)
            #expect(suffix.header("Content-Range") == "bytes \(size - 500)-\(size - 1)/\(size)")
            #expect(suffix.body == Array(fixture[(size - 500)...]))

            let past = try await Curl.fetch(segment, ["-r", "\(size)-"])
            #expect(past.status == 416)
            #expect(past.header("Content-Range") == "bytes */\(size)")

            let plain = try await Curl.fetch(segment)
            #expect(plain.status == 200)
            #expect(plain.body == fixture)
            #expect(plain.header("Accept-Ranges") == "bytes")
            let etag = try #require(plain.header("ETag"))
            let notModified = try await Curl.fetch(segment, ["-H", "If-None-Match: \(etag)"])
            #expect(notModified.status == 304)
            #expect(notModified.body.isEmpty)
            #expect(notModified.header("ETag") == etag)
            let changed = try await Curl.fetch(segment, ["-H", "If-None-Match: \"something-else\""])
            #expect(changed.status == 200)
        }
    }

    @Test("ranges work on encrypted (cached) AES-128 segments too")
    func rangesOnEncrypted() async throws {
        try await withLiveServer { server in
            let master = try #require(try await server.fetchVideo(Fixture.aesVideo).sources.first?.src)
            let playlist = try MasterPlaylist(parsing: try await Curl.fetch(master).text)
            let media = try MediaPlaylist(parsing: try await Curl.fetch(playlist.variants[0].uri).text)
            let whole = try await Curl.fetch(media.segments[0].uri)
            #expect(whole.status == 200)
            let part = try await Curl.fetch(media.segments[0].uri, ["-r", "16-47"])
            #expect(part.status == 206)
            #expect(part.body == Array(whole.body[16...47]))
        }
    }

    @Test("sideband text tracks and images are served with the right Content-Type; an unknown image size is 404")
    func assets() async throws {
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.clearVideo)
            for track in video.textTracks where !track.isThumbnailTrack {  // the thumbnail track: CMAFDeliveryTests
                let response = try await Curl.fetch(track.src)
                #expect(response.status == 200)
                #expect(response.header("Content-Type") == "text/vtt; charset=utf-8")
                #expect(response.body == (try Fixture.media("subtitles/\(track.srclang).vtt")))
            }
            let poster = try await Curl.fetch(try #require(video.poster))
            #expect(poster.status == 200)
            #expect(poster.header("Content-Type") == "image/jpeg")
            #expect(poster.body == (try Fixture.media("poster.jpg")))
            let thumbnail = try await Curl.fetch(try #require(video.thumbnail))
            #expect(thumbnail.status == 200)
            #expect(thumbnail.header("Content-Type") == "image/jpeg")
            #expect(thumbnail.body == (try Fixture.media("thumbnail.jpg")))

            let odd = try #require(video.poster).replacingOccurrences(of: "/1280x720/", with: "/641x360/")
            let missing = try await Curl.fetch(odd)
            #expect(missing.status == 404)
            #expect(try missing.apiErrors().first?.errorCode == "NOT_FOUND")
            // Text tracks of a video without sideband tracks are not served.
            let aes = try await server.fetchVideo(Fixture.aesVideo)
            let aesUUID = pathSegments(ofURL: try #require(aes.sources.first?.src))[6]
            let noTrack = try await Curl.fetch("\(server.baseURL)/text/v1/\(Fixture.northwind)/\(aesUUID)/en/subtitles.vtt")
            #expect(noTrack.status == 404)
        }
    }

    @Test("HEAD on a poster gives its length and no body; CORS preflight works over the wire")
    func headAndOptions() async throws {
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.clearVideo)
            let head = try await Curl.fetch(try #require(video.poster), ["-I"])
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == String(try Fixture.media("poster.jpg").count))
            let options = try await Curl.fetch("\(server.baseURL)/playback/v1/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)",
                                               ["-X", "OPTIONS", "-H", "Origin: https://player.example"])
            #expect(options.status == 204)
            #expect(options.header("Access-Control-Allow-Origin") == "*")
        }
    }

    @Test("the admin clock over HTTP: GET, POST, bad body; without the admin token, 401 with the error array")
    func adminClock() async throws {
        try await withLiveServer { server in
            let auth = ["-H", "Authorization: Bearer \(server.app.adminToken)"]
            let get = try await Curl.fetch("\(server.baseURL)/_admin/v1/clock", auth)
            #expect(get.status == 200)
            #expect(get.text.contains(#""offset_seconds":0"#))
            let post = try await Curl.fetch("\(server.baseURL)/_admin/v1/clock",
                                            auth + ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", #"{"offset_seconds": 3600}"#])
            #expect(post.status == 200)
            #expect(post.text.contains(#""offset_seconds":3600"#))
            #expect(server.app.clock.offset == 3600)
            let bad = try await Curl.fetch("\(server.baseURL)/_admin/v1/clock", auth + ["-X", "POST", "--data-binary", "nonsense"])
            #expect(bad.status == 400)
            #expect(try bad.apiErrors().first?.errorCode == "BAD_REQUEST")

            let anonymous = try await Curl.fetch("\(server.baseURL)/_admin/v1/clock", ["-X", "POST", "--data-binary", #"{"offset_seconds": 1}"#])
            #expect(anonymous.status == 401)
            #expect(try anonymous.apiErrors().first?.errorSubcode == "ADMIN_TOKEN_REQUIRED")
            let wrong = try await Curl.fetch("\(server.baseURL)/_admin/v1/health", ["-H", "X-Admin-Token: nope"])
            #expect(wrong.status == 401)
            #expect(try wrong.apiErrors().first?.errorSubcode == "INVALID_ADMIN_TOKEN")
            let other = try await Curl.fetch("\(server.baseURL)/_admin/v1/health", ["-H", "X-Admin-Token: \(server.app.adminToken)"])
            #expect(other.status == 200, "X-Admin-Token works too")
            #expect(server.app.clock.offset == 3600, "refused requests change nothing")
        }
    }
}

@Suite("Live backend: bad input never takes it down")
struct LiveBadInputTests {
    @Test("path traversal in every segment position of a segment URL is 400 with an error array")
    func traversal() async throws {
        try await withLiveServer { server in
            let master = try #require(try await server.fetchVideo(Fixture.clearVideo).sources.first?.src)
            let playlist = try MasterPlaylist(parsing: try await Curl.fetch(master).text)
            let media = try MediaPlaylist(parsing: try await Curl.fetch(playlist.variants[0].uri).text)
            let segmentURL = media.segments[0].uri
            let path = URLToken.path(ofURL: segmentURL)
            let query = String(segmentURL.drop { $0 != "?" })
            let segments = path.split(separator: "/").map(String.init)
            #expect(segments.count == 9)
            for position in segments.indices {
                for form in ["..", "%2e%2e", "%2E%2e", "%2f", "..%2f.."] {
                    var parts = segments
                    parts[position] = form
                    let url = server.baseURL + "/" + parts.joined(separator: "/") + query
                    let response = try await Curl.fetch(url, ["--path-as-is"])
                    #expect(response.status == 400, "\(form) at \(position): \(response.status)")
                    let errors = try response.apiErrors()
                    #expect(errors.first?.errorCode == "BAD_REQUEST", "\(form) at \(position)")
                    #expect(try await server.isHealthy(), "after \(form) at \(position)")
                }
            }
            // Inserted rather than replacing, and trailing.
            for extra in ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/.", "/%2E"] {
                let response = try await Curl.fetch(server.baseURL + path + extra + query, ["--path-as-is"])
                #expect(response.status == 400, "\(extra)")
                #expect(try response.apiErrors().first?.errorCode == "BAD_REQUEST")
            }
            #expect(try await server.isHealthy())
        }
    }

    @Test("a 48 KB header (over the 32 KiB limit) gets 431 with an error array; a 100 KB one (over MHD's 64 KiB connection memory) MHD's own 431; the server stays up")
    func hugeHeader() async throws {
        try await withLiveServer { server in
            try await withTemporaryDirectory { directory in
                for size in [48_000, 100_000] {
                    let file = directory.appendingPathComponent("header-\(size)").path
                    try ("X-Big: " + String(repeating: "b", count: size) + "\n").write(toFile: file, atomically: true, encoding: .utf8)
                    let response = try await Curl.fetch("\(server.baseURL)/_admin/v1/health", ["-H", "@\(file)"])
                    #expect(response.status == 431, "\(size): answered \(response.status)")
                    if size < 64 * 1024 {
                        let errors = try response.apiErrors()
                        #expect(errors.first?.errorCode == "REQUEST_HEADERS_TOO_LARGE")
                        #expect(response.header("Access-Control-Allow-Origin") == "*")
                    }
                    #expect(try await server.isHealthy())
                }
            }
        }
    }

    @Test("a 1 MB POST to the FairPlay license URL is 413 with an error array, with and without Content-Length")
    func hugeLicenseRequest() async throws {
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.fairPlayVideo)
            let license = try #require(video.sources.first?.fairPlay?.keyRequestURL)
            try await withTemporaryDirectory { directory in
                let file = directory.appendingPathComponent("spc").path
                try Data(repeating: 0x41, count: 1_048_576).write(to: URL(fileURLWithPath: file))
                for extra in [[], ["-H", "Transfer-Encoding: chunked"]] {
                    let response = try await Curl.fetch(license, ["-H", "Content-Type: application/json", "--data-binary", "@\(file)"] + extra)
                    #expect(response.status == 413, "\(extra): curl exit \(response.exitCode)")
                    let errors = try response.apiErrors()
                    #expect(errors.count == 1)
                    #expect(errors.first?.message?.isEmpty == false)
                    #expect(response.header("Access-Control-Allow-Origin") == "*")
                    #expect(try await server.isHealthy())
                }
            }
        }
    }

    @Test("a garbage method is 405 with Allow and an error array")
    func garbageMethod() async throws {
        try await withLiveServer { server in
            let url = "\(server.baseURL)/playback/v1/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)"
            let response = try await Curl.fetch(url, ["-X", "BREW", "-H", "BCOV-Policy: \(Fixture.northwindPlayKey)"])
            #expect(response.status == 405)
            #expect(response.header("Allow") == "GET, HEAD, OPTIONS")
            #expect(try response.apiErrors().first?.errorCode == "METHOD_NOT_ALLOWED")
            #expect(try await server.isHealthy())
        }
    }

    @Test("duplicate parameters and an unknown account are refused over the wire; the server stays up")
    func duplicateAndUnknownAccount() async throws {
        try await withLiveServer { server in
            let search = "\(server.baseURL)/playback/v1/accounts/\(Fixture.northwind)/videos?limit=1&limit=2"
            let duplicate = try await Curl.fetch(search, ["-H", "BCOV-Policy: \(Fixture.northwindSearchKey)"])
            #expect(duplicate.status == 400)
            #expect(try duplicate.apiErrors().first?.errorSubcode == "DUPLICATE_PARAMETERS")
            #expect(try await server.isHealthy())

            let unknown = try await Curl.fetch("\(server.baseURL)/playback/v1/accounts/1234567890001/videos/\(Fixture.clearVideo)",
                                               ["-H", "BCOV-Policy: \(Fixture.northwindSearchKey)"])
            #expect(unknown.status == 403)
            #expect(try unknown.apiErrors().first?.errorSubcode == "ACCOUNT_ID")
            #expect(try await server.isHealthy())
        }
    }
}
