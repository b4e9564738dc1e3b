import Foundation
import TestKit
import MicroHTTP
import MockBackend
import Testing
import WireModels

@Suite("Playback API: search")
struct SearchTests {
    static let searchPath = "/accounts/\(Fixture.northwind)/videos"

    static func search(_ app: MockBackendApp, _ query: String, key: String = Fixture.northwindSearchKey) throws -> SearchResult {
        let response = try app.playback(searchPath + (query.isEmpty ? "" : "?" + query), key: key)
        try #require(response.status == 200, "search \(query): \(response.status) \(response.debugText)")
        return try response.decoded(SearchResult.self)
    }

    static func ids(_ result: SearchResult) -> [String] { result.videos.map(\.id) }

    static func nw(_ suffixes: Int...) -> [String] { suffixes.map { "6415818918\($0)" } }

    @Test("no q and no sort lists the account's videos newest updated_at first (the documented -updated_at); count is the total")
    func everything() async throws {
        try await withApp { app, _ in
            let result = try Self.search(app, "limit=100")
            #expect(result.count == 9)
            #expect(Self.ids(result) == Fixture.northwindVideos.reversed())
            let contoso = try app.playback("/accounts/\(Fixture.contoso)/videos", key: Fixture.contosoSearchKey)
            let contosoResult = try contoso.decoded(SearchResult.self)
            #expect(contosoResult.count == 2)
            #expect(Set(contosoResult.videos.map(\.accountID)) == [Fixture.contoso])
        }
    }

    @Test("q by field, tag, id, reference and custom field", arguments: [
        ("q=name:marathon", SearchTests.nw(106, 108)),
        ("q=NAME:Marathon", SearchTests.nw(106, 108)),
        ("q=tags:fairplay", SearchTests.nw(103, 104, 108)),
        ("q=tag:long", SearchTests.nw(106, 108)),
        ("q=tags:fair", []),  // tags match whole values
        ("q=id:6415818918105", SearchTests.nw(105)),
        ("q=reference_id:nw-marathon", SearchTests.nw(106)),
        ("q=genre:drama", SearchTests.nw(103, 104)),
        ("q=description:benchmarks", SearchTests.nw(107)),
        ("q=english", SearchTests.nw(109)),
        ("q=endurance", []),  // a plain word looks at name, description and tags, not custom fields
    ] as [(String, [String])])
    func fields(query: String, expected: [String]) async throws {
        try await withApp { app, _ in
            let result = try Self.search(app, query)
            // One term: every match is as relevant, so newest updated_at first (the fixture's ids grow with it).
            #expect(Self.ids(result) == expected.reversed())
            #expect(result.count == expected.count)
        }
    }

    @Test("+ makes a term required, - excludes it; plain terms are alternatives", arguments: [
        ("q=%2Btags:fairplay%20-tags:rental", SearchTests.nw(103, 108)),
        ("q=%2Btags:demo%20-tags:fairplay", SearchTests.nw(101, 102, 105)),
        ("q=%2Btags:demo+%2Btags:clear", SearchTests.nw(101, 105)),
        ("q=tags:rental+tags:purchase", SearchTests.nw(103, 104)),
        ("q=-tags:demo", SearchTests.nw(106, 107, 108, 109)),
    ] as [(String, [String])])
    func requiredAndExcluded(query: String, expected: [String]) async throws {
        try await withApp { app, _ in
            let result = try Self.search(app, query)
            // Every match here matches as many terms: newest updated_at first.
            #expect(Self.ids(result) == expected.reversed())
        }
    }

    @Test("a quoted phrase matches as a whole")
    func phrase() async throws {
        try await withApp { app, _ throws in
            #expect(Self.ids(try Self.search(app, "q=%22bars%20in%20english%22")) == Self.nw(109))
            #expect(try Self.search(app, "q=bars%20in%20english").count > 1)
            #expect(Self.ids(try Self.search(app, "q=%22two-hour%20marathon%22")) == Self.nw(108, 106))
            #expect(try Self.search(app, "q=%22marathon%20two-hour%22").count == 0)
            #expect(Self.ids(try Self.search(app, "q=name:%22(fairplay,%20to%20rent)%22")) == Self.nw(104))
        }
    }

    @Test("sort by name ascending and by -created_at descending")
    func sorting() async throws {
        try await withApp { app, _ in
            let byName = try Self.search(app, "sort=name")
            #expect(Self.ids(byName) == Self.nw(109, 102, 101, 103, 104, 105, 107, 106, 108))
            let names = byName.videos.map { $0.name.lowercased() }
            #expect(names == names.sorted())

            let newest = try Self.search(app, "sort=-created_at")
            #expect(Self.ids(newest) == Self.nw(109, 108, 107, 106, 105, 104, 103, 102, 101))
            let oldest = try Self.search(app, "sort=created_at")
            #expect(Self.ids(oldest) == Self.nw(101, 102, 103, 104, 105, 106, 107, 108, 109))
            // Equal durations keep the default order, newest updated_at first.
            #expect(Self.ids(try Self.search(app, "sort=-duration")).prefix(2) == Self.nw(108, 106)[...])
        }
    }

    @Test("limit and offset page the results; count stays the total")
    func paging() async throws {
        try await withApp { app, _ in
            let page = try Self.search(app, "sort=-created_at&limit=2&offset=1")
            #expect(page.count == 9)
            #expect(Self.ids(page) == Self.nw(108, 107))
            let filtered = try Self.search(app, "q=tags:fairplay&limit=1&offset=2")
            #expect(filtered.count == 3)
            #expect(Self.ids(filtered) == Self.nw(103))
            let past = try Self.search(app, "offset=50")
            #expect(past.count == 9)
            #expect(past.videos.isEmpty)
            let defaultLimit = try Self.search(app, "")
            #expect(defaultLimit.videos.count == 9)
            #expect(try Self.search(app, "limit=1000").videos.count == 9)
        }
    }

