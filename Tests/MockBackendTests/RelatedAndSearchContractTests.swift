import Foundation
import MicroHTTP
import MockBackend
import Testing
import TestKit
import WireModels

/// Related videos and search as a client written against the real service expects them (issue 26).
@Suite("Contract, live: related videos and search")
struct RelatedAndSearchContractTests {
    // MARK: 1. Related videos

    @Test("related videos: search key needed (403 API before 404), unknown id 404 VIDEO_NOT_FOUND, shared tags and words first, paged")
    func related() async throws {
        try await withLiveServer { server in
            let path = "\(Contract.videos)/\(Fixture.clearVideo)/related"
            try Contract.expectError(try await Contract.get(server, path, key: Fixture.northwindPlayKey), 403, "ACCESS_DENIED", "API")
            try Contract.expectError(try await Contract.get(server, "\(Contract.videos)/404404/related", key: Fixture.northwindPlayKey), 403, "ACCESS_DENIED", "API")
            try Contract.expectError(try await Contract.get(server, "\(Contract.videos)/404404/related", key: nil), 401, "INVALID_POLICY_KEY", nil)
            try Contract.expectError(try await Contract.get(server, "\(Contract.videos)/404404/related"), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            try Contract.expectError(try await Contract.get(server, "\(Contract.videos)/\(Fixture.contosoClearVideo)/related"), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            try Contract.expectError(try await Contract.get(server, path + "?limit=abc"), 400, "BAD_REQUEST", "ILLEGAL_QUERY")

            let all = try WireJSON.decoder().decode(SearchResult.self, from: Data(try await Contract.get(server, path).body))
            let ids = all.videos.map(\.id)
            #expect(!ids.contains(Fixture.clearVideo))
            #expect(Set(all.videos.map(\.accountID)) == [Fixture.northwind])
            #expect(all.count == ids.count)
            // The clear video's tags are demo, clear, bars: the other demo+clear video shares two.
            #expect(ids.first == "6415818918105")
            let byRef = try WireJSON.decoder().decode(SearchResult.self, from: Data(try await Contract.get(server, "\(Contract.videos)/ref:nw-clear-bars/related").body))
            #expect(byRef.videos.map(\.id) == ids)
            let page = try WireJSON.decoder().decode(SearchResult.self, from: Data(try await Contract.get(server, path + "?limit=2&offset=1").body))
            #expect(page.count == all.count)
            #expect(page.videos.map(\.id) == Array(ids.dropFirst().prefix(2)))
        }
    }

    // MARK: 2. Search

    @Test("search: -updated_at without sort; every documented sort field; play counts from the analytics events")
    func searchSorts() async throws {
        try await withLiveServer { server in
            func search(_ query: String) async throws -> [Video] {
                let response = try await Contract.get(server, Contract.videos + "?limit=100&" + query)
                try #require(response.status == 200, "\(query): \(response.text)")
                return try WireJSON.decoder().decode(SearchResult.self, from: Data(response.body)).videos
            }
            let plain = try await search("")
            #expect(plain.map(\.updatedAt) == plain.map(\.updatedAt).sorted(by: >))
            for field in ["name", "reference_id", "created_at", "published_at", "updated_at", "schedule.starts_at", "schedule_starts_at",
                          "schedule.ends_at", "schedule_ends_at", "state", "plays_total", "plays_trailing_week"] {
                for sort in [field, "-" + field] {
                    #expect(try await search("sort=" + sort).count == plain.count, "sort=\(sort)")
                }
            }
            // Without data (no schedules, all ACTIVE, no plays yet) the default order stands.
            #expect(try await search("sort=schedule.starts_at").map(\.id) == plain.map(\.id))
            #expect(try await search("sort=-state").map(\.id) == plain.map(\.id))

            // Two plays of the FairPlay video now, one of the English-only video ten days ago.
            let now = server.app.clock.now()
            let events = [
                TrackerEvent(id: "p1", event: "play_started", videoID: Fixture.fairPlayVideo, accountID: Fixture.northwind, time: now),
                TrackerEvent(id: "p2", event: "play_started", videoID: Fixture.fairPlayVideo, accountID: Fixture.northwind, time: now),
                TrackerEvent(id: "p3", event: "play_started", videoID: Fixture.englishOnlyVideo, accountID: Fixture.northwind,
                             time: now.addingTimeInterval(-10 * 86_400)),
                TrackerEvent(id: "p4", event: "play_started", videoID: Fixture.englishOnlyVideo, accountID: Fixture.northwind,
                             time: now.addingTimeInterval(-11 * 86_400)),
                TrackerEvent(id: "p5", event: "play_started", videoID: Fixture.englishOnlyVideo, accountID: Fixture.northwind,
                             time: now.addingTimeInterval(-12 * 86_400)),
                TrackerEvent(id: "p6", event: "play_paused", videoID: Fixture.aesVideo, accountID: Fixture.northwind, time: now),
            ]
            let body = String(decoding: try WireJSON.encoder().encode(events), as: UTF8.self)
            let posted = try await Curl.fetch(server.app.baseURL + "/tracker", ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", body])
            try #require(posted.status == 200, "\(posted.text)")
            #expect(try await search("sort=-plays_total").prefix(2).map(\.id) == [Fixture.englishOnlyVideo, Fixture.fairPlayVideo])
            #expect(try await search("sort=-plays_trailing_week").first?.id == Fixture.fairPlayVideo)
            #expect(try await search("sort=plays_total").last?.id == Fixture.englishOnlyVideo)
        }
    }

    @Test("search: malformed q is 400 ILLEGAL_QUERY; several ids in one get answer an array in the order asked")
    func searchSyntaxAndSeveralIDs() async throws {
        try await withLiveServer { server in
            for query in ["q=%22bars", "q=tags:demo,", "q=tags:demo,,clear", "q=name:", "q=%2B"] {
                try Contract.expectError(try await Contract.get(server, Contract.videos + "?" + query), 400, "BAD_REQUEST", "ILLEGAL_QUERY")
            }
            let either = try WireJSON.decoder().decode(SearchResult.self, from: Data(try await Contract.get(server, Contract.videos + "?q=tags:long,rental").body))
            #expect(Set(either.videos.map(\.id)) == ["6415818918104", "6415818918106", "6415818918108"])

            let several = try await Contract.get(server, "\(Contract.videos)/\(Fixture.englishOnlyVideo),404404,\(Fixture.clearVideo),\(Fixture.englishOnlyVideo)",
                                             key: Fixture.northwindPlayKey)
            #expect(several.status == 200)
            let list = try WireJSON.decoder().decode([Video].self, from: Data(several.body))
            #expect(list.map(\.id) == [Fixture.englishOnlyVideo, Fixture.clearVideo])
            // The same object as a get of one id, but for the signed URLs' tokens (made at each answer).
            func unsigned(_ video: Video?) throws -> String {
                let json = String(decoding: try WireJSON.encoder(sortedKeys: true).encode(video), as: UTF8.self)
                return json.replacingOccurrences(of: #"\?[^"]*"#, with: "", options: .regularExpression)
            }
            #expect(try unsigned(list.last) == unsigned(try await server.fetchVideo(Fixture.clearVideo)))
            let eleven = (1...9).map { "641581891810\($0)" } + ["6415818918101", "6415818918102"]
            try Contract.expectError(try await Contract.get(server, "\(Contract.videos)/\(eleven.joined(separator: ","))"), 400, "BAD_REQUEST", "ILLEGAL_PATH")
            try Contract.expectError(try await Contract.get(server, "\(Contract.videos)/\(Fixture.clearVideo),"), 400, "BAD_REQUEST", "ILLEGAL_PATH")
            try Contract.expectError(try await Contract.get(server, "\(Contract.videos)/\(Fixture.clearVideo),ref:nw-marathon"), 400, "BAD_REQUEST", "ILLEGAL_PATH")
            let none = try await Contract.get(server, "\(Contract.videos)/1,2")
            #expect(none.status == 200 && none.text == "[]")
        }
    }
}
