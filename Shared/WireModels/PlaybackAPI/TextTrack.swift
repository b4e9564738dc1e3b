/// A sideband text track (WebVTT subtitles or captions) listed in a video's `text_tracks`.
public struct TextTrack: Codable, Sendable, Equatable {
    /// `kind` of a captions track.
    public static let captions = "captions"
    /// `kind` of a subtitles track.
    public static let subtitles = "subtitles"
    /// `kind` of a metadata track.
    public static let metadata = "metadata"
    /// `label` of the thumbnail track (Dynamic Delivery's scrubbing previews).
    public static let thumbnailsLabel = "thumbnails"
    /// `mime_type` of the thumbnail track.
    public static let thumbnailsMimeType = "text/webvtt"
    /// `mime_type` of WebVTT.
    public static let webVTT = "text/vtt"

    /// The track id; empty for the thumbnail track, whose id the real API gives as `null`.
    public var id: String
    /// The owning account id.
    public var accountID: String
    /// URL of the track file.
    public var src: String
    /// Alternative URLs of the track file.
    public var sources: [SourceURL]
    /// BCP 47 language, e.g. `en`; empty for the thumbnail track (`null` on the wire).
    public var srclang: String
    /// Human-readable label.
    public var label: String
    /// `captions`, `subtitles` or `metadata`.
    public var kind: String
    /// MIME type, normally `text/vtt`.
    public var mimeType: String
    /// Whether the track is selected by default.
    public var isDefault: Bool
    /// Whether this is Dynamic Delivery's thumbnail track (scrubbing previews, `kind` metadata,
    /// label `thumbnails`, no language): not a subtitle or caption track.
    public var isThumbnailTrack: Bool { kind == TextTrack.metadata && label == TextTrack.thumbnailsLabel && srclang.isEmpty }
    /// The thumbnail track's tile size and bit rate (nil for other tracks, and then left out).
    public var width: Int?
    public var height: Int?
    public var bandwidth: Int?
    /// The backing asset id, or nil (encoded as `null`).
    public var assetID: String?

    /// Creates a text track.
    public init(
        id: String, accountID: String, src: String, sources: [SourceURL] = [],
        srclang: String, label: String, kind: String = TextTrack.subtitles,
        mimeType: String = TextTrack.webVTT, isDefault: Bool = false, assetID: String? = nil
    ) {
        self.id = id
        self.accountID = accountID
        self.src = src
        self.sources = sources
        self.srclang = srclang
        self.label = label
        self.kind = kind
        self.mimeType = mimeType
        self.isDefault = isDefault
        self.assetID = assetID
    }

    enum CodingKeys: String, CodingKey {
        case id, src, sources, srclang, label, kind
        case width, height, bandwidth
        case accountID = "account_id"
        case mimeType = "mime_type"
        case isDefault = "default"
        case assetID = "asset_id"
    }

    /// Decodes a track; absent `sources` reads as empty, a `null` (or absent) `id` or `srclang` as "".
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(String.self, forKey: .id) ?? ""
        accountID = try container.decode(String.self, forKey: .accountID)
        src = try container.decode(String.self, forKey: .src)
        sources = try container.decodeOrEmpty([SourceURL].self, forKey: .sources)
        srclang = try container.decodeIfPresent(String.self, forKey: .srclang) ?? ""
        label = try container.decode(String.self, forKey: .label)
        kind = try container.decode(String.self, forKey: .kind)
        mimeType = try container.decode(String.self, forKey: .mimeType)
        isDefault = try container.decodeIfPresent(Bool.self, forKey: .isDefault) ?? false
        assetID = try container.decodeIfPresent(String.self, forKey: .assetID)
        width = try container.decodeIfPresent(Int.self, forKey: .width)
        height = try container.decodeIfPresent(Int.self, forKey: .height)
        bandwidth = try container.decodeIfPresent(Int.self, forKey: .bandwidth)
    }

    /// Encodes every key, writing `null` for a nil `asset_id` and an empty `id` or `srclang`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeOrNull(id.isEmpty ? nil : id, forKey: .id)
        try container.encode(accountID, forKey: .accountID)
        try container.encode(src, forKey: .src)
        try container.encode(sources, forKey: .sources)
        try container.encodeOrNull(srclang.isEmpty ? nil : srclang, forKey: .srclang)
        try container.encode(label, forKey: .label)
        try container.encode(kind, forKey: .kind)
        try container.encode(mimeType, forKey: .mimeType)
        try container.encode(isDefault, forKey: .isDefault)
        try container.encodeOrNull(assetID, forKey: .assetID)
        try container.encodeIfPresent(width, forKey: .width)
        try container.encodeIfPresent(height, forKey: .height)
        try container.encodeIfPresent(bandwidth, forKey: .bandwidth)
    }
}

/// A `{"src": …}` object, as in a text track's `sources`.
public struct SourceURL: Codable, Sendable, Equatable {
    /// The URL.
    public var src: String

    /// Creates a source URL.
    public init(src: String) {
        self.src = src
    }
}
