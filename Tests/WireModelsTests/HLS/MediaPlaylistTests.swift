import Testing
import WireModels
import Foundation

@Suite("Media playlists")
struct MediaPlaylistTests {
    @Test("a FairPlay SAMPLE-AES playlist: one KEY before the first segment applies to all")
    func sampleAES() throws {
        let text = try TestResources.text("HLS/sample-aes-media.m3u8")
        let playlist = try MediaPlaylist(parsing: text)
        #expect(playlist.version == 5 && playlist.targetDuration == 6 && playlist.mediaSequence == 0)
        #expect(playlist.playlistType == .vod && playlist.independentSegments && playlist.endList)
        #expect(playlist.segments.map(\.duration) == [6, 6, 3.52])
        let key = try #require(playlist.segments[0].key)
        #expect(key.method == .sampleAES)
        #expect(key.uri == "skd://0f4b2c1d-9e8a-4b7c-a6d5-e4f3a2b1c0d9")
        #expect(key.keyFormat == EncryptionKey.fairPlayKeyFormat && key.keyFormatVersions == "1")
        #expect(key.ivBytes == [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF])
        #expect(playlist.segments[1].keys.isEmpty && playlist.segments[2].keys.isEmpty)
        #expect((0..<3).map { playlist.keyInEffect(forSegmentAt: $0) } == [key, key, key])
        #expect(playlist.render() == text)
    }

