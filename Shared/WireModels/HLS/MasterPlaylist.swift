/// A master (multivariant) playlist: variant streams, alternate renditions and session keys.
///
/// Written in a fixed order: `#EXTM3U`, `VERSION`, `INDEPENDENT-SEGMENTS`, session keys,
/// renditions, variants (each `STREAM-INF` followed by its URI), then `otherTags`.
public struct MasterPlaylist: Sendable, Hashable {
    /// `EXT-X-VERSION`, if present.
    public var version: Int?
    /// Whether `EXT-X-INDEPENDENT-SEGMENTS` is present.
    public var independentSegments: Bool
    /// `EXT-X-SESSION-KEY` tags, in order.
    public var sessionKeys: [EncryptionKey]
    /// `EXT-X-MEDIA` tags, in order.
    public var renditions: [Rendition]
    /// `EXT-X-STREAM-INF` tags with their URIs, in order.
    public var variants: [VariantStream]
    /// Tags this model does not interpret, as raw lines (`#EXT-X-…`), in order.
    public var otherTags: [String]

    /// Creates a master playlist.
    public init(
        version: Int? = nil, independentSegments: Bool = false, sessionKeys: [EncryptionKey] = [],
        renditions: [Rendition] = [], variants: [VariantStream] = [], otherTags: [String] = []
    ) {
        self.version = version
        self.independentSegments = independentSegments
        self.sessionKeys = sessionKeys
        self.renditions = renditions
        self.variants = variants
        self.otherTags = otherTags
    }

    /// The renditions of one group (`GROUP-ID`) and type.
    public func renditions(inGroup groupID: String, type: MediaType) -> [Rendition] {
        renditions.filter { $0.groupID == groupID && $0.type == type }
    }
}

/// An `EXT-X-STREAM-INF` and the URI on the line after it.
public struct VariantStream: Sendable, Hashable {
    /// `BANDWIDTH`: peak bits per second.
    public var bandwidth: Int
    /// `AVERAGE-BANDWIDTH`: average bits per second.
    public var averageBandwidth: Int?
    /// `CODECS`, e.g. `avc1.64001f,mp4a.40.2`.
    public var codecs: String?
    /// `RESOLUTION`.
    public var resolution: Resolution?
    /// `FRAME-RATE` (written with three decimals).
    public var frameRate: Double?
    /// `AUDIO` rendition group id.
    public var audio: String?
    /// `SUBTITLES` rendition group id.
    public var subtitles: String?
    /// `CLOSED-CAPTIONS` group id, or `AttributeList.none` (`NONE`, written unquoted).
    public var closedCaptions: String?
    /// The URI of the variant's media playlist.
    public var uri: String
    /// Any other attributes (`VIDEO-RANGE`, `HDCP-LEVEL`, …), written after the ones above.
    public var otherAttributes: AttributeList

    /// Creates a variant stream.
    public init(
        bandwidth: Int, averageBandwidth: Int? = nil, codecs: String? = nil, resolution: Resolution? = nil,
        frameRate: Double? = nil, audio: String? = nil, subtitles: String? = nil, closedCaptions: String? = nil,
        uri: String, otherAttributes: AttributeList = AttributeList()
    ) {
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.codecs = codecs
        self.resolution = resolution
        self.frameRate = frameRate
        self.audio = audio
        self.subtitles = subtitles
        self.closedCaptions = closedCaptions
        self.uri = uri
        self.otherAttributes = otherAttributes
    }

    /// Whether `CODECS` lists a video codec (or, without `CODECS`, whether a `RESOLUTION` is given).
    public var hasVideo: Bool {
        guard let codecs else { return resolution != nil }
        let videoPrefixes = ["avc1", "avc3", "hvc1", "hev1", "dvh1", "dvhe", "av01", "vp09"]
        return codecs.split(separator: ",").contains { codec in
            let trimmed = codec.drop { $0 == " " }
            return videoPrefixes.contains { trimmed.hasPrefix($0) }
        }
    }

    static let modelledNames: Set<String> = [
        "BANDWIDTH", "AVERAGE-BANDWIDTH", "CODECS", "RESOLUTION", "FRAME-RATE", "AUDIO", "SUBTITLES", "CLOSED-CAPTIONS",
    ]

    /// The attribute list as written, in the order of the properties above, then the others.
    public var attributes: AttributeList {
        var list = AttributeList()
        list["BANDWIDTH"] = String(bandwidth)
        list["AVERAGE-BANDWIDTH"] = averageBandwidth.map(String.init)
        list["CODECS"] = codecs
        list["RESOLUTION"] = resolution?.description
        list["FRAME-RATE"] = frameRate.map { HLSValue.fixed($0, decimals: 3) }
        list["AUDIO"] = audio
        list["SUBTITLES"] = subtitles
        list["CLOSED-CAPTIONS"] = closedCaptions
        for attribute in otherAttributes.attributes { list.set(attribute) }
        return list
    }
}

/// An `EXT-X-MEDIA`: an alternate rendition (audio language, subtitles, captions, video angle).
public struct Rendition: Sendable, Hashable {
    /// `TYPE`.
    public var type: MediaType
    /// `GROUP-ID`.
    public var groupID: String
    /// `LANGUAGE` (RFC 5646 tag).
    public var language: String?
    /// `NAME`.
    public var name: String
    /// `DEFAULT=YES`.
    public var isDefault: Bool
    /// `AUTOSELECT=YES`.
    public var autoselect: Bool
    /// `CHANNELS`, e.g. `"2"`.
    public var channels: String?
    /// `URI` of the rendition's media playlist (absent for in-band captions).
    public var uri: String?
    /// Any other attributes (`FORCED`, `INSTREAM-ID`, `CHARACTERISTICS`, …), written before `URI`.
    public var otherAttributes: AttributeList

    /// Creates a rendition.
    public init(
        type: MediaType, groupID: String, language: String? = nil, name: String, isDefault: Bool = false,
        autoselect: Bool = false, channels: String? = nil, uri: String? = nil,
        otherAttributes: AttributeList = AttributeList()
    ) {
        self.type = type
        self.groupID = groupID
        self.language = language
        self.name = name
        self.isDefault = isDefault
        self.autoselect = autoselect
        self.channels = channels
        self.uri = uri
        self.otherAttributes = otherAttributes
    }

    static let modelledNames: Set<String> = [
        "TYPE", "GROUP-ID", "LANGUAGE", "NAME", "DEFAULT", "AUTOSELECT", "CHANNELS", "URI",
    ]

    /// The attribute list as written: TYPE, GROUP-ID, LANGUAGE, NAME, DEFAULT, AUTOSELECT, CHANNELS, others, URI.
    public var attributes: AttributeList {
        var list = AttributeList()
        list["TYPE"] = type.rawValue
        list["GROUP-ID"] = groupID
        list["LANGUAGE"] = language
        list["NAME"] = name
        list["DEFAULT"] = HLSValue.yesNo(isDefault)
        list["AUTOSELECT"] = HLSValue.yesNo(autoselect)
        list["CHANNELS"] = channels
        for attribute in otherAttributes.attributes { list.set(attribute) }
        list["URI"] = uri
        return list
    }
}

/// The `TYPE` of an `EXT-X-MEDIA` rendition.
public enum MediaType: String, Sendable, Hashable, CaseIterable {
    /// An alternate audio rendition.
    case audio = "AUDIO"
    /// An alternate video rendition.
    case video = "VIDEO"
    /// A WebVTT subtitles rendition.
    case subtitles = "SUBTITLES"
    /// In-band CEA-608/708 closed captions.
    case closedCaptions = "CLOSED-CAPTIONS"
}
