import Foundation
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// The CMS API's playlists: manual and smart ones made, listed, changed and deleted, and served
/// by the Playback API (only their playable videos); on both stores.
@Suite("CMS API: playlists")
struct CMSPlaylistTests {
    static func playbackPlaylist(_ app: MockBackendApp, _ id: String) throws -> Playlist {
        let response = try app.playback("/accounts/\(Fixture.northwind)/playlists/\(id)")
        try #require(response.status == 200, "\(response.debugText)")
        return try response.decoded(Playlist.self)
    }

    @Test("a manual playlist keeps its order and a smart one follows its tag search and type; the Playback API serves only their playable videos", arguments: StoreKind.allCases)
    func manualAndSmart(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let token = try OAuthTests.token(app)
            let pending = try #require(try CMSVideoTests.object(CMSVideoTests.cms(app, "POST", "/videos", token: token, ["name": "Soon"]))["id"] as? String)
            let ids = [Fixture.aesVideo, pending, Fixture.clearVideo]
            let manual = try CMSVideoTests.cms(app, "POST", "/playlists", token: token,
                                               ["name": "Mine", "type": "EXPLICIT", "reference_id": "mine", "video_ids": ids])
            #expect(manual.status == 201, "\(manual.debugText)")
            let manualID = try #require(try CMSVideoTests.object(manual)["id"] as? String)
            #expect(try CMSVideoTests.object(manual)["video_ids"] as? [String] == ids)
            let served = try Self.playbackPlaylist(app, manualID)
            #expect(served.videos.map(\.id) == [Fixture.aesVideo, Fixture.clearVideo], "the video without media is left out")
            #expect(served.videoIDs == ids)
            let listed = try CMSVideoTests.array(CMSVideoTests.cms(app, "GET", "/playlists/\(manualID)/videos", token: token))
            #expect(listed.compactMap { $0["id"] as? String } == ids)
            #expect(try CMSVideoTests.object(CMSVideoTests.cms(app, "GET", "/counts/playlists/ref:mine/videos", token: token))["count"] as? Int == 3)
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "DELETE", "/videos/\(pending)", token: token), 409, "REFERENCES_EXIST")

            let smart = try CMSVideoTests.object(CMSVideoTests.cms(app, "POST", "/playlists", token: token,
                                                                   ["name": "FairPlay A-Z", "type": "ALPHABETICAL", "search": "tags:fairplay", "limit": 2]))
            let smartID = try #require(smart["id"] as? String)
            #expect(smart["video_ids"] == nil && smart["search"] as? String == "tags:fairplay")
            let fairplay = try app.playback("/accounts/\(Fixture.northwind)/videos?q=tags:fairplay&sort=name").decoded(SearchResult.self).videos
            #expect(try Self.playbackPlaylist(app, smartID).videos.map(\.id) == Array(fairplay.prefix(2)).map(\.id))
            let both = try CMSVideoTests.object(CMSVideoTests.cms(app, "PATCH", "/playlists/\(smartID)", token: token,
                                                                  ["search": "+tags:fairplay,rental", "limit": 10]))
            #expect(both["search"] as? String == "+tags:fairplay,rental")
            #expect(try Self.playbackPlaylist(app, smartID).videos.allSatisfy { $0.tags.contains("rental") })
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "PATCH", "/playlists/\(smartID)", token: token, ["type": "EXPLICIT"]),
                                             422, "VALIDATION_ERROR")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "PATCH", "/playlists/\(smartID)", token: token, ["video_ids": []]),
                                             422, "VALIDATION_ERROR")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "POST", "/playlists", token: token,
                                                                   ["name": "x", "type": "EXPLICIT", "video_ids": [Fixture.contosoClearVideo]]),
                                             422, "VALIDATION_ERROR")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "POST", "/playlists", token: token, ["name": "x", "type": "ALPHABETICAL",
                                                                                                              "search": "name:x"]), 422, "VALIDATION_ERROR")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "POST", "/playlists", token: token, ["name": "x"]), 422, "VALIDATION_ERROR")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "POST", "/playlists", token: token,
                                                                   ["name": "x", "type": "EXPLICIT", "reference_id": "mine"]), 409, "REFERENCE_ID_IN_USE")

            let explicitOnes = try CMSVideoTests.array(CMSVideoTests.cms(app, "GET", "/playlists?q=type:EXPLICIT&sort=name", token: token))
            #expect(explicitOnes.compactMap { $0["name"] as? String } == ["Featured", "FairPlay titles", "Mine"].sorted { $0.lowercased() < $1.lowercased() })
            #expect(try CMSVideoTests.object(CMSVideoTests.cms(app, "GET", "/counts/playlists", token: token))["count"] as? Int == 4)
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "GET", "/playlists?sort=duration", token: token), 400, "INVALID_SORT")

            let other = try makeApp()
            #expect(try await eventually { try other.playback("/accounts/\(Fixture.northwind)/playlists/ref:mine").status == 200 })
            #expect(try CMSVideoTests.cms(app, "DELETE", "/playlists/\(manualID)", token: token).status == 204)
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "GET", "/playlists/\(manualID)", token: token), 404, "RESOURCE_NOT_FOUND")
            #expect(try CMSVideoTests.cms(app, "DELETE", "/videos/\(pending)", token: token).status == 204)
        }
    }
}
