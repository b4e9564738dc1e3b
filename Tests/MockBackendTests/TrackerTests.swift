import Foundation
import MicroHTTP
@testable import MockBackend
import Testing
import WireModels

/// The analytics collector: `POST /tracker` stores each event id once and refuses bad batches
/// whole; the admin API lists, filters and forgets the events; fault rules aim at it.
@Suite("Analytics collector: POST /tracker and /_admin/v1/tracker/events")
struct TrackerTests {
    static func event(_ id: String, _ name: String = "play_started", video: String = Fixture.clearVideo,
                      position: Double? = 1.5, session: String? = "s1") -> [String: Any] {
        var event: [String: Any] = ["id": id, "event": name, "video_id": video, "account_id": Fixture.northwind,
                                    "time": "2026-11-25T17:00:00.000Z"]
        if let position { event["position"] = position }
        if let session { event["session"] = session }
        return event
    }

    static func body(_ events: Any) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: events))
    }

    static func post(_ app: MockBackendApp, _ events: Any) throws -> HTTPResponse {
        try app.request("POST", "/tracker", headers: [("Content-Type", "application/json")], body: try body(events))
    }

    static func receipt(_ response: HTTPResponse) throws -> TrackerReceipt {
        try #require(response.status == 200, "\(response.status) \(response.debugText)")
        return try JSONDecoder().decode(TrackerReceipt.self, from: Data(try response.bytes()))
    }

    /// The admin listing: the events with when each arrived, and the total.
    static func listing(_ app: MockBackendApp, _ query: String = "") throws -> (events: [(event: TrackerEvent, receivedAt: Date)], total: Int) {
        let response = try app.request("GET", "/_admin/v1/tracker/events" + query)
        try #require(response.status == 200, "\(response.status) \(response.debugText)")
        struct Arrival: Decodable {
            var receivedAt: Date
            enum CodingKeys: String, CodingKey { case receivedAt = "received_at" }
        }
        struct Listing<Event: Decodable>: Decodable { var events: [Event]; var total: Int }
        let body = Data(try response.bytes())
        let events = try WireJSON.decoder().decode(Listing<TrackerEvent>.self, from: body)
        let arrivals = try WireJSON.decoder().decode(Listing<Arrival>.self, from: body).events
        return (zip(events.events, arrivals).map { ($0, $1.receivedAt) }, events.total)
    }

    @Test("a repeated id is accepted and stored once; the answer counts the new ones")
    func deduplicates() async throws {
        try await withApp { app, _ in
            #expect(try Self.receipt(Self.post(app, [Self.event("a"), Self.event("b", "play_paused")])) == TrackerReceipt(received: 2, new: 2))
            #expect(try Self.receipt(Self.post(app, [Self.event("b", "play_paused"), Self.event("c", "play_completed")]))
                    == TrackerReceipt(received: 2, new: 1))
            let twice = try Self.receipt(Self.post(app, [Self.event("d"), Self.event("d")]))
            #expect(twice.new == 1 && twice.duplicates == 1)

            let all = try Self.listing(app)
            #expect(all.total == 4)
            #expect(all.events.map(\.event.id) == ["d", "c", "b", "a"], "each id once, newest first")
            let first = try #require(all.events.last)
            #expect(first.event == TrackerEvent(id: "a", event: "play_started", videoID: Fixture.clearVideo, accountID: Fixture.northwind,
                                                time: try #require(WireDate.date(from: "2026-11-25T17:00:00.000Z")), position: 1.5, session: "s1"))
            #expect(abs(first.receivedAt.timeIntervalSince(app.clock.now())) < 60)
        }
    }

    @Test("listing filters by video, event and session, with a limit; DELETE and the reset forget them")
    func listsAndForgets() async throws {
        try await withApp { app, _ in
            _ = try Self.receipt(Self.post(app, [Self.event("1"), Self.event("2", "play_paused"),
                                                 Self.event("3", video: Fixture.aesVideo, session: "s2")]))
            #expect(try Self.listing(app, "?video=\(Fixture.clearVideo)").total == 2)
            #expect(try Self.listing(app, "?event=play_paused").events.map(\.event.id) == ["2"])
            #expect(try Self.listing(app, "?session=s2&video=\(Fixture.aesVideo)").total == 1)
            let limited = try Self.listing(app, "?limit=1")
            #expect(limited.events.count == 1 && limited.total == 3)
            #expect(try app.request("GET", "/_admin/v1/tracker/events?limit=0").status == 400)
            #expect(try app.request("GET", "/_admin/v1/tracker/events", headers: [("Authorization", "Bearer nope")]).status == 401)

            #expect(try app.request("DELETE", "/_admin/v1/tracker/events").status == 204)
            #expect(try Self.listing(app).total == 0)
            _ = try Self.receipt(Self.post(app, [Self.event("4")]))
            #expect(try app.request("POST", "/_admin/v1/reset").status == 204)
            #expect(try Self.listing(app).total == 0, "the reset forgets the events")
            #expect(try Self.receipt(Self.post(app, [Self.event("4")])).new == 1, "a forgotten id is new again")
        }
    }

    @Test("the dashboard shows how many events the collector holds")
    func dashboardCount() async throws {
        try await withApp { app, _ in
            _ = try Self.receipt(Self.post(app, [Self.event("x"), Self.event("y"), Self.event("x")]))
            #expect(app.dashboardPage(flash: nil, formToken: "").render().text.contains(#"Analytics events <span class="n">2</span>"#))
        }
    }

    @Test("bad batches are refused whole with the error array", arguments: [
        ("{}", "INVALID_BODY"), ("[]", "INVALID_BODY"), ("not json", "INVALID_BODY"),
        (#"[{"id":"x","event":"play_started","video_id":"v","account_id":"a"}]"#, "INVALID_EVENT"),  // no time
        (#"[{"id":"x","event":"play_started","video_id":"v","account_id":"a","time":1764090000}]"#, "INVALID_EVENT"),  // epoch
        (#"[{"id":"x","event":"play_started","video_id":"v","account_id":"a","time":"yesterday"}]"#, "INVALID_EVENT"),
        (#"[{"id":"x","event":"Play Started","video_id":"v","account_id":"a","time":"2026-11-25T17:00:00Z"}]"#, "INVALID_EVENT"),
        (#"[{"id":"","event":"play_started","video_id":"v","account_id":"a","time":"2026-11-25T17:00:00Z"}]"#, "INVALID_EVENT"),
        (#"[{"id":"ok","event":"play_started","video_id":"v","account_id":"a","time":"2026-11-25T17:00:00Z"},{"id":"y","event":"play_paused","video_id":"v","account_id":"a","time":"2026-11-25T17:00:00Z","position":-1}]"#, "INVALID_EVENT"),
    ])
    func refusesBadBatches(body: String, subcode: String) async throws {
        try await withApp { app, _ in
            let response = try app.request("POST", "/tracker", body: Array(body.utf8))
            #expect(response.status == 400)
            let errors = try JSONDecoder().decode([APIError].self, from: Data(try response.bytes()))
            #expect(errors.first?.errorCode == PlaybackAPIErrorCode.badRequest && errors.first?.errorSubcode == subcode,
                    "\(errors.first?.message ?? "")")
            #expect(try Self.listing(app).total == 0, "nothing of a refused batch is stored")
        }
    }

    @Test("more than 500 events in a batch are refused")
    func batchLimit() async throws {
        try await withApp { app, _ in
            let events = (0...TrackerEvent.maximumBatch).map { Self.event("e\($0)", position: nil, session: nil) }
            let response = try Self.post(app, events)
            #expect(response.status == 400, "\(response.debugText)")
            #expect(try Self.listing(app).total == 0)
        }
    }

    @Test("a fault rule on route tracker answers instead, and the batch is not stored")
    func faultRoute() async throws {
        #expect(RouteClass.classify(["tracker"])?.0 == .tracker)
        try await withApp { app, _ in
            _ = try app.faults.add(FaultRule(route: .tracker, times: 1, status: 503))
            #expect(try Self.post(app, [Self.event("f")]).status == 503)
            #expect(try Self.listing(app).total == 0)
            #expect(try Self.receipt(Self.post(app, [Self.event("f")])).new == 1, "the next one goes through")
        }
    }

    @Test("a NUL character in a body string or a query value is refused with the error array before any handler; an escaped backslash before u0000 is no NUL")
    func nulRefused() async throws {
        try await withApp { app, _ in
            let nul = try app.request("POST", "/tracker", headers: [("Content-Type", "application/json")], body: try Self.body([Self.event("a\u{0}b")]))
            #expect(nul.status == 400 && nul.debugText.contains("INVALID_BODY") && nul.debugText.contains("NUL"), "\(nul.debugText)")
            #expect(try Self.listing(app).total == 0, "nothing stored, nothing cut short")
            let query = try app.request("GET", "/_admin/v1/tracker/events?video_id=a%00b")
            #expect(query.status == 400 && query.debugText.contains("INVALID_PARAMETER"), "\(query.debugText)")
            // `\\u0000` in JSON is a backslash and the letters u0000: a fine id.
            let letters = #"[{"id":"a\\u0000b","event":"play_started","video_id":"\#(Fixture.clearVideo)","account_id":"\#(Fixture.northwind)","time":"2026-11-25T17:00:00.000Z"}]"#
            let stored = try app.request("POST", "/tracker", headers: [("Content-Type", "application/json")], body: Array(letters.utf8))
            #expect(try Self.receipt(stored).new == 1)
            #expect(try Self.listing(app).events.first?.event.id == #"a\u0000b"#)
        }
        #expect(JSONBody.containsNULEscape(Array(#"{"a":"\u0000"}"#.utf8)))
        #expect(JSONBody.containsNULEscape(Array(#"{"a":"\\\u0000"}"#.utf8)), "an escaped backslash, then a NUL")
        #expect(!JSONBody.containsNULEscape(Array(#"{"a":"\\u0000","b":"\u0001"}"#.utf8)))
    }
}
