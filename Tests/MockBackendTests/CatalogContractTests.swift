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
            var video = try await server.fetchVideo(Fixture.clearVideo)
            // The sideband tracks; the thumbnail track last (CMAFDeliveryTests).
            #expect(video.textTracks.last?.isThumbnailTrack == true)
            video.textTracks.removeAll { $0.isThumbnailTrack }
            #expect(video.textTracks.map(\.srclang) == ["en", "fr", "de"])
            #expect(video.textTracks.map(\.label) == ["English", "Français", "Deutsch"])
            #expect(video.textTracks.map(\.kind) == ["captions", "captions", "subtitles"])
            let raw = try await Contract.get(server, "\(Contract.videos)/\(Fixture.clearVideo)")
            #expect(raw.text.contains(#""kind":"captions""#) && raw.text.contains(#""label":"Français""#))

            // A kind the catalog names for a language the video lacks, or a kind that does not exist, is refused.
            let path = "/_admin/v1/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)"
            // So is a remote text track whose kind, language or URL is not one (schemathesis found an empty kind stored and served).
            let remote = { (kind: String, srclang: String, src: String) in
                #"{"remote_text_tracks":[{"id":"t1","src":"\#(src)","srclang":"\#(srclang)","kind":"\#(kind)","default":false}]}"#
            }
            for patch in [#"{"text_track_kinds":{"es":"captions"}}"#, #"{"text_track_kinds":{"en":"karaoke"}}"#,
                          remote("", "en", "https://cdn.example/en.vtt"), remote("captions", "", "https://cdn.example/en.vtt"),
                          remote("captions", "en", "ftp://cdn.example/en.vtt")] {
                let refused = try await Contract.admin(server, path, ["-X", "PATCH", "-H", "Content-Type: application/merge-patch+json", "--data-binary", patch])
                #expect(refused.status == 400, "\(patch): \(refused.text)")
            }
            let patched = try await Contract.admin(server, path, ["-X", "PATCH", "-H", "Content-Type: application/merge-patch+json",
                                                              "--data-binary", #"{"text_track_kinds":{"en":"subtitles","fr":"descriptions"}}"#])
            #expect(patched.status == 200, "\(patched.text)")
            #expect(try await server.fetchVideo(Fixture.clearVideo).textTracks.filter { !$0.isThumbnailTrack }.map(\.kind) == ["subtitles", "descriptions", "subtitles"])
            let added = try await Contract.admin(server, path, ["-X", "PATCH", "-H", "Content-Type: application/merge-patch+json",
                                                            "--data-binary", remote("chapters", "en", "https://cdn.example/en.vtt")])
            #expect(added.status == 200, "\(added.text)")
            #expect(try await server.fetchVideo(Fixture.clearVideo).textTracks.last { !$0.isThumbnailTrack }?.kind == "chapters")
        }
    }

    // MARK: 4. Images

    @Test("images: every size clients derive from the poster URL is a JPEG of that size; others 404")
    func imageSizes() async throws {
        try await withLiveServer { server in
            let poster = try #require(try await server.fetchVideo(Fixture.clearVideo).poster)
            let sizes = ["1920x1080", "1280x720", "960x540", "640x360", "480x270", "320x180", "160x90",
                         "1080x1920", "720x1280", "540x960", "360x640", "1000x1500", "600x900", "400x600", "1080x1080"]
            for size in sizes {
                let url = poster.replacingOccurrences(of: "/1280x720/", with: "/\(size)/")
                let response = try await Curl.fetch(url)
                #expect(response.status == 200, "\(size)")
                #expect(response.header("Content-Type") == "image/jpeg")
                #expect(response.header("Repr-Digest") != nil)
                #expect(Self.jpegSize(response.body) == size, "\(size)")
            }
            for size in ["1921x1080", "0x0", "01280x720", "1280x0720", "1280", "x", "99999x99999"] {
                let url = poster.replacingOccurrences(of: "/1280x720/", with: "/\(size)/")
                #expect(try await Curl.fetch(url).status == 404, "\(size)")
            }
        }
    }

    /// `WxH` from a JPEG's first start-of-frame marker.
    static func jpegSize(_ bytes: [UInt8]) -> String? {
        var index = 2
        while index + 9 < bytes.count, bytes[index] == 0xFF {
            let marker = bytes[index + 1]
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            if (0xC0...0xC3).contains(marker) {
                let height = Int(bytes[index + 5]) << 8 | Int(bytes[index + 6])
                let width = Int(bytes[index + 7]) << 8 | Int(bytes[index + 8])
                return "\(width)x\(height)"
            }
            index += 2 + length
        }
        return nil
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
