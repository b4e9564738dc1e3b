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

    /// The keys beside the `CatalogObjectFields`.
    enum CodingKeys: String, CodingKey {
        case type, videos
        case videoIDs = "video_ids"
    }

    /// Decodes a playlist; absent `videos` reads as empty.
    public init(from decoder: any Decoder) throws {
        let common = try CatalogObjectFields(from: decoder)
        (id, accountID, name, description, referenceID, createdAt, updatedAt) =
            (common.id, common.accountID, common.name, common.description, common.referenceID, common.createdAt, common.updatedAt)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(String.self, forKey: .type)
        videos = try container.decodeOrEmpty([Video].self, forKey: .videos)
        videoIDs = try container.decodeIfPresent([String].self, forKey: .videoIDs)
    }

    /// Encodes every key, writing `null` for nil optionals (`video_ids` is left out when nil).
    public func encode(to encoder: any Encoder) throws {
        try CatalogObjectFields(id: id, accountID: accountID, name: name, description: description, referenceID: referenceID,
                                createdAt: createdAt, updatedAt: updatedAt).encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
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
