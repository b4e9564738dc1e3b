import Foundation
import WireModels

/// A video as the CMS API sees it: every video of the catalog document (the file with its
/// edits; the same the admin API and the dashboard edit), with its media when it has any.
struct CMSVideo: SearchableVideo {
    var entry: CatalogFile.Video
    /// The catalog's video when it has media (it is complete); nil before ingest.
    var media: CatalogVideo?
    var createdAt: Date
    var updatedAt: Date
    var publishedAt: Date
    var startsAt: Date?
    var endsAt: Date?

    init(_ entry: CatalogFile.Video, media: CatalogVideo?) {
        self.entry = entry
        self.media = media
        createdAt = WireDate.date(from: entry.createdAt) ?? .distantPast
        updatedAt = WireDate.date(from: entry.updatedAt) ?? .distantPast
        publishedAt = WireDate.date(from: entry.publishedAt) ?? .distantPast
        (startsAt, endsAt) = entry.schedule?.window ?? (nil, nil)
    }

    /// The account's videos in document order.
    static func all(of accountID: String, document: CatalogFile, catalog: Catalog) -> [CMSVideo] {
        document.videos.filter { $0.accountID == accountID }.map { CMSVideo($0, media: catalog.videos[$0.id]) }
    }

    var id: String { entry.id }
    var name: String { entry.name }
    var description: String? { entry.description }
    var longDescription: String? { entry.longDescription }
    var referenceID: String? { entry.referenceID }
    var tags: [String] { entry.tags ?? [] }
    var customFields: [String: String] { entry.customFields ?? [:] }
    var state: VideoState { entry.state ?? .active }
    var isComplete: Bool { media != nil }
    var sortDuration: Int { media?.durationMilliseconds ?? 0 }
}

/// The CMS API's video object (reference §2.3, §2.5): every field of the documented sample, with
/// `null`, `[]` and `{}` where it has none; `drm_disabled` only on FairPlay accounts.
struct CMSVideoBody: Encodable {
    var video: CMSVideo
    var fairPlayAccount: Bool
    /// The Playback API's rendering (images, text tracks, sources), when the video has media.
    var rendered: Video?

    enum Keys: String, CodingKey {
        case id, name, description, duration, economics, geo, images, link, schedule, sharing, state, tags, projection
        case accountID = "account_id", adKeys = "ad_keys", clipSourceVideoID = "clip_source_video_id", complete
        case createdAt = "created_at", createdBy = "created_by", cuePoints = "cue_points", customFields = "custom_fields"
        case deliveryType = "delivery_type", digitalMasterID = "digital_master_id", folderID = "folder_id"
        case hasDigitalMaster = "has_digital_master", longDescription = "long_description", originalFilename = "original_filename"
        case publishedAt = "published_at", referenceID = "reference_id", textTracks = "text_tracks", updatedAt = "updated_at"
        case updatedBy = "updated_by", offlineEnabled = "offline_enabled", playbackRightsID = "playback_rights_id"
        case drmDisabled = "drm_disabled"
    }

    func encode(to encoder: any Encoder) throws {
        let entry = video.entry
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(entry.id, forKey: .id)
        try c.encode(entry.accountID, forKey: .accountID)
        try c.encode(entry.adKeys, forKey: .adKeys)
        try c.encodeNil(forKey: .clipSourceVideoID)
        try c.encode(video.isComplete, forKey: .complete)
        try c.encode(entry.createdAt, forKey: .createdAt)
        try c.encode(["type": "unknown"], forKey: .createdBy)
        try c.encode(entry.cuePoints ?? [], forKey: .cuePoints)
        try c.encode(entry.customFields ?? [:], forKey: .customFields)
        try c.encode(video.isComplete ? "dynamic_origin" : "unknown", forKey: .deliveryType)
        try c.encode(entry.description, forKey: .description)
        try c.encodeNil(forKey: .digitalMasterID)
        try c.encode(video.media?.durationMilliseconds, forKey: .duration)
        try c.encode(entry.economics ?? "AD_SUPPORTED", forKey: .economics)
        try c.encodeNil(forKey: .folderID)
        try c.encode(entry.geo, forKey: .geo)
        try c.encode(false, forKey: .hasDigitalMaster)
        try c.encode(CMSImages(rendered), forKey: .images)
        try c.encode(entry.link, forKey: .link)
        try c.encode(entry.longDescription, forKey: .longDescription)
        try c.encode(entry.name, forKey: .name)
        try c.encodeNil(forKey: .originalFilename)
        try c.encodeNil(forKey: .projection)
        try c.encode(entry.publishedAt, forKey: .publishedAt)
        try c.encode(entry.referenceID, forKey: .referenceID)
        try c.encode(entry.schedule, forKey: .schedule)
        try c.encodeNil(forKey: .sharing)
        try c.encode(video.state.rawValue, forKey: .state)
        try c.encode(entry.tags ?? [], forKey: .tags)
        // The tracks the CMS API manages: not the thumbnail track, which delivery makes.
        try c.encode(rendered?.textTracks.filter { !$0.isThumbnailTrack } ?? [], forKey: .textTracks)
        try c.encode(entry.updatedAt, forKey: .updatedAt)
        try c.encode(["type": "unknown"], forKey: .updatedBy)
        try c.encode(entry.offlineEnabled, forKey: .offlineEnabled)
        try c.encodeNil(forKey: .playbackRightsID)
        if fairPlayAccount { try c.encode(entry.protection != .fairplay, forKey: .drmDisabled) }
    }
}

/// A video's `images`: `poster` and `thumbnail` with their one size, `{}` before it has media.
struct CMSImages: Encodable {
    struct Image: Encodable {
        struct Source: Encodable { var src: String; var width: Int; var height: Int }
        var src: String
        var sources: [Source]
    }

    var images: [String: Image] = [:]

    init(_ rendered: Video?) {
        if let poster = rendered?.poster {
            images["poster"] = Image(src: poster, sources: [.init(src: poster, width: 1280, height: 720)])
        }
        if let thumbnail = rendered?.thumbnail {
            images["thumbnail"] = Image(src: thumbnail, sources: [.init(src: thumbnail, width: 160, height: 90)])
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(images)
    }
}
