public import Foundation

/// A playlist object as the Playback API returns it (`GET …/playlists/{id}`).
///
/// Named `Playlist` because the HLS types are `MasterPlaylist` and `MediaPlaylist`.
public struct Playlist: Codable, Sendable, Equatable {
    /// `type` of a hand-picked playlist.
    public static let explicit = "EXPLICIT"

    /// The playlist id.
    public var id: String
    /// The owning account id.
    public var accountID: String
    /// The name.
    public var name: String
    /// Description, or nil (encoded as `null`).
    public var description: String?
    /// The publisher's own reference id, or nil (encoded as `null`).
    public var referenceID: String?
    /// `EXPLICIT` or one of the smart-playlist types.
    public var type: String
    /// Creation time.
    public var createdAt: Date
    /// Last modification time.
    public var updatedAt: Date
    /// The videos, after `limit`/`offset`.
    public var videos: [Video]
    /// Every video id of a hand-picked (`EXPLICIT`) playlist, in order and not paged, as the
    /// real service lists them; nil (left out) for a smart playlist, which has none.
    public var videoIDs: [String]?

    /// Creates a playlist.
    public init(
        id: String, accountID: String, name: String, description: String? = nil, referenceID: String? = nil,
        type: String = Playlist.explicit, createdAt: Date, updatedAt: Date, videos: [Video] = [],
        videoIDs: [String]? = nil
    ) {
        self.id = id
        self.accountID = accountID
        self.name = name
        self.description = description
        self.referenceID = referenceID
        self.type = type
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.videos = videos
        self.videoIDs = videoIDs
    }

    enum CodingKeys: String, CodingKey {
        case id, name, description, type, videos
        case accountID = "account_id"
        case referenceID = "reference_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case videoIDs = "video_ids"
    }

    /// Decodes a playlist; absent `videos` reads as empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        accountID = try container.decode(String.self, forKey: .accountID)
        name = try container.decode(String.self, forKey: .name)
        description = try container.decodeIfPresent(String.self, forKey: .description)
        referenceID = try container.decodeIfPresent(String.self, forKey: .referenceID)
        type = try container.decode(String.self, forKey: .type)
        createdAt = try container.decodeWireDate(forKey: .createdAt)
        updatedAt = try container.decodeWireDate(forKey: .updatedAt)
        videos = try container.decodeOrEmpty([Video].self, forKey: .videos)
        videoIDs = try container.decodeIfPresent([String].self, forKey: .videoIDs)
    }

    /// Encodes every key, writing `null` for nil optionals (`video_ids` is left out when nil).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(accountID, forKey: .accountID)
        try container.encode(name, forKey: .name)
        try container.encodeOrNull(description, forKey: .description)
        try container.encodeOrNull(referenceID, forKey: .referenceID)
        try container.encode(type, forKey: .type)
        try container.encodeWireDate(createdAt, forKey: .createdAt)
        try container.encodeWireDate(updatedAt, forKey: .updatedAt)
        try container.encode(videos, forKey: .videos)
        try container.encodeIfPresent(videoIDs, forKey: .videoIDs)
    }
}

/// The answer to a video search (`GET …/videos?q=`): the total match count and one page of videos.
public struct SearchResult: Codable, Sendable, Equatable {
    /// How many videos match in all (not just this page).
    public var count: Int
    /// This page of videos.
    public var videos: [Video]

    /// Creates a search result.
    public init(count: Int, videos: [Video]) {
        self.count = count
        self.videos = videos
    }
}
