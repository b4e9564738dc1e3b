import Foundation
import MicroHTTP
import MockBackend
import Testing
import TestKit
import WireModels

/// Text tracks, image sizes and playlists as a client written against the real service expects them (issue 26).
@Suite("Contract, live: text tracks, images, playlists")
struct CatalogContractTests {
    // MARK: 5. Playlists

    @Test("playlists carry video_ids: every id in order, whatever the page")
    func playlistVideoIDs() async throws {
        try await withLiveServer { server in
            let response = try await Contract.get(server, "/playback/v1/accounts/\(Fixture.northwind)/playlists/\(Fixture.featuredPlaylist)?limit=1&offset=1",
                                              key: Fixture.northwindPlayKey)
            let playlist = try WireJSON.decoder().decode(Playlist.self, from: Data(response.body))
            #expect(playlist.videoIDs == SearchTests.nw(101, 103, 106, 104))
            #expect(playlist.videos.map(\.id) == SearchTests.nw(103))
            #expect(response.text.contains(#""video_ids":["6415818918101","6415818918103","6415818918106","6415818918104"]"#))
        }
    }
}
