import Foundation
import MicroHTTP
@testable import MockBackend
import TestKit
import Testing
import WireModels

/// Date ranges in the Playback API's search `q` (issue 26): `created_at:2018-01-01..2018-02-01`,
/// full times, relative times from the backend's movable clock, open ranges.
@Suite("Search: date ranges")
struct SearchDateRangeTests {
    static func date(_ text: String) -> Date { WireDate.date(from: text)! }
    static let now = date("2024-06-02T12:00:00.000Z")

    @Test("ends: a date is its whole UTC day (to its last millisecond), a time its instant, relative times and NOW count from the clock")
    func parsing() throws {
        func range(_ text: String) throws -> SearchDateRange { try #require(SearchDateRange(text, now: Self.now), "\(text)") }
        #expect(try range("2018-01-01..2018-02-01") == SearchDateRange(lower: Self.date("2018-01-01T00:00:00.000Z"),
                                                                          upper: Self.date("2018-02-02T00:00:00.000Z").addingTimeInterval(-0.001)))
        #expect(try range("2012-08-01T00:00:00Z..2012-09-01T06:30:00.500Z") == SearchDateRange(
            lower: Self.date("2012-08-01T00:00:00.000Z"), upper: Self.date("2012-09-01T06:30:00.500Z")))
        #expect(try range("2012-08-01T02:00:00+02:00..").lower == Self.date("2012-08-01T00:00:00.000Z"))
        #expect(try range("2012-08-01T10:15Z").lower == Self.date("2012-08-01T10:15:00.000Z"))
        #expect(try range("2013-08-11..") == SearchDateRange(lower: Self.date("2013-08-11T00:00:00.000Z"), upper: nil))
        #expect(try range("..NOW") == SearchDateRange(lower: nil, upper: Self.now))
        #expect(try range("2024-06-01") == SearchDateRange(lower: Self.date("2024-06-01T00:00:00.000Z"), upper: Self.date("2024-06-02T00:00:00.000Z").addingTimeInterval(-0.001)))
        for (text, seconds) in [("-1d", 86_400.0), ("-2days", 172_800), ("-1day", 86_400), ("-4hours", 14_400), ("-3h", 10_800),
                                ("-60minutes", 3_600), ("-1minute", 60)] {
            #expect(try range(text) == SearchDateRange(lower: Self.now.addingTimeInterval(-seconds), upper: Self.now), "\(text)")
            #expect(try range(text + "..").upper == nil, "\(text)..")
        }
        #expect(try range("-2days..-1d") == SearchDateRange(lower: Self.now.addingTimeInterval(-172_800), upper: Self.now.addingTimeInterval(-86_400)))
        for bad in ["", "..", "...", "yesterday", "2018-13-01", "2018-02-30", "2018-1-1", "18-01-01", "2018-01-01..soon", "-1", "-1y", "+1d",
                    "-d", "2018-01-01T25:00Z", "2018-01-01T10", "2018-01-01T10:00:00+25:00", "2018-01-01..2018-02-01..", "now-1d"] {
            #expect(SearchDateRange(bad, now: Self.now) == nil, "\(bad)")
        }
    }

    @Test("live: created_at, updated_at and published_at ranges, relative to the clock the admin API moves; malformed is 400 ILLEGAL_QUERY")
    func live() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(directory: directory, clock: BackendClock(fixedAt: Self.now)) { server in
                func ids(_ q: String) async throws -> [String] {
                    let escaped = try #require(q.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                    let response = try await Contract.get(server, Contract.videos + "?limit=100&sort=created_at&q=" + escaped)
                    try #require(response.status == 200, "\(q): \(response.text)")
                    return try WireJSON.decoder().decode(SearchResult.self, from: Data(response.body)).videos.map(\.id)
                }
                #expect(try await ids("created_at:2024-04-01..2024-05-01") == ["6415818918103", "6415818918104", "6415818918105"])
                #expect(try await ids("created_at:2024-03-01T09:00:00Z..2024-03-03T08:59:59Z") == ["6415818918101"])
                #expect(try await ids("updated_at:2024-03-02") == ["6415818918101"])
                #expect(try await ids("published_at:2024-04-02") == ["6415818918103"])
                #expect(try await ids("created_at:2024-06-02..") == ["6415818918107", "6415818918108", "6415818918109"])
                #expect(try await ids("created_at:..2024-03-03") == ["6415818918101", "6415818918102"])
                #expect(try await ids("created_at:..NOW").count == 7)
                // NOW is 2024-06-02 12:00: a day back reaches the video of 06-02 09:00 only.
                #expect(try await ids("created_at:-1d") == ["6415818918107"])
                #expect(try await ids("created_at:-4hours") == ["6415818918107"])
                #expect(try await ids("created_at:-60minutes") == [])
                #expect(try await ids("created_at:-2days") == ["6415818918106", "6415818918107"])
                // Combined with other terms: required and excluded.
                #expect(try await ids("+created_at:2024-04-01..2024-06-30 +tags:fairplay") == ["6415818918103", "6415818918104", "6415818918108"])
                #expect(try await ids("+created_at:2024-06-01.. -created_at:-1d") == ["6415818918106", "6415818918108", "6415818918109"])
                // No mock video has a schedule: a schedule range matches none, a malformed one is still refused.
                #expect(try await ids("schedule.starts_at:..NOW") == [])

                // Moving the clock a month on (through the admin API) moves NOW and the relative ranges.
                let moved = try await Contract.admin(server, "/_admin/v1/clock", ["-X", "POST", "-H", "Content-Type: application/json",
                                                                                  "--data", #"{"offset_seconds": 2592000}"#])
                #expect(moved.status == 200, "\(moved.text)")
                #expect(try await ids("created_at:-1d") == [])
                #expect(try await ids("created_at:-2days") == ["6415818918109"])
                #expect(try await ids("created_at:..NOW").count == 9)

                for bad in ["created_at:yesterday", "created_at:2018-02-30", "updated_at:2018-01-01..soon", "published_at:..",
                            "created_at:-1y", "schedule.ends_at:tomorrow", "+created_at:2018-01-01T25:00Z"] {
                    let escaped = try #require(bad.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                    try Contract.expectError(try await Contract.get(server, Contract.videos + "?q=" + escaped), 400, "BAD_REQUEST", "ILLEGAL_QUERY")
                }
            }
        }
    }
}
