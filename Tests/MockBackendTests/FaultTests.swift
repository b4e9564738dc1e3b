import Foundation
import MicroHTTP
@testable import MockBackend
import TestKit
import Testing
import WireModels

@Suite("Fault rules: which requests, what happens, the same for the same seed")
struct FaultRuleTests {
    @Test("paths are classified by route, with the account, video and rendition they name")
    func classification() {
        func classify(_ path: String) -> RouteClass? { RouteClass.classify(path.split(separator: "/").map(String.init))?.0 }
        #expect(classify("/playback/v1/accounts/1/videos/2") == .playbackAPI)
        #expect(classify("/manifest/v1/hls/v5/clear/1/v/2s/master.m3u8") == .masterPlaylist)
        #expect(classify("/manifest/v1/hls/v5/clear/1/v/r/2s/rendition.m3u8") == .mediaPlaylist)
        #expect(classify("/media/v1/hls/v5/clear/1/v/r/3.ts") == .segment)
        #expect(classify("/media/v1/hls/v5/clear/1/v/r/3.vtt") == .subtitles)
        #expect(classify("/license/v1/aes128/1/v/k") == .aesKey)
        #expect(classify("/license/v1/fairplay/1/v/k") == .license)
        #expect(classify("/license/v1/fairplay_app_cert/1") == .certificate)
        #expect(classify("/image/v1/1/v/160x90/image.jpg") == .image)
        #expect(classify("/text/v1/1/v/en/subtitles.vtt") == .subtitles)
        #expect(classify("/_admin/v1/faults") == nil, "the admin API is never faulted")
        // Account, video and rendition where each kind of path has them (v2 has one more folder before the account, CMAF media one fewer).
        func parts(_ path: String) -> [String?]? {
            RouteClass.classify(path.split(separator: "/").map(String.init)).map { [$0.account, $0.video, $0.rendition] }
        }
        #expect(parts("/media/v1/hls/v5/clear/1/v/r/3.ts") == ["1", "v", "r"])
        #expect(parts("/media/v2/cmaf/cbcs/1/v/r/3.m4s") == ["1", "v", "r"])
        #expect(parts("/media/v2/cmaf/clear/1/v/r/track.mp4") == ["1", "v", "r"])
        #expect(parts("/manifest/v2/hls/v7/clear/avc1_mp4a/1/v/2s/master.m3u8") == ["1", "v", nil])
        #expect(parts("/manifest/v2/hls/v7/clear/avc1_mp4a/1/v/r/2s/rendition.m3u8") == ["1", "v", "r"])
        #expect(parts("/manifest/v2/dash/live-baseurl/clear/avc1_mp4a/1/v/2s/manifest.mpd") == ["1", "v", nil])
        // The thumbnail track's sprites and WebVTT are images of their video.
        #expect(parts("/image/v1/1/v/160x90/image.jpg") == ["1", "v", nil])
        #expect(classify("/image/v1/sprite/1/v/2s/thumbnails/3x2/tile_1.jpg") == .image)
        #expect(parts("/image/v1/sprite/1/v/2s/thumbnails/3x2/tile_1.jpg") == ["1", "v", nil])
        #expect(classify("/thumbnail/v1/1/v/t/thumbnail.webvtt") == .image)
        #expect(parts("/thumbnail/v1/1/v/t/thumbnail.webvtt") == ["1", "v", nil])
        #expect(classify("/manifest/v2/dash/live-baseurl/clear/avc1_mp4a/1/v/2s/manifest.mpd") == .masterPlaylist)
        let media = RouteClass.classify("/media/v1/hls/v5/fairplay/acct/video-uuid/rendition-uuid/3.ts".split(separator: "/").map(String.init))
        #expect(media?.account == "acct" && media?.video == "video-uuid" && media?.rendition == "rendition-uuid")
    }

