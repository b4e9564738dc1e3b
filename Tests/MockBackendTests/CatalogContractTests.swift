import Foundation
import MicroHTTP
import MockBackend
import Testing
import TestKit
import WireModels

/// Text tracks, image sizes and playlists as a client written against the real service expects them (issue 26).
@Suite("Contract, live: text tracks, images, playlists")
struct CatalogContractTests {
    // MARK: 3. Text tracks

    @Test("text tracks: kind as the catalog says per track, captions by default; srclang and label exact")
    func textTrackKinds() async throws {
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.clearVideo)
            #expect(video.textTracks.map(\.srclang) == ["en", "fr", "de"])
            #expect(video.textTracks.map(\.label) == ["English", "Français", "Deutsch"])
            #expect(video.textTracks.map(\.kind) == ["captions", "captions", "subtitles"])
            let raw = try await Contract.get(server, "\(Contract.videos)/\(Fixture.clearVideo)")
            #expect(raw.text.contains(#""kind":"captions""#) && raw.text.contains(#""label":"Français""#))

            // A kind the catalog names for a language the video lacks, or a kind that does not exist, is refused.
            let path = "/_admin/v1/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)"
            for patch in [#"{"text_track_kinds":{"es":"captions"}}"#, #"{"text_track_kinds":{"en":"karaoke"}}"#] {
                let refused = try await Contract.admin(server, path, ["-X", "PATCH", "-H", "Content-Type: application/merge-patch+json", "--data-binary", patch])
                #expect(refused.status == 400, "\(patch): \(refused.text)")
            }
            let patched = try await Contract.admin(server, path, ["-X", "PATCH", "-H", "Content-Type: application/merge-patch+json",
                                                              "--data-binary", #"{"text_track_kinds":{"en":"subtitles","fr":"descriptions"}}"#])
            #expect(patched.status == 200, "\(patched.text)")
            #expect(try await server.fetchVideo(Fixture.clearVideo).textTracks.map(\.kind) == ["subtitles", "descriptions", "subtitles"])
        }
    }

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
