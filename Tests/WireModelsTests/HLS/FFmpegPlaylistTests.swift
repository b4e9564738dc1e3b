import Testing
import WireModels
import Foundation

/// Playlists written by ffmpeg 5.1.9, copied verbatim into Resources. Inputs were lavfi `testsrc` and
/// `sine` (6-7 s, libx264 yuv420p + aac), `-f hls -hls_time 2 -hls_playlist_type vod`, plus:
/// - vod: `-r 30000/1001`; master: `-var_stream_map "v:0,a:0 v:1,a:1" -master_pl_name master.m3u8`
/// - master-audio-group: `-var_stream_map "a:0,agroup:aud,language:en,name:English,default:yes v:0,agroup:aud v:1,agroup:aud"`
/// - fmp4: `-hls_segment_type fmp4 -hls_flags independent_segments`; byterange: `-hls_flags single_file`
/// - aes128: `-hls_key_info_file` with a key URI and IV `00000000000000000000000000000001`
@Suite("Playlists written by ffmpeg")
struct FFmpegPlaylistTests {
    static let files = [
        "ffmpeg-vod.m3u8", "ffmpeg-master.m3u8", "ffmpeg-master-audio-group.m3u8", "ffmpeg-fmp4.m3u8",
        "ffmpeg-byterange.m3u8", "ffmpeg-aes128.m3u8",
    ]

    @Test("every ffmpeg playlist parses, and re-parsing its rendering gives the same model", arguments: files)
    func modelRoundTrip(file: String) throws {
        let playlist = try HLSPlaylist.parse(TestResources.text("HLS/\(file)"))
        #expect(try HLSPlaylist.parse(playlist.render()) == playlist)
    }

    @Test("a VOD media playlist: header tags, 6-decimal EXTINF, ENDLIST")
    func vod() throws {
        let text = try TestResources.text("HLS/ffmpeg-vod.m3u8")
        guard case let .media(playlist) = try HLSPlaylist.parse(text) else {
            Issue.record("expected a media playlist")
            return
        }
        #expect(playlist.version == 3 && playlist.targetDuration == 2 && playlist.mediaSequence == 0)
        #expect(playlist.playlistType == .vod && playlist.endList)
        #expect(playlist.segments.map(\.duration) == [2.002, 2.002, 2.002, 1.001])
        #expect(playlist.segments.map(\.uri) == ["vod_000.ts", "vod_001.ts", "vod_002.ts", "vod_003.ts"])
        #expect(playlist.segments.allSatisfy { $0.title == nil && $0.keys.isEmpty && $0.byteRange == nil })
        // The only difference from canonical form is the EXTINF precision.
        #expect(playlist.render() == text.replacingOccurrences(of: "000,\n", with: ",\n"))
    }

    @Test("a -var_stream_map master: variants with BANDWIDTH, RESOLUTION, CODECS; blank lines skipped")
    func varStreamMapMaster() throws {
        let master = try MasterPlaylist(parsing: TestResources.text("HLS/ffmpeg-master.m3u8"))
        #expect(master.version == 3)
        #expect(master.variants.map(\.bandwidth) == [985_600, 435_600])
        #expect(master.variants.map(\.resolution) == [Resolution(width: 640, height: 360), Resolution(width: 320, height: 180)])
        #expect(master.variants.map(\.codecs) == ["avc1.64001e,mp4a.40.2", "avc1.64000d,mp4a.40.2"])
        #expect(master.variants.map(\.uri) == ["stream_0.m3u8", "stream_1.m3u8"])
        #expect(master.render() == """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-STREAM-INF:BANDWIDTH=985600,CODECS="avc1.64001e,mp4a.40.2",RESOLUTION=640x360
        stream_0.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=435600,CODECS="avc1.64000d,mp4a.40.2",RESOLUTION=320x180
        stream_1.m3u8

        """)
    }

    @Test("a master with an audio group (agroup) links variants to the EXT-X-MEDIA rendition")
    func audioGroupMaster() throws {
        let master = try MasterPlaylist(parsing: TestResources.text("HLS/ffmpeg-master-audio-group.m3u8"))
        #expect(master.renditions == [
            Rendition(type: .audio, groupID: "group_aud", language: "en", name: "audio_0", isDefault: true, uri: "s_English.m3u8"),
        ])
        #expect(master.variants.map(\.audio) == ["group_aud", "group_aud"])
        #expect(master.renditions(inGroup: master.variants[0].audio ?? "", type: .audio).count == 1)
    }

    @Test("fMP4 output: EXT-X-MAP before the first segment, INDEPENDENT-SEGMENTS, version 7")
    func fragmentedMP4() throws {
        let playlist = try MediaPlaylist(parsing: TestResources.text("HLS/ffmpeg-fmp4.m3u8"))
        #expect(playlist.version == 7 && playlist.independentSegments)
        #expect(playlist.segments[0].map == InitializationSection(uri: "init.mp4"))
        #expect(playlist.segments.dropFirst().allSatisfy { $0.map == nil })
        #expect(playlist.mapInEffect(forSegmentAt: 2)?.uri == "init.mp4")
    }

    @Test("single_file output: EXT-X-BYTERANGE after EXTINF")
    func singleFileByteRanges() throws {
        let playlist = try MediaPlaylist(parsing: TestResources.text("HLS/ffmpeg-byterange.m3u8"))
        #expect(playlist.version == 4)
        #expect(playlist.segments.map(\.byteRange) == [
            ByteRange(length: 40984, offset: 0), ByteRange(length: 41548, offset: 40984), ByteRange(length: 41736, offset: 82532),
        ])
        #expect(Set(playlist.segments.map(\.uri)) == ["out.ts"])
    }

    @Test("-hls_key_info_file output: one AES-128 KEY with an IV before the first segment")
    func aes128() throws {
        let playlist = try MediaPlaylist(parsing: TestResources.text("HLS/ffmpeg-aes128.m3u8"))
        let key = try #require(playlist.segments[0].key)
        #expect(key == EncryptionKey(method: .aes128, uri: "https://keys.example.com/enc.key", iv: "0x00000000000000000000000000000001"))
        #expect(playlist.keyInEffect(forSegmentAt: 2) == key)
        #expect(playlist.segments[1].keys.isEmpty)
    }
}
