import Foundation
import WireModels

/// The catalog as written in `catalog.json`: accounts with their policy keys, videos
/// (which media asset, which protection, metadata) and playlists. The admin API reads and
/// writes videos, playlists and accounts in this same form.
struct CatalogFile: Codable, Sendable {
    struct Account: Codable, Sendable {
        var id: String
        var name: String
        var fairplay: Bool
        var manifestTokenTTLSeconds: Int?
        var policyKeys: [PolicyKey]
        /// The CMS API's custom field definitions (`/video_fields`); nil: never edited (see `CustomFieldDefinition.effective`).
        var videoFields: [CustomFieldDefinition]?
        /// The Ingest Profiles API's configuration (the default profile); nil: the system default.
        var ingestConfiguration: IngestConfiguration?
        /// Which kinds of source the account serves (`DeliveryFormat` names); nil: all of them.
        var deliveryFormats: [String]?
        /// How the CMAF sources address their media (`CMAFAddressing` names); nil: segments.
        var cmafAddressing: String?

        enum CodingKeys: String, CodingKey {
            case id, name, fairplay
            case deliveryFormats = "delivery_formats"
            case cmafAddressing = "cmaf_addressing"
            case videoFields = "video_fields"
            case ingestConfiguration = "ingest_configuration"
            case manifestTokenTTLSeconds = "manifest_token_ttl_seconds"
            case policyKeys = "policy_keys"
        }
    }

    struct PolicyKey: Codable, Sendable {
        var key: String
        var searchEnabled: Bool

        enum CodingKeys: String, CodingKey {
            case key
            case searchEnabled = "search_enabled"
        }
    }

    struct Video: Codable, Sendable {
        var id: String
        var accountID: String
        var referenceID: String?
        var name: String
        var description: String?
        var longDescription: String?
        var protection: Protection
        var offlineEnabled: Bool
        /// The media asset; nil while the video has none (made through the CMS API and not yet
        /// ingested): it is then not `complete` and does not play.
        var asset: String?
        var repeatCount: Int?
        /// Video renditions by name (`416x234`), in the asset's order (default: all).
        var renditions: [String]?
        var audioLanguages: [String]?
        /// Subtitle languages, in the manifest and as sideband tracks (default: all).
        var subtitleLanguages: [String]?
        var subtitlesInManifest: Bool?
        var sidebandTextTracks: Bool?
        /// The `kind` of a sideband track by language (default `captions`, as the real service's).
        var textTrackKinds: [String: String]?
        var tags: [String]?
        var customFields: [String: String]?
        var economics: String?
        var createdAt: String
        var updatedAt: String
        var publishedAt: String
        /// The CMS API's fields beyond the catalog file's own (nil: the default).
        var state: VideoState?
        var schedule: VideoSchedule?
        var cuePoints: [CuePoint]?
        var geo: VideoGeo?
        var link: Link?
        var adKeys: String?
        /// Text tracks the CMS API added by URL (the mock lists them; it does not fetch them).
        var remoteTextTracks: [RemoteTextTrack]?
        /// Which of the asset's sideband tracks stay offered, by language (default: all of `subtitle_languages`).
        var sidebandLanguages: [String]?

        enum CodingKeys: String, CodingKey {
            case id, name, description, protection, asset, tags, economics, renditions, state, schedule, geo, link
            case cuePoints = "cue_points"
            case adKeys = "ad_keys"
            case remoteTextTracks = "remote_text_tracks"
            case sidebandLanguages = "sideband_languages"
            case accountID = "account_id"
            case referenceID = "reference_id"
            case longDescription = "long_description"
            case offlineEnabled = "offline_enabled"
            case repeatCount = "repeat"
            case audioLanguages = "audio_languages"
            case subtitleLanguages = "subtitle_languages"
            case subtitlesInManifest = "subtitles_in_manifest"
            case sidebandTextTracks = "sideband_text_tracks"
            case textTrackKinds = "text_track_kinds"
            case customFields = "custom_fields"
            case createdAt = "created_at"
            case updatedAt = "updated_at"
            case publishedAt = "published_at"
        }
    }

    struct Playlist: Codable, Sendable {
        var id: String
        var accountID: String
        var referenceID: String?
        var name: String
        var description: String?
        var type: String?
        var videoIDs: [String]
        var createdAt: String
        var updatedAt: String
        /// A smart playlist's tag search (`tags:a,b`, `+tags:a,b`) and most videos (`SmartPlaylist`).
        var search: String?
        var limit: Int?
        var favorite: Bool?

        enum CodingKeys: String, CodingKey {
            case id, name, description, type, search, limit, favorite
            case accountID = "account_id"
            case referenceID = "reference_id"
            case videoIDs = "video_ids"
            case createdAt = "created_at"
            case updatedAt = "updated_at"
        }
    }

    var accounts: [Account]
    var videos: [Video]
    var playlists: [Playlist]

    /// Reads and decodes a catalog file.
    static func read(from file: URL) throws(CatalogError) -> CatalogFile {
        do {
            return try JSONDecoder().decode(CatalogFile.self, from: Data(contentsOf: file))
        } catch {
            throw CatalogError(.unreadableFile, "cannot read catalog \(file.path): \(error)", underlying: error)
        }
    }
}

/// How a video's media is protected. Raw values appear in manifest URLs.
public enum Protection: String, Codable, Sendable, CaseIterable {
    /// No encryption.
    case clear
    /// HLSe: whole segments encrypted with AES-128-CBC, key fetched over HTTP.
    case aes128
    /// SAMPLE-AES with an `skd://` key delivered by the license server.
    case fairplay
}
