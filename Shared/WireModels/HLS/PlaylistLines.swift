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
        var scalars = Substring(text).unicodeScalars
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        // Split on LF bytes: Swift treats "\r\n" as one Character, so working on UTF-8 keeps CRLF simple.
        let rawLines = Substring(scalars).utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        var lines: [PlaylistLine] = []
        lines.reserveCapacity(rawLines.count)
        for (index, raw) in rawLines.enumerated() {
            let text = trimmed(String(decoding: raw, as: UTF8.self))
            if index == 0 {
                guard text == "#EXTM3U" else {
                    throw HLSParseError(line: 1, message: "the first line must be #EXTM3U")
                }
                continue
            }
            lines.append(PlaylistLine(number: index + 1, text: text, kind: classify(text)))
        }
        return lines
    }

    private static func classify(_ text: String) -> PlaylistLine.Kind {
        if text.isEmpty { return .ignorable }
        guard text.hasPrefix("#") else { return .uri(text) }
        guard text.hasPrefix("#EXT") else { return .ignorable }
        let body = text.dropFirst()
        if let colon = body.firstIndex(of: ":") {
            return .tag(name: String(body[..<colon]), value: String(body[body.index(after: colon)...]))
        }
        return .tag(name: String(body), value: nil)
    }

    private static func trimmed(_ text: String) -> String {
        var view = Substring(text)
        while let first = view.first, first.isWhitespace { view.removeFirst() }
        while let last = view.last, last.isWhitespace { view.removeLast() }
        return String(view)
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