    @Test("AES-128 with key rotation, METHOD=NONE, IVs, discontinuities and an EVENT playlist")
    func aes128Rotation() throws {
        let text = try TestResources.text("HLS/aes128-rotation-media.m3u8")
        let playlist = try MediaPlaylist(parsing: text)
        #expect(playlist.mediaSequence == 120 && playlist.discontinuitySequence == 2)
        #expect(playlist.playlistType == .event && !playlist.endList)
        #expect(playlist.segments.map(\.discontinuity) == [false, false, true, true, false])
        #expect(playlist.segments.map(\.keys.count) == [1, 0, 1, 1, 0])
        #expect(playlist.segments[0].title == "Opening" && playlist.segments[1].title == nil)
        #expect(playlist.segments[0].otherTags == ["#EXT-X-PROGRAM-DATE-TIME:2024-03-01T12:00:00.000Z"])
        let effective = (0..<5).map { playlist.keyInEffect(forSegmentAt: $0)?.uri?.split(separator: "?").first }
        #expect(effective == [
            "https://mock.example/license/v1/aes128/1752604059001/6c1e5a2e/k1",
            "https://mock.example/license/v1/aes128/1752604059001/6c1e5a2e/k1",
            nil,
            "https://mock.example/license/v1/aes128/1752604059001/6c1e5a2e/k2",
            "https://mock.example/license/v1/aes128/1752604059001/6c1e5a2e/k2",
        ])
        #expect(playlist.keysInEffect(forSegmentAt: 2).map(\.method) == [.none])
        #expect(playlist.segments[3].key?.ivBytes?.last == 0x7B)
        #expect(playlist.render() == text)
    }

    @Test("BYTERANGE with and without offsets, and MAP with a BYTERANGE")
    func byteRangesAndMaps() throws {
        let text = try TestResources.text("HLS/byterange-map-media.m3u8")
        let playlist = try MediaPlaylist(parsing: text)
        #expect(playlist.segments[0].map == InitializationSection(uri: "main.mp4", byteRange: ByteRange(length: 720, offset: 0)))
        #expect(playlist.segments.map(\.byteRange) == [
            ByteRange(length: 40984, offset: 720), ByteRange(length: 41548), ByteRange(length: 41736),
            ByteRange(length: 1000, offset: 500),
        ])
        #expect((0..<4).map { playlist.resolvedByteRange(forSegmentAt: $0)?.offset } == [720, 41704, 83252, 500])
        #expect((0..<4).map { playlist.mapInEffect(forSegmentAt: $0)?.uri } == ["main.mp4", "main.mp4", "main.mp4", "other.mp4"])
        #expect(playlist.render() == text)
    }

    @Test("a playlist built in code renders EXTINF with three decimals and parses back equal")
    func renderFromModel() throws {
        let key = EncryptionKey(method: .aes128, uri: "https://k/1", iv: EncryptionKey.ivString([UInt8](repeating: 0, count: 15) + [9]))
        let fairPlay = EncryptionKey(method: .sampleAES, uri: "skd://x", keyFormat: EncryptionKey.fairPlayKeyFormat, keyFormatVersions: "1")
        let playlist = MediaPlaylist(
            version: 5, targetDuration: 6, mediaSequence: 3, playlistType: .vod,
            segments: [
                Segment(duration: 6, uri: "s0.ts", keys: [key, fairPlay]),
                Segment(duration: 5.5, title: "two", uri: "s1.ts", discontinuity: true, otherTags: ["#EXT-X-GAP"]),
                Segment(duration: 0.041, uri: "s2.ts", byteRange: ByteRange(length: 10, offset: 0), key: .init(method: .none)),
            ],
            endList: true)
        let expected = """
        #EXTM3U
        #EXT-X-VERSION:5
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:3
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXT-X-KEY:METHOD=AES-128,URI="https://k/1",IV=0x00000000000000000000000000000009
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://x",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
        #EXTINF:6.000,
        s0.ts
        #EXT-X-DISCONTINUITY
        #EXT-X-GAP
        #EXTINF:5.500,two
        s1.ts
        #EXT-X-KEY:METHOD=NONE
        #EXTINF:0.041,
        #EXT-X-BYTERANGE:10@0
        s2.ts
        #EXT-X-ENDLIST

        """
        #expect(playlist.render() == expected)
        #expect(try MediaPlaylist(parsing: expected) == playlist)
        #expect(try HLSPlaylist.parse(expected) == .media(playlist))
        #expect(playlist.keysInEffect(forSegmentAt: 1) == [key, fairPlay])
        #expect(playlist.keyInEffect(forSegmentAt: 2) == nil)
        #expect(playlist.totalDuration == 11.541)
    }

    @Test("CRLF line endings, a BOM, comments and blank lines parse like plain LF")
    func crlfBOMAndComments() throws {
        let text = try TestResources.text("HLS/sample-aes-media.m3u8")
        let crlf = "\u{FEFF}" + text.replacingOccurrences(of: "\n", with: "\r\n")
            .replacingOccurrences(of: "#EXT-X-ENDLIST", with: "# written by hand\r\n\r\n#EXT-X-ENDLIST")
        #expect(try MediaPlaylist(parsing: crlf) == MediaPlaylist(parsing: text))
        #expect(try MediaPlaylist(parsing: crlf).render() == text)
    }

    @Test("parsing segment by segment, from text or bytes, gives the same playlist as parsing whole")
    func segmentBySegment() throws {
        let text = try TestResources.text("HLS/sample-aes-media.m3u8")
        let crlf = "\u{FEFF}" + text.replacingOccurrences(of: "\n", with: "\r\n")
        let whole = try MediaPlaylist(parsing: text)
        for source in [text, crlf] {
            var fromText: [Segment] = [], fromBytes: [Segment] = []
            var head = try MediaPlaylist.parse(source) { fromText.append($0) }
            #expect(head.segments.isEmpty)
            head.segments = fromText
            #expect(head == whole)
            head = try MediaPlaylist.parse(utf8: Array(source.utf8)) { fromBytes.append($0) }
            head.segments = fromBytes
            #expect(head == whole)
        }
        // Written back piece by piece, as the offline planner does, it is the whole rendering.
        var pieces = ""
        whole.renderHead(into: &pieces)
        for segment in whole.segments { segment.render(into: &pieces) }
        whole.renderTail(into: &pieces)
        #expect(pieces == whole.render())
        // Errors are the same as whole-text parsing, and name the line.
        #expect(throws: HLSParseError(line: 3, message: "EXTINF is not followed by a URI line")) {
            _ = try MediaPlaylist.parse(utf8: Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n".utf8)) { _ in }
        }
    }

    @Test("unknown tags are kept where they stood, before a segment or after the last one")
    func unknownTagsKept() throws {
        let text = """
        #EXTM3U
        #EXT-X-TARGETDURATION:4
        #EXT-X-MEDIA-SEQUENCE:0
        #EXT-X-ALLOW-CACHE:YES
        #EXT-X-START:TIME-OFFSET=0
        #EXTINF:4.000,
        a.ts
        #EXT-X-CUE-OUT:30
        #EXTINF:4.000,
        b.ts
        #EXT-X-CUE-IN

        """
        let playlist = try MediaPlaylist(parsing: text)
        #expect(playlist.segments[0].otherTags == ["#EXT-X-ALLOW-CACHE:YES", "#EXT-X-START:TIME-OFFSET=0"])
        #expect(playlist.segments[1].otherTags == ["#EXT-X-CUE-OUT:30"])
        #expect(playlist.trailingTags == ["#EXT-X-CUE-IN"])
        #expect(playlist.version == nil && playlist.playlistType == nil && !playlist.endList)
        #expect(playlist.render() == text)
    }

    @Test("a playlist without decisive tags is read as media by HLSPlaylist.parse")
    func detectsKind() throws {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
        #expect(try HLSPlaylist.parse(text) == .media(MediaPlaylist(targetDuration: 2)))
    }
}
