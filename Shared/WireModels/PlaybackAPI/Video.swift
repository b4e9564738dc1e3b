public import Foundation

/// A video object as the Playback API returns it (`GET /playback/v1/accounts/{acct}/videos/{id}`).
///
/// Optional strings, `link` and `ad_keys` are written as explicit JSON `null`s, as the real API does.
public struct Video: Codable, Sendable, Equatable {
    /// Economics value for videos that carry ads.
    public static let adSupported = "AD_SUPPORTED"
    /// Economics value for videos without ads.
    public static let free = "FREE"

    /// The video id.
    public var id: String
    /// The owning account id.
    public var accountID: String
    /// The title.
    public var name: String
    /// Short description.
    public var description: String?
    /// Long description.
    public var longDescription: String?
    /// The publisher's own reference id (`ref:` lookups).
    public var referenceID: String?
    /// Duration in **milliseconds**.
    public var duration: Int
    /// `"AD_SUPPORTED"` or `"FREE"`.
    public var economics: String
    /// Creation time.
    public var createdAt: Date
    /// Last modification time.
    public var updatedAt: Date
    /// Publication time.
    public var publishedAt: Date
    /// Publisher-defined fields.
    public var customFields: [String: String]
    /// Tags.
    public var tags: [String]
    /// Cue points.
    public var cuePoints: [CuePoint]
    /// Poster image URL.
    public var poster: String?
    /// Poster image renditions.
    public var posterSources: [ImageSource]
    /// Thumbnail image URL.
    public var thumbnail: String?
    /// Thumbnail image renditions.
    public var thumbnailSources: [ImageSource]
    /// Related link, or nil (encoded as `null`).
    public var link: Link?
    /// Whether the video may be downloaded for offline playback.
    public var offlineEnabled: Bool
    /// Ad keys; the real API always sends `null`.
    public var adKeys: String?
    /// Sideband text tracks.
    public var textTracks: [TextTrack]
    /// Playable sources (HLS manifests).
    public var sources: [VideoSource]

    /// Creates a video; optionals default to nil and collections to empty.
    public init(
        id: String, accountID: String, name: String,
        description: String? = nil, longDescription: String? = nil, referenceID: String? = nil,
        duration: Int, economics: String = Video.adSupported,
        createdAt: Date, updatedAt: Date, publishedAt: Date,
        customFields: [String: String] = [:], tags: [String] = [], cuePoints: [CuePoint] = [],
        poster: String? = nil, posterSources: [ImageSource] = [],
        thumbnail: String? = nil, thumbnailSources: [ImageSource] = [],
        link: Link? = nil, offlineEnabled: Bool = false, adKeys: String? = nil,
        textTracks: [TextTrack] = [], sources: [VideoSource] = []
    ) {
        self.id = id
        self.accountID = accountID
        self.name = name
        self.description = description
        self.longDescription = longDescription
        self.referenceID = referenceID
        self.duration = duration
        self.economics = economics
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.publishedAt = publishedAt
        self.customFields = customFields
        self.tags = tags
        self.cuePoints = cuePoints
        self.poster = poster
        self.posterSources = posterSources
        self.thumbnail = thumbnail
        self.thumbnailSources = thumbnailSources
        self.link = link
        self.offlineEnabled = offlineEnabled
        self.adKeys = adKeys
        self.textTracks = textTracks
        self.sources = sources
    }

    /// The keys beside the `CatalogObjectFields`.
    enum CodingKeys: String, CodingKey {
        case duration, economics, tags, poster, thumbnail, link, sources
        case longDescription = "long_description"
        case publishedAt = "published_at"
        case customFields = "custom_fields"
        case cuePoints = "cue_points"
        case posterSources = "poster_sources"
        case thumbnailSources = "thumbnail_sources"
        case offlineEnabled = "offline_enabled"
        case adKeys = "ad_keys"
        case textTracks = "text_tracks"
    }

    /// Decodes a video; absent or null collections read as empty, absent optionals as nil.
    public init(from decoder: any Decoder) throws {
        let common = try CatalogObjectFields(from: decoder)
        (id, accountID, name, description, referenceID, createdAt, updatedAt) =
            (common.id, common.accountID, common.name, common.description, common.referenceID, common.createdAt, common.updatedAt)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        longDescription = try container.decodeIfPresent(String.self, forKey: .longDescription)
        duration = try container.decode(Int.self, forKey: .duration)
        economics = try container.decode(String.self, forKey: .economics)
        publishedAt = try container.decodeWireDate(forKey: .publishedAt)
        customFields = try container.decodeOrEmpty([String: String].self, forKey: .customFields)
        tags = try container.decodeOrEmpty([String].self, forKey: .tags)
        cuePoints = try container.decodeOrEmpty([CuePoint].self, forKey: .cuePoints)
        poster = try container.decodeIfPresent(String.self, forKey: .poster)
        posterSources = try container.decodeOrEmpty([ImageSource].self, forKey: .posterSources)
        thumbnail = try container.decodeIfPresent(String.self, forKey: .thumbnail)
        thumbnailSources = try container.decodeOrEmpty([ImageSource].self, forKey: .thumbnailSources)
        link = try container.decodeIfPresent(Link.self, forKey: .link)
        offlineEnabled = try container.decodeIfPresent(Bool.self, forKey: .offlineEnabled) ?? false
        adKeys = try container.decodeIfPresent(String.self, forKey: .adKeys)
        textTracks = try container.decodeOrEmpty([TextTrack].self, forKey: .textTracks)
        sources = try container.decodeOrEmpty([VideoSource].self, forKey: .sources)
    }

    /// Encodes every key, writing `null` for nil optionals.
    public func encode(to encoder: any Encoder) throws {
        try CatalogObjectFields(id: id, accountID: accountID, name: name, description: description, referenceID: referenceID,
                                createdAt: createdAt, updatedAt: updatedAt).encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeOrNull(longDescription, forKey: .longDescription)
        try container.encode(duration, forKey: .duration)
        try container.encode(economics, forKey: .economics)
        try container.encodeWireDate(publishedAt, forKey: .publishedAt)
        try container.encode(customFields, forKey: .customFields)
        try container.encode(tags, forKey: .tags)
        try container.encode(cuePoints, forKey: .cuePoints)
        try container.encodeOrNull(poster, forKey: .poster)
        try container.encode(posterSources, forKey: .posterSources)
        try container.encodeOrNull(thumbnail, forKey: .thumbnail)
        try container.encode(thumbnailSources, forKey: .thumbnailSources)
        try container.encodeOrNull(link, forKey: .link)
        try container.encode(offlineEnabled, forKey: .offlineEnabled)
        try container.encodeOrNull(adKeys, forKey: .adKeys)
        try container.encode(textTracks, forKey: .textTracks)
        try container.encode(sources, forKey: .sources)
    }
}
