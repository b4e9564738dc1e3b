extension MediaPlaylist {
    /// Parses a media playlist; master-playlist tags in it are an error.
    public init(parsing text: String) throws(HLSParseError) {
        var segments: [Segment] = []
        self = try MediaPlaylist.parse(text) { segments.append($0) }
        self.segments = segments
    }

    /// Parses a media playlist one segment at a time, for playlists too long to hold as a
    /// segment list: `segment` is called with each segment, in order, as soon as its URI line
    /// is read. Returns the playlist without its segments (`segments` is empty). The same
    /// errors as `init(parsing:)`; segments before an error have been visited.
    public static func parse(_ text: String, segment: (Segment) -> Void) throws(HLSParseError) -> MediaPlaylist {
        try parse(bytes: PlaylistLines.utf8(text), segment: segment)
    }

    /// As `parse(_:segment:)`, on the playlist's UTF-8 bytes as received (no copy as a `String`).
    public static func parse(utf8: [UInt8], segment: (Segment) -> Void) throws(HLSParseError) -> MediaPlaylist {
        try parse(bytes: utf8[...], segment: segment)
    }

    private static func parse<Bytes: BidirectionalCollection<UInt8>>(
        bytes: Bytes, segment: (Segment) -> Void
    ) throws(HLSParseError) -> MediaPlaylist where Bytes.SubSequence == Bytes {
        var reader = MediaPlaylistReader()
        try PlaylistLines.forEach(utf8: bytes) { line throws(HLSParseError) in
            if let finished = try reader.read(line) { segment(finished) }
        }
        return try reader.finish()
    }

    init(lines: [PlaylistLine]) throws(HLSParseError) {
        var reader = MediaPlaylistReader()
        var segments: [Segment] = []
        for line in lines {
            if let segment = try reader.read(line) { segments.append(segment) }
        }
        self = try reader.finish()
        self.segments = segments
    }
}

/// Reads a media playlist line by line: the playlist-level tags into `playlist`, each
/// segment handed back as its URI line is read.
private struct MediaPlaylistReader {
    var playlist = MediaPlaylist(targetDuration: 0)
    var targetDuration: Int?
    var next = SegmentBuilder()
    /// Where a missing EXT-X-TARGETDURATION is reported: the first EXTINF, else the header.
    var firstSegmentLine: Int?

    mutating func read(_ line: PlaylistLine) throws(HLSParseError) -> Segment? {
        switch line.kind {
        case .ignorable:
            return nil
        case let .uri(uri):
            let segment = try next.finish(uri: uri, line: line.number)
            next = SegmentBuilder()
            return segment
        case let .tag(name, value):
            if HLSTagNames.masterOnly.contains(name) {
                throw HLSParseError(line: line.number, message: "master playlist tag \(name) in a media playlist")
            }
            switch name {
            case "EXT-X-VERSION":
                playlist.version = try integerValue(of: name, value, line: line.number)
            case "EXT-X-TARGETDURATION":
                targetDuration = try integerValue(of: name, value, line: line.number)
            case "EXT-X-MEDIA-SEQUENCE":
                playlist.mediaSequence = try integerValue(of: name, value, line: line.number)
            case "EXT-X-DISCONTINUITY-SEQUENCE":
                playlist.discontinuitySequence = try integerValue(of: name, value, line: line.number)
            case "EXT-X-PLAYLIST-TYPE":
                guard let type = value.flatMap(PlaylistType.init(rawValue:)) else {
                    throw HLSParseError(line: line.number, message: "EXT-X-PLAYLIST-TYPE must be VOD or EVENT")
                }
                playlist.playlistType = type
            case "EXT-X-INDEPENDENT-SEGMENTS":
                playlist.independentSegments = true
            case "EXT-X-ENDLIST":
                playlist.endList = true
            default:
                if name == "EXTINF", firstSegmentLine == nil { firstSegmentLine = line.number }
                try next.add(tag: name, value: value, line: line)
            }
            return nil
        }
    }

    func finish() throws(HLSParseError) -> MediaPlaylist {
        if let extinf = next.extinf {
            throw HLSParseError(line: extinf.line, message: "EXTINF is not followed by a URI line")
        }
        guard let targetDuration else {
            throw HLSParseError(line: firstSegmentLine ?? 1, message: "media playlist without EXT-X-TARGETDURATION")
        }
        var playlist = playlist
        playlist.trailingTags = next.rawLines
        playlist.targetDuration = targetDuration
        return playlist
    }
}

/// Collects the tags written before a segment's URI line.
private struct SegmentBuilder {
    var extinf: (duration: Double, title: String?, line: Int)?
    var byteRange: ByteRange?
    var discontinuity = false
    var keys: [EncryptionKey] = []
    var map: InitializationSection?
    var otherTags: [String] = []
    /// Every segment-level tag as written, kept for tags left dangling after the last URI.
    var rawLines: [String] = []

    mutating func add(tag name: String, value: String?, line: PlaylistLine) throws(HLSParseError) {
        let number = line.number
        switch name {
        case "EXTINF":
            if let previous = extinf {
                throw HLSParseError(line: previous.line, message: "EXTINF is not followed by a URI line")
            }
            let text = value ?? ""
            let comma = text.firstIndex(of: ",")
            let durationText = String(text[..<(comma ?? text.endIndex)])
            guard let duration = HLSValue.decimalFloat(durationText) else {
                throw HLSParseError(line: number, message: "EXTINF duration must be a decimal number, found \"\(durationText)\"")
            }
            let title = comma.map { String(text[text.index(after: $0)...]) }
            extinf = (duration, title?.isEmpty == false ? title : nil, number)
        case "EXT-X-BYTERANGE":
            guard let range = value.flatMap(ByteRange.init(parsing:)) else {
                throw HLSParseError(line: number, message: "EXT-X-BYTERANGE must be LENGTH[@OFFSET], found \"\(value ?? "")\"")
            }
            byteRange = range
        case "EXT-X-DISCONTINUITY":
            discontinuity = true
        case "EXT-X-KEY":
            let attributes = try AttributeList(parsing: value ?? "", line: number)
            keys.append(try EncryptionKey(attributes: attributes, tag: name, line: number))
        case "EXT-X-MAP":
            guard map == nil else { throw HLSParseError(line: number, message: "two EXT-X-MAP tags before one segment") }
            map = try InitializationSection(attributes: AttributeList(parsing: value ?? "", line: number), line: number)
        default:
            otherTags.append(line.text)
        }
        if name != "EXTINF" { rawLines.append(line.text) }
    }

    func finish(uri: String, line: Int) throws(HLSParseError) -> Segment {
        guard let extinf else { throw HLSParseError(line: line, message: "URI line without a preceding EXTINF") }
        return Segment(
            duration: extinf.duration, title: extinf.title, uri: uri, byteRange: byteRange,
            discontinuity: discontinuity, keys: keys, map: map, otherTags: otherTags)
    }
}
