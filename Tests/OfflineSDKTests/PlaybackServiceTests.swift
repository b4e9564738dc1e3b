import Foundation
import Logging
import MockBackend
import OfflineSDK
import Testing
import WireModels

/// PlaybackService against the real mock backend on a free port.
@Suite("PlaybackService, live")
struct PlaybackServiceTests {
    static let account = Catalog.account
    static let searchKey = Catalog.searchKey
    static let playKey = Catalog.playKey

    @Test("finds a video by id and by reference id, keeping its whole JSON")
    func findVideo() async throws {
        try await withBackend { server in
            let service = PlaybackService(baseURL: server.baseURL, accountID: Self.account, policyKey: Self.playKey)
            let byID = try await service.findVideo(id: "6415818918103")
            let byRef = try await service.findVideo(referenceID: "nw-fps-purchase")
            #expect(byID.id == byRef.id)
            #expect(byID.name == "Color Bars (FairPlay, to buy)")
            #expect(byID.canBeDownloaded)
            #expect(byID.usesFairPlay)
            #expect(byID.duration == 12)
            #expect(byID.properties["duration"] == .number(12000))
            #expect(byID.properties["ad_keys"] == .null)
            #expect(byID.textTracks.filter { !$0.isThumbnailTrack }.map(\.srclang) == ["en", "fr", "de"])
            let clear = try await service.findVideo(id: "6415818918105")
            #expect(!clear.canBeDownloaded)
            #expect(!clear.usesFairPlay)
        }
    }

    @Test("errors carry the HTTP status and the parsed error array")
    func errors() async throws {
        try await withBackend { server in
            let service = PlaybackService(baseURL: server.baseURL, accountID: Self.account, policyKey: Self.playKey)
            let missing = await #expect(throws: PlaybackServiceError.self) { try await service.findVideo(id: "404404") }
            #expect(missing?.code == .http)
            #expect(missing?.status == 404)
            #expect(missing?.errors.first?.errorSubcode == "VIDEO_NOT_FOUND")

            let noSearch = await #expect(throws: PlaybackServiceError.self) { try await service.search(query: "bars") }
            #expect(noSearch?.status == 403)
            #expect(noSearch?.errors.first?.errorSubcode == "API")

            let wrongKey = PlaybackService(baseURL: server.baseURL, accountID: Self.account, policyKey: "nope")
            let unauthorized = await #expect(throws: PlaybackServiceError.self) { try await wrongKey.findVideo(id: "6415818918101") }
            #expect(unauthorized?.status == 401)
            #expect(unauthorized?.errors.first?.errorCode == "INVALID_POLICY_KEY")

            let badID = await #expect(throws: PlaybackServiceError.self) { try await service.findVideo(id: "../x") }
            #expect(badID?.code == .invalidArgument)
            let emptyVideoRef = await #expect(throws: PlaybackServiceError.self) { try await service.findVideo(referenceID: "") }
            #expect(emptyVideoRef?.code == .invalidArgument)
            let emptyPlaylistRef = await #expect(throws: PlaybackServiceError.self) { try await service.findPlaylist(referenceID: "") }
            #expect(emptyPlaylistRef?.code == .invalidArgument, "an empty reference id is refused before any request, as a video's")
        }
    }

    @Test("a dead server is a transport error, not a crash")
    func transport() async throws {
        let service = PlaybackService(baseURL: "http://127.0.0.1:1", accountID: Self.account, policyKey: Self.playKey)
        let error = await #expect(throws: PlaybackServiceError.self) { try await service.findVideo(id: "1") }
        #expect(error?.code == .transport)
        #expect(error?.status == nil)
    }

    @Test("search and playlists page through videos")
    func searchAndPlaylists() async throws {
        try await withBackend { server in
            let service = PlaybackService(baseURL: server.baseURL, accountID: Self.account, policyKey: Self.searchKey)
            let result = try await service.search(query: "tags:fairplay", sort: "name", limit: 2)
            #expect(result.count == 3)
            #expect(result.videos.map(\.name) == ["Color Bars (FairPlay, to buy)", "Color Bars (FairPlay, to rent)"])
            #expect(result.videos.allSatisfy { $0.properties["id"]?.stringValue == $0.id })

            let playlist = try await service.findPlaylist(referenceID: "nw-featured", limit: 2, offset: 1)
            #expect(playlist.playlist.name == "Featured")
            #expect(playlist.videos.map(\.id) == ["6415818918103", "6415818918106"])
        }
    }
}
