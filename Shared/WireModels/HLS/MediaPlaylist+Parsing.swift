extension MediaPlaylist {
    /// Parses a media playlist; master-playlist tags in it are an error.
    public init(parsing text: String) throws(HLSParseError) {
        try self.init(lines: PlaylistLines.split(text))
    }

    init(lines: [PlaylistLine]) throws(HLSParseError) {
        var targetDuration: Int?
        self.init(targetDuration: 0)
        var next = SegmentBuilder()
        // Where a missing EXT-X-TARGETDURATION is reported: the first EXTINF, else the header.
        var firstSegmentLine: Int?
        for line in lines {
            switch line.kind {
            case .ignorable:
                continue
            case let .uri(uri):
                segments.append(try next.finish(uri: uri, line: line.number))
                next = SegmentBuilder()
            case let .tag(name, value):
                if HLSTagNames.masterOnly.contains(name) {
                    throw HLSParseError(line: line.number, message: "master playlist tag \(name) in a media playlist")
                }
                switch name {
                case "EXT-X-VERSION":
                    version = try integerValue(of: name, value, line: line.number)
                case "EXT-X-TARGETDURATION":
                    targetDuration = try integerValue(of: name, value, line: line.number)
                case "EXT-X-MEDIA-SEQUENCE":
                    mediaSequence = try integerValue(of: name, value, line: line.number)
                case "EXT-X-DISCONTINUITY-SEQUENCE":
                    discontinuitySequence = try integerValue(of: name, value, line: line.number)
                case "EXT-X-PLAYLIST-TYPE":
                    guard let type = value.flatMap(PlaylistType.init(rawValue:)) else {
                        throw HLSParseError(line: line.number, message: "EXT-X-PLAYLIST-TYPE must be VOD or EVENT")
                    }
                    playlistType = type
                case "EXT-X-INDEPENDENT-SEGMENTS":
                    independentSegments = true
                case "EXT-X-ENDLIST":
                    endList = true
                default:
                    if name == "EXTINF", firstSegmentLine == nil { firstSegmentLine = line.number }
                    try next.add(tag: name, value: value, line: line)
                }
            }
        }
        if let extinf = next.extinf {
            throw HLSParseError(line: extinf.line, message: "EXTINF is not followed by a URI line")
        }
        trailingTags = next.rawLines
        guard let targetDuration else {
            throw HLSParseError(line: firstSegmentLine ?? 1, message: "media playlist without EXT-X-TARGETDURATION")
        }
        self.targetDuration = targetDuration
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