    @Test("a rule takes a request when every condition it sets holds; * matches any run in a path")
    func matching() {
        var rule = FaultRule(route: .segment)
        rule.video = "6415818918101"
        rule.rendition = "audio:en"
        rule.path = "/media/*/clear/"
        rule.status = 503
        let ids: Set<String> = ["6415818918101", "uuid-1", "ref:nw-clear-bars"]
        #expect(rule.matches(path: "/media/v1/hls/v5/clear/1/uuid-1/r/1.ts", route: .segment, account: "1", videoIDs: ids, renditionNames: ["r", "audio:en"]))
        #expect(!rule.matches(path: "/media/v1/hls/v5/clear/1/uuid-1/r/1.ts", route: .segment, account: "1", videoIDs: ids, renditionNames: ["r", "audio:fr"]))
        #expect(!rule.matches(path: "/media/v1/hls/v5/fairplay/1/uuid-1/r/1.ts", route: .segment, account: "1", videoIDs: ids, renditionNames: ["audio:en"]))
        #expect(!rule.matches(path: "/media/v1/hls/v5/clear/1/uuid-1/r/1.ts", route: .mediaPlaylist, account: "1", videoIDs: ids, renditionNames: ["audio:en"]))
        #expect(FaultRule.path("/a/b/c/d", contains: "b*d") && !FaultRule.path("/a/b/c", contains: "c*b"))
    }

    @Test("rules without an effect or with out-of-range values are refused with a reason")
    func validation() {
        #expect(FaultRule(route: .segment).problem?.contains("needs an effect") == true)
        var rule = FaultRule()
        rule.status = 200
        #expect(rule.problem == "status must be a 4xx or 5xx")
        rule.status = 503
        rule.probability = 1.5
        #expect(rule.problem == "probability must be between 0 and 1")
        rule.probability = 0.5
        #expect(rule.problem == nil)
    }

    @Test("the same seed and the same requests give the same faults; `times` bounds a rule; ids are given and unique")
    func determinism() throws {
        func run(seed: UInt64) throws -> [Bool] {
            var rule = FaultRule(route: .playbackAPI)
            rule.probability = 0.3
            rule.status = 503
            let injector = FaultInjector(seed: seed, rules: [rule])
            let catalog = try Catalog.load(from: BackendConfiguration.defaultCatalogFile)
            let request = try HTTPRequest(method: "GET", target: "/playback/v1/accounts/6415818918001/videos/6415818918101")
            return (0..<200).map { _ in injector.decide(for: request, catalog: catalog)?.answersInstead == true }
        }
        let first = try run(seed: 42), again = try run(seed: 42), other = try run(seed: 43)
        #expect(first == again)
        #expect(first != other)
        let share = Double(first.filter { $0 }.count) / 200
        #expect(share > 0.15 && share < 0.45, "about 30 %: \(share)")

        var limited = FaultRule()
        limited.status = 500
        limited.times = 2
        let injector = FaultInjector(seed: 1)
        let installed = try injector.add(limited)
        #expect(installed.rule.id == "rule-1" && installed.remaining == 2)
        let duplicate = #expect(throws: FaultRuleError.self) { try injector.add(installed.rule) }
        #expect(duplicate?.code == .duplicateID)
        let catalog = try Catalog.load(from: BackendConfiguration.defaultCatalogFile)
        let request = try HTTPRequest(method: "GET", target: "/image/v1/6415818918001/x/160x90/image.jpg")
        let statuses = (0..<4).map { _ in injector.decide(for: request, catalog: catalog)?.rule.status ?? 200 }
        #expect(statuses == [500, 500, 200, 200])
        #expect(injector.rules.first?.applied == 2 && injector.rules.first?.remaining == 0)
    }
}

