/// A parsed playlist of either kind.
public enum HLSPlaylist: Sendable, Hashable {
    /// A master (multivariant) playlist.
    case master(MasterPlaylist)
    /// A media playlist.
    case media(MediaPlaylist)

    /// Parses a playlist, deciding its kind from the first tag that only one kind may contain.
    ///
    /// Accepts LF or CRLF line endings, blank lines, comments, a UTF-8 byte-order mark and unknown
    /// `#EXT` tags (kept). A playlist with neither kind's tags is read as a media playlist.
    public static func parse(_ text: String) throws(HLSParseError) -> HLSPlaylist {
        let lines = try PlaylistLines.split(text)
        for line in lines {
            guard case let .tag(name, _) = line.kind else { continue }
            if HLSTagNames.masterOnly.contains(name) { return .master(try MasterPlaylist(lines: lines)) }
            if HLSTagNames.mediaOnly.contains(name) { return .media(try MediaPlaylist(lines: lines)) }
        }
        return .media(try MediaPlaylist(lines: lines))
    }

    /// The playlist as text (see `MasterPlaylist.render()` and `MediaPlaylist.render()`).
    public func render() -> String {
        switch self {
        case let .master(playlist): playlist.render()
        case let .media(playlist): playlist.render()
        }
    }
}

extension MasterPlaylist {
    /// Parses a master playlist; media-playlist tags in it are an error.
    public init(parsing text: String) throws(HLSParseError) {
        try self.init(lines: PlaylistLines.split(text))
    }

    init(lines: [PlaylistLine]) throws(HLSParseError) {
        self.init()
        // A STREAM-INF waiting for its URI line: its attributes and line number.
        var pending: (attributes: AttributeList, line: Int)?
        for line in lines {
            switch line.kind {
            case .ignorable:
                continue
            case let .uri(uri):
                guard let variant = pending else {
                    throw HLSParseError(line: line.number, message: "URI line without a preceding EXT-X-STREAM-INF")
                }
                variants.append(try VariantStream(attributes: variant.attributes, uri: uri, line: variant.line))
                pending = nil
            case let .tag(name, value):
                if let variant = pending {
                    throw HLSParseError(line: variant.line, message: "EXT-X-STREAM-INF is not followed by a URI line")
                }
                if HLSTagNames.mediaOnly.contains(name) {
                    throw HLSParseError(line: line.number, message: "media playlist tag \(name) in a master playlist")
                }
                let attributes = { () throws(HLSParseError) -> AttributeList in
                    try AttributeList(parsing: value ?? "", line: line.number)
                }
                switch name {
                case "EXT-X-VERSION":
                    version = try integerValue(of: name, value, line: line.number)
                case "EXT-X-INDEPENDENT-SEGMENTS":
                    independentSegments = true
                case "EXT-X-STREAM-INF":
                    pending = (try attributes(), line.number)
                case "EXT-X-MEDIA":
                    renditions.append(try Rendition(attributes: attributes(), line: line.number))
                case "EXT-X-SESSION-KEY":
                    sessionKeys.append(try EncryptionKey(attributes: attributes(), tag: name, line: line.number))
                default:
                    otherTags.append(line.text)
                }
            }
        }
        if let variant = pending {
            throw HLSParseError(line: variant.line, message: "EXT-X-STREAM-INF is not followed by a URI line")
        }
    }
}

extension VariantStream {
    init(attributes: AttributeList, uri: String, line: Int) throws(HLSParseError) {
        guard let bandwidth = try attributes.checkedInteger("BANDWIDTH", line: line) else {
            throw HLSParseError(line: line, message: "EXT-X-STREAM-INF without BANDWIDTH")
        }
        self.init(
            bandwidth: bandwidth,
            averageBandwidth: try attributes.checkedInteger("AVERAGE-BANDWIDTH", line: line),
            codecs: attributes["CODECS"],
            resolution: try attributes.checkedResolution("RESOLUTION", line: line),
            frameRate: try attributes.checkedFloat("FRAME-RATE", line: line),
            audio: attributes["AUDIO"], subtitles: attributes["SUBTITLES"],
            closedCaptions: attributes["CLOSED-CAPTIONS"], uri: uri,
            otherAttributes: attributes.removing(Self.modelledNames))
    }
}

extension Rendition {
    init(attributes: AttributeList, line: Int) throws(HLSParseError) {
        let typeName = try attributes.required("TYPE", in: "EXT-X-MEDIA", line: line)
        guard let type = MediaType(rawValue: typeName) else {
            throw HLSParseError(line: line, message: "unknown EXT-X-MEDIA TYPE \(typeName)")
        }
        self.init(
            type: type,
            groupID: try attributes.required("GROUP-ID", in: "EXT-X-MEDIA", line: line),
            language: attributes["LANGUAGE"],
            name: try attributes.required("NAME", in: "EXT-X-MEDIA", line: line),
            isDefault: try attributes.checkedYesNo("DEFAULT", line: line) ?? false,
            autoselect: try attributes.checkedYesNo("AUTOSELECT", line: line) ?? false,
            channels: attributes["CHANNELS"], uri: attributes["URI"],
            otherAttributes: attributes.removing(Self.modelledNames))
    }
}

/// The decimal-integer value of a tag such as `EXT-X-VERSION:3`.
func integerValue(of tag: String, _ value: String?, line: Int) throws(HLSParseError) -> Int {
    guard let value, let number = HLSValue.decimalInteger(value) else {
        throw HLSParseError(line: line, message: "\(tag) must be a decimal integer, found \"\(value ?? "")\"")
    }
    return number
}
