import Testing
import WireModels

/// A malformed playlist and where and why parsing must fail.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let line: Int
    let message: String

    var testDescription: String { name }
}

@Suite("Malformed playlists")
struct MalformedPlaylistTests {
    static let cases: [MalformedCase] = [
        MalformedCase(name: "empty text", text: "", line: 1, message: "#EXTM3U"),
        MalformedCase(name: "#EXTM3U not first", text: "#EXT-X-VERSION:3\n#EXTM3U\n", line: 1, message: "#EXTM3U"),
        MalformedCase(name: "EXTINF at the end without a URI",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n#EXT-X-ENDLIST\n", line: 3, message: "EXTINF"),
        MalformedCase(name: "EXTINF followed by another EXTINF",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n#EXTINF:2.0,\na.ts\n", line: 3, message: "EXTINF"),
        MalformedCase(name: "URI without EXTINF",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\na.ts\n", line: 3, message: "EXTINF"),
        MalformedCase(name: "STREAM-INF at the end without a URI",
                      text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\n", line: 2, message: "URI"),
        MalformedCase(name: "STREAM-INF followed by a tag",
                      text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-STREAM-INF:BANDWIDTH=2\nb.m3u8\n", line: 2, message: "URI"),
        MalformedCase(name: "non-numeric TARGETDURATION",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:two\n", line: 2, message: "EXT-X-TARGETDURATION"),
        MalformedCase(name: "decimal VERSION", text: "#EXTM3U\n#EXT-X-VERSION:3.5\n", line: 2, message: "EXT-X-VERSION"),
        MalformedCase(name: "negative MEDIA-SEQUENCE",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:-1\n", line: 3, message: "EXT-X-MEDIA-SEQUENCE"),
        MalformedCase(name: "non-numeric EXTINF duration",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:two,\na.ts\n", line: 3, message: "EXTINF"),
        MalformedCase(name: "non-numeric BANDWIDTH",
                      text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=fast\na.m3u8\n", line: 2, message: "BANDWIDTH"),
        MalformedCase(name: "bad RESOLUTION",
                      text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=1280by720\na.m3u8\n", line: 2, message: "RESOLUTION"),
        MalformedCase(name: "bad FRAME-RATE",
                      text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,FRAME-RATE=fast\na.m3u8\n", line: 2, message: "FRAME-RATE"),
        MalformedCase(name: "STREAM-INF without BANDWIDTH",
                      text: "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-STREAM-INF:RESOLUTION=2x2\na.m3u8\n", line: 3, message: "BANDWIDTH"),
        MalformedCase(name: "MEDIA without TYPE",
                      text: "#EXTM3U\n#EXT-X-MEDIA:GROUP-ID=\"a\",NAME=\"n\"\n", line: 2, message: "TYPE"),
        MalformedCase(name: "MEDIA without GROUP-ID",
                      text: "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,NAME=\"n\"\n", line: 2, message: "GROUP-ID"),
        MalformedCase(name: "MEDIA without NAME",
                      text: "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\"\n", line: 2, message: "NAME"),
        MalformedCase(name: "MEDIA with an unknown TYPE",
                      text: "#EXTM3U\n#EXT-X-MEDIA:TYPE=HOLOGRAM,GROUP-ID=\"a\",NAME=\"n\"\n", line: 2, message: "TYPE"),
        MalformedCase(name: "BYTERANGE with a word",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-BYTERANGE:abc@0\na.ts\n", line: 4, message: "BYTERANGE"),
        MalformedCase(name: "BYTERANGE with an empty offset",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-BYTERANGE:100@\na.ts\n", line: 4, message: "BYTERANGE"),
        MalformedCase(name: "MAP with a bad BYTERANGE",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"x\"\n#EXTINF:2,\na.mp4\n", line: 3, message: "BYTERANGE"),
        MalformedCase(name: "unterminated quoted string",
                      text: "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"aud,NAME=x\n", line: 3, message: "unterminated"),
        MalformedCase(name: "media tag in a master",
                      text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n#EXTINF:2,\nb.ts\n", line: 4, message: "EXTINF"),
        MalformedCase(name: "master tag in a media playlist",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-SESSION-KEY:METHOD=NONE\n", line: 3, message: "EXT-X-SESSION-KEY"),
        MalformedCase(name: "KEY without METHOD",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:URI=\"k\"\n", line: 3, message: "METHOD"),
        MalformedCase(name: "AES-128 KEY without URI",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128\n", line: 3, message: "URI"),
        MalformedCase(name: "KEY with a non-hex IV",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0xZZ\n", line: 3, message: "IV"),
        MalformedCase(name: "unknown PLAYLIST-TYPE",
                      text: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:LIVE\n", line: 3, message: "PLAYLIST-TYPE"),
        MalformedCase(name: "missing TARGETDURATION",
                      text: "#EXTM3U\n#EXTINF:2,\na.ts\n", line: 2, message: "EXT-X-TARGETDURATION"),
        MalformedCase(name: "line numbers count CRLF lines, blank lines and comments",
                      text: "#EXTM3U\r\n\r\n# comment\r\n#EXT-X-TARGETDURATION:x\r\n", line: 4, message: "EXT-X-TARGETDURATION"),
    ]

    @Test("malformed input is rejected with the 1-based line and a message", arguments: cases)
    func rejects(_ malformed: MalformedCase) {
        do {
            let playlist = try HLSPlaylist.parse(malformed.text)
            Issue.record("parsed without error: \(playlist)")
        } catch {
            #expect(error.line == malformed.line, "\(error)")
            #expect(error.message.contains(malformed.message), "\(error)")
        }
    }

    @Test("each kind's own parser refuses the other kind")
    func kindSpecificParsers() throws {
        let media = try TestResources.text("HLS/ffmpeg-vod.m3u8")
        let master = try TestResources.text("HLS/ffmpeg-master.m3u8")
        // Line 3 of each: the first tag of the other kind.
        #expect(throws: HLSParseError(line: 3, message: "media playlist tag EXT-X-TARGETDURATION in a master playlist")) {
            try MasterPlaylist(parsing: media)
        }
        #expect(throws: HLSParseError(line: 3, message: "master playlist tag EXT-X-STREAM-INF in a media playlist")) {
            try MediaPlaylist(parsing: master)
        }
    }
}