    @Test("search videos are full video objects")
    func fullObjects() async throws {
        try await withApp { app, _ in
            let result = try Self.search(app, "q=id:\(Fixture.clearVideo)")
            let searched = try #require(result.videos.first)
            let direct = try app.video(Fixture.clearVideo)
            #expect(searched == direct)
        }
    }

    @Test("a key that is not search-enabled is 403 ACCESS_DENIED/API")
    func notSearchEnabled() async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.searchPath + "?q=bars", key: Fixture.northwindPlayKey), 403, "ACCESS_DENIED", "API")
            try expectError(try app.playback("/accounts/\(Fixture.contoso)/videos", key: Fixture.contosoPlayKey), 403, "ACCESS_DENIED", "API")
            try expectError(try app.playback(Self.searchPath, key: Fixture.contosoSearchKey), 403, "ACCESS_DENIED", "ACCOUNT_ID")
        }
    }

    @Test("an unknown sort is 400 BAD_REQUEST/INVALID_SORT", arguments: ["colour", "-", "--name", "name,created_at", "NAME"])
    func badSort(sort: String) async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.searchPath + "?sort=\(sort)"), 400, "BAD_REQUEST", "INVALID_SORT")
        }
    }

    @Test("a limit or offset out of range or not a number is 400 BAD_REQUEST/ILLEGAL_QUERY", arguments: [
        "limit=0", "limit=1001", "limit=abc", "limit=-1", "limit=", "limit=1.5", "offset=-1", "offset=x",
    ])
    func badPaging(query: String) async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.searchPath + "?" + query), 400, "BAD_REQUEST", "ILLEGAL_QUERY")
        }
    }

    @Test("a q that does not parse is 400 BAD_REQUEST/ILLEGAL_QUERY", arguments: [
        "q=%22abc", "q=name:%22two%20hour", "q=name:", "q=-", "q=%2B", "q=tags:demo,", "q=tags:,demo", "q=tags:demo,,clear",
        "q=%2Btags:demo,%20bars", "q=%22%22", "q=:bars",
    ])
    func badQuery(query: String) async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.searchPath + "?" + query), 400, "BAD_REQUEST", "ILLEGAL_QUERY")
        }
    }

    @Test("a value an exact field cannot take is 400 BAD_REQUEST/INVALID_SEARCH", arguments: ["q=state:SOON", "q=playable:maybe", "q=complete:1"])
    func badFieldValue(query: String) async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.searchPath + "?" + query), 400, "BAD_REQUEST", "INVALID_SEARCH")
        }
    }
}

@Suite("Playback API: playlists")
struct PlaylistTests {
    static let playlists = "/accounts/\(Fixture.northwind)/playlists"

    @Test("a playlist by id and by ref:, with its videos in order")
    func byIDAndReference() async throws {
        try await withApp { app, _ in
            for idOrRef in [Fixture.featuredPlaylist, "ref:nw-featured"] {
                let response = try app.playback("\(Self.playlists)/\(idOrRef)", key: Fixture.northwindPlayKey)
                #expect(response.status == 200)
                let playlist = try response.decoded(Playlist.self)
                #expect(playlist.id == Fixture.featuredPlaylist)
                #expect(playlist.accountID == Fixture.northwind)
                #expect(playlist.name == "Featured")
                #expect(playlist.referenceID == "nw-featured")
                #expect(playlist.type == "EXPLICIT")
                #expect(playlist.videos.map(\.id) == SearchTests.nw(101, 103, 106, 104))
                #expect(playlist.videos.first?.sources.isEmpty == false)
            }
        }
    }

    @Test("limit and offset page a playlist's videos")
    func paging() async throws {
        try await withApp { app, _ in
            let page = try app.playback("\(Self.playlists)/\(Fixture.featuredPlaylist)?limit=2&offset=1").decoded(Playlist.self)
            #expect(page.videos.map(\.id) == SearchTests.nw(103, 106))
            let tail = try app.playback("\(Self.playlists)/ref:nw-featured?offset=3").decoded(Playlist.self)
            #expect(tail.videos.map(\.id) == SearchTests.nw(104))
            let none = try app.playback("\(Self.playlists)/ref:nw-featured?offset=10").decoded(Playlist.self)
            #expect(none.videos.isEmpty)
            try expectError(try app.playback("\(Self.playlists)/\(Fixture.featuredPlaylist)?limit=0"), 400, "BAD_REQUEST", "ILLEGAL_QUERY")
        }
    }

    @Test("unknown playlists, and other accounts' playlists, are 404 NOT_FOUND/PLAYLIST_NOT_FOUND", arguments: [
        "1749000000099", "ref:no-such-list", Fixture.contosoPlaylist, "ref:contoso-picks",
    ])
    func notFound(idOrRef: String) async throws {
        try await withApp { app, _ in
            try expectError(try app.playback("\(Self.playlists)/\(idOrRef)"), 404, "NOT_FOUND", "PLAYLIST_NOT_FOUND")
        }
    }

    @Test("the other account reads its own playlist; a playlist without description has null")
    func contoso() async throws {
        try await withApp { app, _ in
            let response = try app.playback("/accounts/\(Fixture.contoso)/playlists/ref:contoso-picks", key: Fixture.contosoPlayKey)
            let playlist = try response.decoded(Playlist.self)
            #expect(playlist.videos.map(\.id) == [Fixture.contosoClearVideo, Fixture.contosoAESVideo])
            #expect(playlist.description == nil)
            #expect(try response.text().contains(#""description":null"#))
        }
    }
}