@Suite("Fault injection and the request log, live")
struct FaultLiveTests {
    /// A segment URL of the clear video.
    static func segmentURL(_ server: MockBackendServer) async throws -> String {
        let master = try #require(try await server.fetchVideo(Fixture.clearVideo, key: Fixture.northwindPlayKey).sources.first?.src)
        let playlist = try MasterPlaylist(parsing: try await Curl.fetch(master).text)
        let media = try MediaPlaylist(parsing: try await Curl.fetch(try #require(playlist.variants.first?.uri)).text)
        return try #require(media.segments.first?.uri)
    }

    static func admin(_ server: MockBackendServer, _ method: String, _ path: String, _ body: String? = nil) async throws -> CurlResponse {
        var options = ["-X", method, "-H", "Authorization: Bearer \(server.app.adminToken)"]
        if let body { options += ["-H", "Content-Type: application/json", "--data-binary", body] }
        return try await Curl.fetch(server.baseURL + path, options)
    }

    @Test("every effect on the wire: error with Retry-After, latency, bandwidth, cut short, dropped, stalled, corrupted")
    func effects() async throws {
        try await withLiveServer { server in
            let url = try await Self.segmentURL(server)
            let whole = try await Curl.fetch(url)
            try #require(whole.status == 200 && whole.body.count > 50_000)
            let rules = #"""
                [{"id":"err","route":"segment","status":503,"retry_after":7,"times":1},
                 {"id":"slow","route":"segment","latency_ms":400,"times":1},
                 {"id":"thin","route":"segment","bytes_per_second":1000000,"times":1},
                 {"id":"cut","route":"segment","cut_after_bytes":5000,"times":1},
                 {"id":"drop","route":"segment","drop":true,"times":1},
                 {"id":"stall","route":"segment","stall":true,"times":1},
                 {"id":"flip","route":"segment","corrupt_bytes":3,"times":1}]
                """#
            let added = try await Self.admin(server, "POST", "/_admin/v1/faults", rules)
            #expect(added.status == 201, "\(added.text)")

            let error = try await Curl.fetch(url)
            #expect(error.status == 503 && error.header("Retry-After") == "7")
            #expect(try error.apiErrors().first?.errorSubcode == "FAULT_INJECTED")
            let slow = try await Curl.fetch(url)
            #expect(slow.status == 200 && slow.body == whole.body && slow.seconds >= 0.4)
            let thin = try await Curl.fetch(url)
            let expected = Double(whole.body.count) / 1_000_000 - 0.15
            #expect(thin.body == whole.body && thin.seconds >= expected, "\(thin.seconds) s for \(whole.body.count) B at 1 MB/s")
            let cut = try await Curl.fetch(url)
            #expect(cut.exitCode == 18 && cut.body == Array(whole.body.prefix(5000)), "announced in full, cut after 5000 B")
            let dropped = try await Curl.fetch(url)
            #expect(dropped.exitCode == 52 && dropped.status == 0, "no answer at all: \(dropped.exitCode)")
            let stalled = try await Curl.fetch(url, ["--max-time", "1"])
            #expect(stalled.exitCode == 28 && stalled.status == 200 && stalled.body.isEmpty, "headers, then nothing")
            let flipped = try await Curl.fetch(url)
            #expect(flipped.status == 200 && flipped.body.count == whole.body.count)
            #expect(zip(flipped.body, whole.body).filter { $0 != $1 }.count == 3)
            let after = try await Curl.fetch(url)
            #expect(after.body == whole.body, "every rule used its one time")

            let listing = try await Self.admin(server, "GET", "/_admin/v1/faults")
            struct Listing: Decodable { struct Rule: Decodable { var applied: Int; var remaining: Int? }; var rules: [Rule] }
            let decoded = try JSONDecoder().decode(Listing.self, from: Data(listing.body))
            #expect(decoded.rules.count == 7 && decoded.rules.allSatisfy { $0.applied == 1 && $0.remaining == 0 })
            #expect(try await Self.admin(server, "DELETE", "/_admin/v1/faults/flip").status == 204)
            #expect(try await Self.admin(server, "DELETE", "/_admin/v1/faults/flip").status == 404)
            let bad = try await Self.admin(server, "POST", "/_admin/v1/faults", #"{"route":"segment","status":200}"#)
            let subcode = try bad.apiErrors().first?.errorSubcode
            #expect(bad.status == 400 && subcode == "INVALID_RULE")
            let clash = try await Self.admin(server, "POST", "/_admin/v1/faults", #"{"id":"err","status":500}"#)
            #expect(clash.status == 409)
            #expect(try await Self.admin(server, "DELETE", "/_admin/v1/faults").status == 204)
        }
    }

    @Test("the request log: the last requests with status, bytes and fault, tokens redacted, filtered; a live stream follows it")
    func requestLog() async throws {
        try await withLiveServer({ $0.requestLogSize = 5 }) { server in
            let url = try await Self.segmentURL(server)
            _ = try await Self.admin(server, "POST", "/_admin/v1/faults", #"{"id":"missing","route":"segment","status":404,"times":1}"#)
            _ = try await Curl.fetch(url)
            // A request is logged once its answer is sent in full, a moment after curl may have it.
            #expect(try await eventually { !server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media", status: 404)).isEmpty })
            let listing = try await Self.admin(server, "GET", "/_admin/v1/requests?path_prefix=/media")
            struct Log: Decodable {
                struct Entry: Decodable { var id: Int; var method: String; var path: String; var status: Int; var fault: String?; var bytes: Int }
                var requests: [Entry]
                var capacity: Int
            }
            let log = try JSONDecoder().decode(Log.self, from: Data(listing.body))
            #expect(log.capacity == 5)
            let entry = try #require(log.requests.last)
            #expect(entry.status == 404 && entry.fault == "missing: 404" && entry.method == "GET")
            #expect(entry.path.hasSuffix("fastly_token=…") && !entry.path.contains(URLToken.path(ofURL: url) + "?fastly_token=M"))
            let only404 = try JSONDecoder().decode(Log.self, from: Data(try await Self.admin(server, "GET", "/_admin/v1/requests?status=404").body))
            #expect(only404.requests.allSatisfy { $0.status == 404 } && !only404.requests.isEmpty)
            #expect(try await Self.admin(server, "GET", "/_admin/v1/requests?status=abc").status == 400)

            // Follow the live stream of Playback API requests, then make two.
            let follower = try RunningProcess("/usr/bin/curl", ["-sS", "-N", "-H", "Authorization: Bearer \(server.app.adminToken)",
                                                                server.baseURL + "/_admin/v1/requests/stream?path_prefix=/playback"])
            // The stream is open once the server counts it among the requests in flight.
            #expect(try await eventually { server.activeRequests >= 1 })
            _ = try await server.fetchVideo(Fixture.clearVideo, key: Fixture.northwindPlayKey)
            _ = try await Curl.fetch(server.baseURL + "/playback/v1/accounts/\(Fixture.northwind)/videos/nope")
            #expect(try await follower.waitForOutput { completeServerSentEvents($0, type: "request").count == 2 })
            let events = completeServerSentEvents(follower.stdoutSoFar, type: "request").joined(separator: "\n\n")
            #expect(events.contains(#""status":200"#) && events.contains(#""status":401"#) && !events.contains("/media/"))
            follower.kill(SIGTERM)
            _ = await follower.wait()

            // Many more requests than it keeps: the newest 5, oldest first, ids in a row.
            for _ in 0..<7 { _ = try await Curl.fetch(server.baseURL + "/playback/v1/accounts/\(Fixture.northwind)/videos/nope") }
            let kept = try JSONDecoder().decode(Log.self, from: Data(try await Self.admin(server, "GET", "/_admin/v1/requests").body)).requests
            #expect(kept.count == 5)
            #expect(zip(kept, kept.dropFirst()).allSatisfy { $1.id == $0.id + 1 }, "\(kept.map(\.id))")
            #expect(kept.dropLast().allSatisfy { $0.path.hasSuffix("/videos/nope") })
        }
    }
}
