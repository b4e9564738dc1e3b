/// One physical line of a playlist, classified.
struct PlaylistLine {
    enum Kind: Equatable {
        /// `#EXT…` tag: its name (`EXT-X-KEY`) and the text after the first `:`, if any.
        case tag(name: String, value: String?)
        /// A URI line.
        case uri(String)
        /// A blank line or a comment (`#` not followed by `EXT`); both are dropped.
        case ignorable
    }

    /// 1-based line number in the original text.
    let number: Int
    /// The line without surrounding whitespace or `\r`.
    let text: String
    let kind: Kind
}

/// Splits a playlist into classified lines after checking the `#EXTM3U` header.
///
/// Accepts LF and CRLF endings and a leading UTF-8 byte-order mark. The header line itself is not returned.
enum PlaylistLines {
    static func split(_ text: String) throws(HLSParseError) -> [PlaylistLine] {
        var lines: [PlaylistLine] = []
        try forEach(utf8: utf8(text)) { line in lines.append(line) }
        return lines
    }

    /// A text's UTF-8 bytes as a collection `forEach(utf8:_:)` walks without copying.
    static func utf8(_ text: String) -> Substring.UTF8View {
        var text = text
        text.makeContiguousUTF8()
        return Substring(text).utf8
    }

    /// Visits the lines of a playlist's UTF-8 bytes one at a time: a long playlist's lines
    /// are never all in memory, and bytes as received need no copy as a `String`.
    static func forEach<Bytes: BidirectionalCollection<UInt8>>(
        utf8: Bytes, _ body: (PlaylistLine) throws(HLSParseError) -> Void
    ) throws(HLSParseError) where Bytes.SubSequence == Bytes {
        var bytes = utf8
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        // Split on LF bytes: Swift treats "\r\n" as one Character, so working on UTF-8 keeps CRLF simple.
        var number = 0
        while true {
            number += 1
            let end = bytes.firstIndex(of: UInt8(ascii: "\n"))
            let line = trimmed(bytes[..<(end ?? bytes.endIndex)])
            if number == 1 {
                guard line == "#EXTM3U" else {
                    throw HLSParseError(line: 1, message: "the first line must be #EXTM3U")
                }
            } else {
                try body(PlaylistLine(number: number, text: line, kind: classify(line)))
            }
            guard let end else { return }
            bytes = bytes[bytes.index(after: end)...]
        }
    }

    private static func classify(_ text: String) -> PlaylistLine.Kind {
        if text.isEmpty { return .ignorable }
        guard text.hasPrefix("#") else { return .uri(text) }
        guard text.hasPrefix("#EXT") else { return .ignorable }
        let body = text.utf8.dropFirst()
        if let colon = body.firstIndex(of: UInt8(ascii: ":")) {
            return .tag(name: String(Substring(body[..<colon])), value: String(Substring(body[body.index(after: colon)...])))
        }
        return .tag(name: String(Substring(body)), value: nil)
    }

    /// The line without leading and trailing whitespace (ASCII byte-wise; other Unicode
    /// whitespace, which playlists rarely have, by characters).
    private static func trimmed<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> String where Bytes.SubSequence == Bytes {
        let isSpace = { (byte: UInt8) in byte == 0x20 || (0x09...0x0D).contains(byte) }
        var view = bytes
        while let first = view.first, isSpace(first) { view = view.dropFirst() }
        while let last = view.last, isSpace(last) { view = view.dropLast() }
        let text = String(decoding: view, as: UTF8.self)
        guard let first = view.first, let last = view.last, first >= 0x80 || last >= 0x80 else { return text }
        var characters = Substring(text)
        while let first = characters.first, first.isWhitespace { characters.removeFirst() }
        while let last = characters.last, last.isWhitespace { characters.removeLast() }
        return String(characters)
    }
}

/// Which tags belong to which kind of playlist; tags in neither set may appear in both.
enum HLSTagNames {
    /// Tag names that only a master playlist may contain.
    static let masterOnly: Set<String> = [
        "EXT-X-STREAM-INF", "EXT-X-MEDIA", "EXT-X-SESSION-KEY", "EXT-X-SESSION-DATA",
        "EXT-X-I-FRAME-STREAM-INF", "EXT-X-CONTENT-STEERING",
    ]

    /// Tag names that only a media playlist may contain.
    static let mediaOnly: Set<String> = [
        "EXTINF", "EXT-X-TARGETDURATION", "EXT-X-MEDIA-SEQUENCE", "EXT-X-DISCONTINUITY-SEQUENCE",
        "EXT-X-PLAYLIST-TYPE", "EXT-X-ENDLIST", "EXT-X-KEY", "EXT-X-MAP", "EXT-X-BYTERANGE",
        "EXT-X-DISCONTINUITY", "EXT-X-PROGRAM-DATE-TIME", "EXT-X-I-FRAMES-ONLY", "EXT-X-DATERANGE",
        "EXT-X-GAP", "EXT-X-BITRATE", "EXT-X-PART", "EXT-X-PART-INF", "EXT-X-SERVER-CONTROL",
        "EXT-X-SKIP", "EXT-X-PRELOAD-HINT", "EXT-X-RENDITION-REPORT",
    ]
}
