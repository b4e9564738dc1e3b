import Foundation
import Locking
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// Dynamic Ingest: the request's checks (route level), and whole jobs on a live mock with a
/// source the test makes with ffmpeg (6 s, 640x360, two audio languages): notifications in
/// order to a callback server of the test's own, the video in the Playback API, a corrupt
/// source, deletion and a restart.
@Suite("Dynamic Ingest: requests, jobs, transcode, notifications")
struct IngestTests {
    static let account = Fixture.contoso

    /// A CMS or Dynamic Ingest call with a bearer token.
    static func call(_ app: MockBackendApp, _ method: String, _ path: String, token: String?, json: String? = nil) throws -> HTTPResponse {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if json != nil { headers.append(("Content-Type", "application/json")) }
        return try app.request(method, path, headers: headers, body: Array((json ?? "").utf8))
    }

    static func object(_ response: HTTPResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [String: Any], "\(response.debugText)")
    }

    /// A new CMS video of `account`; its id.
    static func newVideo(_ app: MockBackendApp, token: String, name: String = "My trailer") throws -> String {
        let response = try call(app, "POST", "/v1/accounts/\(account)/videos", token: token, json: #"{"name":"\#(name)"}"#)
        try #require(response.status == 201, "\(response.debugText)")
        return try #require(try object(response)["id"] as? String)
    }

    static func ingest(_ app: MockBackendApp, video: String, token: String?, _ json: String) throws -> HTTPResponse {
        try call(app, "POST", "/v1/accounts/\(account)/videos/\(video)/ingest-requests", token: token, json: json)
    }

    /// The one error of a CMS error array.
    static func error(_ response: HTTPResponse) throws -> (code: String, message: String) {
        let array = try #require(try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [[String: Any]], "\(response.debugText)")
        try #require(array.count == 1)
        return (try #require(array[0]["error_code"] as? String), array[0]["message"] as? String ?? "")
    }

    /// Makes `seconds` of 640x360 test pattern with two audio streams (eng, fra) as MP4.
    static func makeSource(_ file: URL, seconds: Int = 6) async throws {
        try await IngestSource.make(file, seconds: seconds)
    }

    static let englishVTT = """
        WEBVTT

        1
        00:00:00.500 --> 00:00:01.500
        First line

        2
        00:00:03.000 --> 00:00:04.000
        Second line

        """

    // MARK: - The request

    @Test("ingest-requests checks the token, the video, the source (file:// only under --ingest-allow-dir), profile, images, text tracks and callbacks; a second job of a video while one is queued, and a full queue, are 429")
    func requestChecks() async throws {
        try await withTemporaryDirectory { directory in
            let allowed = directory.appendingPathComponent("allowed")
            try FileManager.default.createDirectory(at: allowed, withIntermediateDirectories: true)
            let closed = try makeApp(dataDirectory: directory.appendingPathComponent("closed")) { $0.ingestWorkers = 0 }
            let token = try OAuthTests.token(closed, account: Self.account)
            let video = try Self.newVideo(closed, token: token)
            let source = #"{"master":{"url":"file://\#(allowed.path)/a.mp4"}}"#

            #expect(try Self.ingest(closed, video: video, token: nil, source).status == 401)
            let otherToken = try OAuthTests.token(closed, account: Fixture.northwind)
            #expect(try Self.ingest(closed, video: video, token: otherToken, source).status == 401)
            let off = try Self.ingest(closed, video: video, token: token, source)
            #expect(off.status == 422)
            #expect(try Self.error(off).code == "BAD_PROTOCOL_SOURCE_URL")
            #expect(try Self.error(off).message.contains("--ingest-allow-dir"))

            let app = try makeApp(dataDirectory: directory.appendingPathComponent("open")) {
                $0.ingestWorkers = 0
                $0.ingestAllowedDirectories = [allowed]
                $0.ingestQueueLimit = 1
            }
            let token2 = try OAuthTests.token(app, account: Self.account)
            let video2 = try Self.newVideo(app, token: token2)
            let cases: [(String, Int, String)] = [
                (#"{"master":{"url":"file://\#(directory.path)/outside.mp4"}}"#, 422, "BAD_PROTOCOL_SOURCE_URL"),
                (#"{"master":{"url":"file://\#(allowed.path)/../outside.mp4"}}"#, 422, "BAD_PROTOCOL_SOURCE_URL"),
                (#"{"master":{"url":"ftp://example.com/a.mp4"}}"#, 422, "BAD_PROTOCOL_SOURCE_URL"),
                (#"{"master":{"url":"not a url"}}"#, 422, "MALFORMED_SOURCE_URL"),
                (#"{"profile":"mock-fast-static"}"#, 400, "NO_SOURCE"),
                (#"{"master":{"url":"http://a.test/a.mp4","use_archived_master":true}}"#, 400, "AMBIGUOUS_REQUEST"),
                (#"{"master":{"url":"http://a.test/a.mp4"},"profile":"nope"}"#, 400, "PROFILE"),
                (#"{"master":{"url":"http://a.test/a.mp4"},"priority":"urgent"}"#, 422, "UNPROCESSABLE_ENTITY"),
                (#"{"master":{"url":"http://a.test/a.mp4"},"capture-images":true,"poster":{"url":"http://a.test/p.jpg"}}"#, 422, "CONSTRAINT_VIOLATION"),
                (#"{"master":{"url":"http://a.test/a.mp4"},"text_tracks":[{"url":"http://a.test/e.vtt","srclang":"en","kind":"songs"}]}"#, 422, "INVALID_VTT_KIND"),
                (#"{"master":{"url":"http://a.test/a.mp4"},"text_tracks":[{"url":"http://a.test/e.vtt"}]}"#, 422, "UNPROCESSABLE_ENTITY"),
                (#"{"master":{"url":"http://a.test/a.mp4"},"callbacks":["http://cb.test/notify/"]}"#, 400, "BAD_CALLBACKS"),
                (#"{"master":{"url":"http://a.test/a.mp4"},"callbacks":"http://cb.test/n"}"#, 422, "TYPE_VIOLATION"),
                (#"{"master":{"url":5}}"#, 422, "TYPE_VIOLATION"),
                ("[1,2", 400, "BAD_REQUEST"),
            ]
            for (body, status, code) in cases {
                let response = try Self.ingest(app, video: video2, token: token2, body)
                #expect(response.status == status, "\(body): \(response.debugText)")
                #expect(try Self.error(response).code == code, "\(body)")
            }
            let missing = try Self.call(app, "POST", "/v1/accounts/\(Self.account)/videos/1234567890123/ingest-requests", token: token2,
                                        json: #"{"master":{"url":"http://a.test/a.mp4"}}"#)
            #expect(missing.status == 400)
            #expect(try Self.error(missing).code == "NO_SUCH_VIDEO")

            // Accepted: a job id, the job queued (processing, not started); the next one finds the queue full.
            let accepted = try Self.ingest(app, video: video2, token: token2, #"{"master":{"url":"file://\#(allowed.path)/a.mp4"},"callbacks":["http://cb.test/n"]}"#)
            #expect(accepted.status == 200, "\(accepted.debugText)")
            let jobID = try #require(try Self.object(accepted)["id"] as? String)
            #expect(UUID(uuidString: jobID) != nil)
            let job = try Self.object(try Self.call(app, "GET", "/v1/accounts/\(Self.account)/videos/\(video2)/ingest_jobs/\(jobID)", token: token2))
            #expect(job["state"] as? String == "processing")
            #expect(job["started_at"] is NSNull)
            #expect(job["video_id"] as? String == video2)
            #expect(job["priority"] as? String == "normal")
            let list = try Self.call(app, "GET", "/v1/accounts/\(Self.account)/videos/\(video2)/ingest_jobs", token: token2)
            #expect((try JSONSerialization.jsonObject(with: Data(list.bytes())) as? [[String: Any]])?.map { $0["id"] as? String } == [jobID])
            #expect(try Self.call(app, "GET", "/v1/accounts/\(Self.account)/videos/\(video2)/ingest_jobs/\(UUID())", token: token2).status == 404)
            // The dashboard lists the job with its state.
            let page = try DashboardTests.page(app, cookie: try DashboardTests.signIn(app)).text()
            #expect(page.contains(#"<tr data-job="\#(jobID)">"#))
            #expect(page.contains(#"<span class="tag job-state">queued</span>"#))
            // A second job of the same video while the first is queued: refused, naming it.
            let again = try Self.ingest(app, video: video2, token: token2, #"{"master":{"url":"http://a.test/a.mp4"}}"#)
            #expect(again.status == 429)
            #expect(try Self.error(again).code == "RATE_LIMIT_EXCEEDED")
            #expect(try Self.error(again).message.contains("\(jobID) of video \(video2) is queued or running"), "\(again.debugText)")
            // Another video's job finds the queue (limit 1) full.
            let video3 = try Self.newVideo(app, token: token2, name: "Another")
            let full = try Self.ingest(app, video: video3, token: token2, #"{"master":{"url":"http://a.test/a.mp4"}}"#)
            #expect(full.status == 429)
            #expect(try Self.error(full).code == "RATE_LIMIT_EXCEEDED")
            #expect(try Self.error(full).message.contains("Reduce the number of concurrent jobs"), "\(full.debugText)")
        }
    }

    // MARK: - Jobs on a live mock

    /// Collects the notifications POSTed to it, in arrival order (the ones it accepted: it
    /// answers the first `failing` POSTs 500), and serves `files` to GET.
    final class CallbackServer: Sendable {
        let received = Locked<[[String: Any]]>([])
        let failures = Locked(0)
        /// GETs that reached `hold`.
        let held = Locked(0)
        let server: HTTPServer
        init(failing: Int = 0, files: [String: [UInt8]] = [:], hold: Gate? = nil) throws {
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            configuration.maxBodySize = 1 << 20
            let received = self.received, failures = self.failures, held = self.held
            server = HTTPServer(configuration: configuration, logger: quietLogger) { request in
                if request.method == "GET" {
                    guard let file = files[request.path] else { return HTTPResponse(status: 404) }
                    if let hold {
                        held.withLock { $0 += 1 }
                        hold.waitBlocking()  // the test holds the download here
                    }
                    return HTTPResponse(status: 200, body: .bytes(file))
                }
                let refuse = failures.withLock { count -> Bool in
                    count += 1
                    return count <= failing
                }
                if refuse { return HTTPResponse(status: 500) }
                if let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] {
                    nonisolated(unsafe) let copy = object
                    received.withLock { $0.append(copy) }
                }
                return HTTPResponse(status: 200)
            }
            try server.start()
        }
        var base: String { "http://127.0.0.1:\(server.port)" }
        var url: String { "\(base)/di-callbacks" }
        var notifications: [[String: Any]] { received.withLock { $0 } }
        func stop() async { await server.shutdown(gracePeriod: .seconds(5)) }
    }

    static func mediaFolders(_ dataDirectory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dataDirectory.appendingPathComponent("media").path)) ?? [])
            .filter { $0.hasPrefix("ingest-") || $0.hasPrefix(".partial-") }.sorted()
    }

    @Test("CMS create, then ingest with a callback: notifications in order, the video plays with the ladder, two audio languages, subtitles and a poster; it survives a restart; deleting it removes its media")
    func ingestPlaysSurvivesRestartAndDeletes() async throws {
        try await withTemporaryDirectory { directory in
            let sources = directory.appendingPathComponent("sources")
            let data = directory.appendingPathComponent("data")
            try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
            try await Self.makeSource(sources.appendingPathComponent("trailer.mp4"))
            try Data(Self.englishVTT.utf8).write(to: sources.appendingPathComponent("en.vtt"))
            let callbacks = try CallbackServer()
            let configure: (inout BackendConfiguration) -> Void = { $0.ingestAllowedDirectories = [sources] }
            var videoID = ""
            var token = ""
            try await withLiveServer(directory: data, configure) { server in
                let app = server.app
                token = try OAuthTests.token(app, account: Self.account)
                videoID = try Self.newVideo(app, token: token)
                let accepted = try Self.ingest(app, video: videoID, token: token, #"""
                    {"master":{"url":"file://\#(sources.path)/trailer.mp4"},"profile":"mock-fast-static",
                     "text_tracks":[{"url":"file://\#(sources.path)/en.vtt","srclang":"en","kind":"captions","label":"English","default":true}],
                     "callbacks":["\#(callbacks.url)"]}
                    """#)
                #expect(accepted.status == 200, "\(accepted.debugText)")
                let jobID = try #require(try Self.object(accepted)["id"] as? String)
                #expect(try await eventually { callbacks.notifications.contains { $0["entityType"] as? String == "TITLE" && $0["action"] as? String == "CREATE" } })

                let notifications = callbacks.notifications
                let entities = notifications.map { "\($0["entityType"] ?? "")/\($0["entity"] ?? "")/\($0["action"] ?? "")" }
                #expect(entities == [
                    "DYNAMIC_RENDITION/default/audio64/CREATE", "DYNAMIC_RENDITION/default/audio64/CREATE",
                    "DYNAMIC_RENDITION/default/video450/CREATE", "TITLE/\(videoID)/PUBLISH",
                    "ASSET/thumbnail/CREATE", "ASSET/poster/CREATE", "ASSET/en-captions-English/CREATE",
                    "DYNAMIC_RENDITION/default/video700/CREATE", "TITLE/\(videoID)/CREATE",
                ])
                #expect(notifications.allSatisfy { $0["status"] as? String == "SUCCESS" && $0["jobId"] as? String == jobID
                        && $0["videoId"] as? String == videoID && $0["accountId"] as? String == Self.account && $0["version"] as? String == "1" })
                #expect(notifications.compactMap { $0["language"] as? String } == ["eng", "fra"])
                #expect(notifications.first { $0["entity"] as? String == "default/video450" }?["width"] as? Int == 480)
                #expect(notifications.first { $0["entity"] as? String == "default/video700" }?["height"] as? Int == 360)

                let job = try Self.object(try Self.call(app, "GET", "/v1/accounts/\(Self.account)/videos/\(videoID)/ingest_jobs/\(jobID)", token: token))
                #expect(job["state"] as? String == "finished")
                #expect(job["started_at"] is String)

                try await Self.expectPlayable(server, videoID: videoID, source: sources.appendingPathComponent("trailer.mp4"))
                let cms = try Self.object(try Self.call(app, "GET", "/v1/accounts/\(Self.account)/videos/\(videoID)", token: token))
                #expect(cms["complete"] as? Bool == true)
                #expect(cms["delivery_type"] as? String == "dynamic_origin")
                #expect(abs((cms["duration"] as? Int ?? 0) - 6000) <= 100, "\(cms["duration"] ?? "none")")
                #expect(Self.mediaFolders(data).count == 1)
            }
            // A restart on the same data directory serves the same media.
            try await withLiveServer(directory: data, configure) { server in
                try await Self.expectPlayable(server, videoID: videoID)
                let deleted = try Self.call(server.app, "DELETE", "/v1/accounts/\(Self.account)/videos/\(videoID)", token: token)
                #expect(deleted.status == 204, "\(deleted.debugText)")
                #expect(Self.mediaFolders(data).isEmpty)
            }
            await callbacks.stop()
        }
    }

    /// The Playback API serves the ingested video: 6 s, two video renditions (480 and 640 wide),
    /// audio in eng and fra, English subtitles and sideband captions, a poster; ffprobe reads
    /// the master playlist over HTTP as 6 s of H.264 and AAC.
    static func expectPlayable(_ server: MockBackendServer, videoID: String, source: URL? = nil) async throws {
        let video = try await server.fetchVideo(videoID, account: account, key: Fixture.contosoSearchKey)
        #expect(abs(video.duration - 6000) <= 100, "\(video.duration)")
        #expect(video.poster != nil)
        #expect(video.textTracks.contains { $0.srclang == "en" && $0.kind == "captions" })
        let masterURL = try #require(video.sources.first { $0.src.contains(".m3u8") }?.src)
        let master = try MasterPlaylist(parsing: try await Curl.fetch(masterURL).text)
        #expect(master.variants.compactMap(\.resolution?.width).sorted() == [480, 640])
        #expect(master.renditions.filter { $0.type == .audio }.compactMap(\.language).sorted() == ["eng", "fra"])
        #expect(master.renditions.filter { $0.type == .subtitles }.compactMap(\.language) == ["en"])
        let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration:stream=codec_name",
                                                      "-of", "json", masterURL])
        #expect(probe.exitCode == 0, "\(probe.stderrText)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout)) as? [String: Any])
        let codecs = Set(((json["streams"] as? [[String: Any]]) ?? []).compactMap { $0["codec_name"] as? String })
        #expect(codecs.isSuperset(of: ["h264", "aac"]), "\(codecs)")
        let duration = Double((json["format"] as? [String: Any])?["duration"] as? String ?? "") ?? 0
        #expect(abs(duration - 6) < 0.3, "\(duration)")
        // Its CMAF sources too: HLS v7 and DASH, remuxed from the ingested segments, read by ffprobe.
        for cmaf in video.sources where cmaf.extXVersion == "7" || cmaf.isDASH {
            let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration:stream=codec_name",
                                                                    "-of", "json", cmaf.src])
            #expect(probe.exitCode == 0, "\(cmaf.src): \(probe.stderrText)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout)) as? [String: Any])
            let codecs = Set(((json["streams"] as? [[String: Any]]) ?? []).compactMap { $0["codec_name"] as? String })
            #expect(codecs.isSuperset(of: ["h264", "hevc", "aac"]), "\(cmaf.src): \(codecs)")
        }
        #expect(video.sources.filter { $0.extXVersion == "7" || $0.isDASH }.count == 2)
        // The HEVC ladder made at ingest: as many hvc1 variants as H.264 ones in the v7 master, each decoding to
        // the H.264 rendition's frame count and size.
        let v7 = try #require(video.sources.first { $0.extXVersion == "7" })
        #expect(v7.codecs == "avc1,hvc1,mp4a" && v7.src.contains("/avc1_hvc1_mp4a/"))
        let v7Master = try MasterPlaylist(parsing: try await Curl.fetch(v7.src).text)
        let hevc = v7Master.variants.filter { $0.codecs?.hasPrefix("hvc1.") == true }
        let h264 = v7Master.variants.filter { $0.codecs?.hasPrefix("avc1.") == true }
        #expect(!hevc.isEmpty && hevc.count == h264.count, "\(v7Master.variants.map { $0.codecs ?? "" })")
        for (hevcVariant, h264Variant) in zip(hevc, h264) {
            #expect(hevcVariant.resolution == h264Variant.resolution && hevcVariant.bandwidth < h264Variant.bandwidth)
            let frames = { (uri: String) async throws -> Int in
                let output = try await Run.process("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", uri, "-map", "0:v:0", "-f", "framemd5", "-"])
                #expect(output.exitCode == 0, "\(output.stderrText)")
                return output.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
            }
            let hevcFrames = try await frames(hevcVariant.uri)
            let h264Frames = try await frames(h264Variant.uri)
            #expect(hevcFrames > 100 && hevcFrames == h264Frames, "\(hevcFrames) HEVC frames, \(h264Frames) H.264")
        }
        // The thumbnail track captured at ingest: a tile every 5 s (at 0 and 5 s of the 6 s), each cue a sprite that is served.
        let thumbnails = try #require(video.textTracks.first { $0.label == "thumbnails" })
        #expect(thumbnails.kind == "metadata" && thumbnails.width == 160 && thumbnails.height == 90)
        let vtt = try await Curl.fetch(thumbnails.src)
        #expect(vtt.status == 200 && vtt.text.hasPrefix("WEBVTT"), "\(vtt.text.prefix(300))")
        let cues = vtt.text.matches(of: /(\S+\.jpg)#xywh=(\d+),(\d+),160,90/)
        #expect(cues.map { "\($0.2),\($0.3)" } == ["0,0", "160,0"], "\(vtt.text)")
        let sprite = try await Curl.fetch(String(try #require(cues.first?.1)))
        #expect(sprite.status == 200 && sprite.header("Content-Type") == "image/jpeg")
        guard let source else { return }
        // The 640x360 rendition decoded against the source, frame by frame from each one's start:
        // the transcode is lossy, so the stated bound is an average PSNR of at least 30 dB.
        let top = try #require(master.variants.first { $0.resolution?.width == 640 }?.uri)
        let average = try await IngestSource.psnr(top, against: source)
        #expect((average ?? 0) >= 30, "PSNR \(average ?? -1) dB")
    }

    @Test("a corrupt source: the job fails with the reason, a FAILED notification, and the video keeps no media")
    func corruptSourceFails() async throws {
        try await withTemporaryDirectory { directory in
            let sources = directory.appendingPathComponent("sources")
            let data = directory.appendingPathComponent("data")
            try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
            try Data(randomBytes(64 * 1024)).write(to: sources.appendingPathComponent("broken.mp4"))
            let callbacks = try CallbackServer()
            try await withLiveServer(directory: data, { $0.ingestAllowedDirectories = [sources] }) { server in
                let app = server.app
                let token = try OAuthTests.token(app, account: Self.account)
                let videoID = try Self.newVideo(app, token: token)
                let accepted = try Self.ingest(app, video: videoID, token: token,
                                               #"{"master":{"url":"file://\#(sources.path)/broken.mp4"},"callbacks":["\#(callbacks.url)"]}"#)
                let jobID = try #require(try Self.object(accepted)["id"] as? String)
                #expect(try await eventually { !callbacks.notifications.isEmpty })
                let failed = try #require(callbacks.notifications.first)
                #expect(failed["status"] as? String == "FAILED")
                #expect(failed["entityType"] as? String == "TITLE")
                #expect(failed["jobId"] as? String == jobID)
                #expect((failed["errorMessage"] as? String)?.isEmpty == false)
                let job = try Self.object(try Self.call(app, "GET", "/v1/accounts/\(Self.account)/videos/\(videoID)/ingest_jobs/\(jobID)", token: token))
                #expect(job["state"] as? String == "failed")
                #expect(job["error_code"] as? String == "SourceError")
                #expect((job["error_message"] as? String)?.isEmpty == false)
                let cms = try Self.object(try Self.call(app, "GET", "/v1/accounts/\(Self.account)/videos/\(videoID)", token: token))
                #expect(cms["complete"] as? Bool == false)
                #expect(Self.mediaFolders(data).isEmpty)
                let playback = try app.playback("/accounts/\(Self.account)/videos/\(videoID)", key: Fixture.contosoSearchKey)
                #expect(playback.status != 200)
            }
            await callbacks.stop()
        }
    }

    @Test("an http(s) source on a FairPlay account: the media are SAMPLE-AES like the fixtures'; a callback answering 500 gets the notification again")
    func httpSourceFairPlayAndRetriedCallback() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("trailer.mp4")
            try await Self.makeSource(file, seconds: 4)
            let server = try CallbackServer(failing: 1, files: ["/media/trailer.mp4": Array(try Data(contentsOf: file))])
            try await withLiveServer(directory: directory.appendingPathComponent("data")) { live in
                let app = live.app
                let token = try OAuthTests.token(app, account: Fixture.northwind)
                let created = try Self.call(app, "POST", "/v1/accounts/\(Fixture.northwind)/videos", token: token, json: #"{"name":"Locked trailer"}"#)
                let videoID = try #require(try Self.object(created)["id"] as? String)
                let accepted = try Self.call(app, "POST", "/v1/accounts/\(Fixture.northwind)/videos/\(videoID)/ingest-requests", token: token,
                                             json: #"{"master":{"url":"\#(server.base)/media/trailer.mp4"},"profile":"mock-fast-static","callbacks":["\#(server.url)"]}"#)
                #expect(accepted.status == 200, "\(accepted.debugText)")
                #expect(try await eventually { server.notifications.contains { $0["entityType"] as? String == "TITLE" && $0["action"] as? String == "CREATE" } })
                // The first POST was refused and tried again: every notification arrived once, in order.
                #expect(server.failures.withLock { $0 } == server.notifications.count + 1)
                #expect(server.notifications.map { $0["entity"] as? String ?? "" }
                        == ["default/audio64", "default/audio64", "default/video450", videoID, "thumbnail", "poster", "default/video700", videoID])
                let video = try app.video(videoID, account: Fixture.northwind, key: Fixture.northwindSearchKey)
                #expect(abs(video.duration - 4000) <= 100, "\(video.duration)")
                let master = try app.master(videoID, account: Fixture.northwind, key: Fixture.northwindSearchKey)
                #expect(master.variants.count == 2)
                let media = try app.get(url: try #require(master.variants.first?.uri))
                #expect(try media.text().contains("METHOD=SAMPLE-AES"), "\(media.debugText)")
            }
            await server.stop()
        }
    }

    @Test("PostgreSQL, two instances sharing the database and the media folder: each job runs once, and a video ingested through one is served by the other")
    func twoInstancesOnPostgres() async throws {
        try await withTemporaryDirectory { directory in
            let sources = directory.appendingPathComponent("sources"), media = directory.appendingPathComponent("media")
            try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
            try await Self.makeSource(sources.appendingPathComponent("trailer.mp4"), seconds: 4)
            let database = try await TestPostgres.shared().makeDatabase()
            let callbacks = try CallbackServer()
            let configure: (inout BackendConfiguration) -> Void = {
                $0.databaseURL = database
                $0.mediaDirectory = media
                $0.ingestAllowedDirectories = [sources]
            }
            try await withLiveServer(directory: directory.appendingPathComponent("one"), configure) { one in
                try await withLiveServer(directory: directory.appendingPathComponent("two"), configure) { two in
                    let token = try OAuthTests.token(one.app, account: Self.account)
                    var jobs: [String: String] = [:]
                    for name in ["first", "second", "third"] {
                        let videoID = try Self.newVideo(one.app, token: token, name: name)
                        let accepted = try Self.ingest(one.app, video: videoID, token: token,
                                                       #"{"master":{"url":"file://\#(sources.path)/trailer.mp4"},"profile":"mock-fast-static","callbacks":["\#(callbacks.url)"]}"#)
                        jobs[try #require(try Self.object(accepted)["id"] as? String)] = videoID
                    }
                    let titles = { callbacks.notifications.filter { $0["entityType"] as? String == "TITLE" && $0["action"] as? String == "CREATE" } }
                    #expect(try await eventually { titles().count >= jobs.count })
                    // Each job ran once: one TITLE/CREATE and eight notifications each.
                    #expect(Set(titles().compactMap { $0["jobId"] as? String }) == Set(jobs.keys))
                    for jobID in jobs.keys {
                        #expect(callbacks.notifications.filter { $0["jobId"] as? String == jobID }.count == 8)
                    }
                    for videoID in jobs.values {
                        #expect(try await eventually { (try? await two.fetchVideo(videoID, account: Self.account, key: Fixture.contosoSearchKey)) != nil })
                        let master = try two.app.master(videoID, account: Self.account, key: Fixture.contosoSearchKey)
                        #expect(master.variants.count == 2)
                        let segment = try two.app.mediaPlaylist(url: try #require(master.variants.first?.uri)).segments.first?.uri
                        #expect(try two.app.get(url: try #require(segment)).status == 200)
                    }
                }
            }
            await callbacks.stop()
        }
    }

    @Test("mock-backend ingest FILE --account A: prints the video id, follows the job to finished (exit 0) with the admin token read from the data directory and --protection aes128; a corrupt file exits 1 with the reason")
    func ingestCommand() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("holiday.mp4"), subtitles = directory.appendingPathComponent("en.vtt")
            try await Self.makeSource(file, seconds: 4)
            try Data(Self.englishVTT.utf8).write(to: subtitles)
            let data = directory.appendingPathComponent("data")
            try await withLiveServer(directory: data) { server in
                let output = try await Run.process(BalancedCluster.executable, [
                    "ingest", file.path, "--account", Self.account, "--base-url", server.baseURL, "--server-data-dir", data.path,
                    "--profile", "mock-fast-static", "--protection", "aes128", "--subtitles", "en=\(subtitles.path)"])
                #expect(output.exitCode == 0, "\(output.stdoutText) \(output.stderrText)")
                let lines = output.stdoutText.split(separator: "\n").map(String.init)
                let videoID = try #require(lines.first?.split(separator: " ").last.map(String.init), "\(output.stdoutText)")
                #expect(lines.first == "video \(videoID)")
                #expect(lines.last?.hasPrefix("finished video \(videoID) (4.") == true, "\(lines)")
                #expect(output.stderrText.contains("finished"))
                let video = try server.app.video(videoID, account: Self.account, key: Fixture.contosoSearchKey)
                #expect(video.name == "holiday")
                #expect(video.textTracks.contains { $0.srclang == "en" })
                let master = try server.app.master(videoID, account: Self.account, key: Fixture.contosoSearchKey)
                let media = try server.app.get(url: try #require(master.variants.first?.uri))
                #expect(try media.text().contains("METHOD=AES-128"), "\(media.debugText)")

                let broken = directory.appendingPathComponent("broken.mp4")
                try Data(randomBytes(4096)).write(to: broken)
                let failed = try await Run.process(BalancedCluster.executable, [
                    "ingest", broken.path, "--account", Self.account, "--base-url", server.baseURL, "--server-admin-token", server.app.adminToken])
                #expect(failed.exitCode == 1, "\(failed.stdoutText) \(failed.stderrText)")
                #expect(failed.stdoutText.contains("failed video"))
                #expect(failed.stdoutText.contains("SourceError"))
            }
        }
    }

    @Test("an SQLite mock stopped in the middle of a job runs it again at the next start, to finished")
    func interruptedJobRunsAgainAfterRestart() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("trailer.mp4")
            try await Self.makeSource(file, seconds: 4)
            let hold = Gate()
            let sources = try CallbackServer(files: ["/media/trailer.mp4": Array(try Data(contentsOf: file))], hold: hold)
            let data = directory.appendingPathComponent("data")
            var videoID = "", jobID = "", token = ""
            try await withLiveServer(directory: data) { server in
                token = try OAuthTests.token(server.app, account: Self.account)
                videoID = try Self.newVideo(server.app, token: token)
                let accepted = try Self.ingest(server.app, video: videoID, token: token,
                                               #"{"master":{"url":"\#(sources.base)/media/trailer.mp4"},"profile":"mock-fast-static"}"#)
                jobID = try #require(try Self.object(accepted)["id"] as? String)
                // The job is fetching its source (held by the test) when the mock stops.
                #expect(try await eventually { sources.held.withLock { $0 } == 1 })
            }
            hold.open()
            try await withLiveServer(directory: data) { server in
                let path = "/v1/accounts/\(Self.account)/videos/\(videoID)/ingest_jobs/\(jobID)"
                #expect(try await eventually {
                    let fresh = try OAuthTests.token(server.app, account: Self.account)
                    return try Self.object(try Self.call(server.app, "GET", path, token: fresh))["state"] as? String == "finished"
                })
                let video = try server.app.video(videoID, account: Self.account, key: Fixture.contosoSearchKey)
                #expect(abs(video.duration - 4000) <= 100)
                #expect(Self.mediaFolders(data).count == 1, "\(Self.mediaFolders(data))")
            }
            await sources.stop()
        }
    }

    @Test("an ingested video whose media folder was removed by hand: the mock still starts, the video is incomplete until ingested again; --reset removes ingested media with the videos")
    func mediaRemovedByHandAndReset() async throws {
        try await withTemporaryDirectory { directory in
            let sources = directory.appendingPathComponent("sources")
            let data = directory.appendingPathComponent("data")
            try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
            try await Self.makeSource(sources.appendingPathComponent("trailer.mp4"), seconds: 4)
            let allow: (inout BackendConfiguration) -> Void = { $0.ingestAllowedDirectories = [sources] }
            let request = #"{"master":{"url":"file://\#(sources.path)/trailer.mp4"},"profile":"mock-fast-static"}"#
            /// Ingests `request` into `videoID` and waits for the job to end; its state.
            func ingested(_ server: MockBackendServer, _ videoID: String, token: String) async throws -> String {
                let accepted = try Self.ingest(server.app, video: videoID, token: token, request)
                let jobID = try #require(try Self.object(accepted)["id"] as? String, "\(accepted.debugText)")
                var state = ""
                _ = try await eventually {
                    let job = try Self.call(server.app, "GET", "/v1/accounts/\(Self.account)/videos/\(videoID)/ingest_jobs/\(jobID)", token: token)
                    state = try Self.object(job)["state"] as? String ?? ""
                    return state == "finished" || state == "failed"
                }
                return state
            }
            var videoID = ""
            try await withLiveServer(directory: data, allow) { server in
                let token = try OAuthTests.token(server.app, account: Self.account)
                videoID = try Self.newVideo(server.app, token: token)
                #expect(try await ingested(server, videoID, token: token) == "finished")
            }
            let folders = Self.mediaFolders(data)
            try #require(folders.count == 1)
            try FileManager.default.removeItem(at: data.appendingPathComponent("media").appendingPathComponent(folders[0]))

            try await withLiveServer(directory: data, allow) { server in
                let token = try OAuthTests.token(server.app, account: Self.account)
                let cms = try Self.object(try Self.call(server.app, "GET", "/v1/accounts/\(Self.account)/videos/\(videoID)", token: token))
                #expect(cms["complete"] as? Bool == false, "no media: \(cms)")
                #expect(server.app.catalog.videosMissingMedia.map(\.videoID) == [videoID])
                #expect(try await ingested(server, videoID, token: token) == "finished", "ingested again")
                #expect(try Self.object(try Self.call(server.app, "GET", "/v1/accounts/\(Self.account)/videos/\(videoID)", token: token))["complete"] as? Bool == true)
                #expect(Self.mediaFolders(data).count == 1)
            }
            try await withLiveServer(directory: data, { allow(&$0); $0.resetAtStart = true }) { server in
                #expect(Self.mediaFolders(data).isEmpty, "forgotten with the videos")
                #expect(server.app.catalog.videos[videoID] == nil)
            }
        }
    }
}
