import Foundation
import GRDB
import WireModels

/// One offline video as stored: the video, what was asked for, where it stands, its license.
/// Column names and the meaning of stored numbers never change (new ones come by migration).
struct DownloadRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "download"

    var token: String
    var videoID: String
    var accountID: String
    /// The video object's whole JSON as the Playback API sent it.
    var videoJSON: Data
    /// `OfflineVideoDownloadState.rawValue`.
    var state: Int
    /// `DownloadParameters` as JSON.
    var parameters: Data
    /// What was asked for (`StoredRequest`: `MediaSelections`' fields, and the download
    /// configuration's marks) as JSON, or nil for "the preferred ones".
    var selections: Data?
    var displayName: String
    /// Seconds since 1970.
    var requestedAt: Double
    var endedAt: Double?
    /// The failure, as `StoredError` JSON.
    var error: Data?
    /// The variant's BANDWIDTH chosen, once the master playlist was read.
    var bitrate: Int?
    /// The master playlist URL the download was planned from.
    var masterURL: String?
    /// The policy key of the service that found the video (for URL refreshes), if known.
    var policyKey: String?
    /// The Playback API base URL of that service.
    var serviceBaseURL: String?
    /// Whether cellular was allowed when the download started (it keeps that policy).
    var allowsCellular: Bool
    /// The persisted license (LicenseProtocol's format), FairPlay only.
    var license: Data?
    /// The license's signed terms (`LicenseProtocol.LicenseTerms`) as JSON.
    var licenseTerms: Data?
    var licenseRequestedAt: Double?
    /// nil = never (purchase); only meaningful with a license.
    var licenseExpiresAt: Double?
    var initialPlaybackAt: Double?
    var posterFile: String?
    var thumbnailFile: String?
    /// Order of requests, for the download queue.
    var sequence: Int64
    /// The content id a `DownloadTask` was enqueued under (nil: requested through
    /// `OfflineVideoManager`; its task goes by the video id).
    var contentID: String? = nil
    /// The task's metadata string, the app's own.
    var taskMetadata: String? = nil
    /// The device's stamp over the license fields (`LicenseFields`: license, terms, expiry,
    /// first play): `binding.mac`; set by the store on every write that changes them, never by callers.
    var licenseSeal: String? = nil

    enum CodingKeys: String, CodingKey {
        case token, state, parameters, selections, error, bitrate, license, sequence
        case videoID = "video_id", accountID = "account_id", videoJSON = "video_json", displayName = "display_name"
        case requestedAt = "requested_at", endedAt = "ended_at", masterURL = "master_url", policyKey = "policy_key"
        case serviceBaseURL = "service_base_url", allowsCellular = "allows_cellular", licenseTerms = "license_terms"
        case licenseRequestedAt = "license_requested_at", licenseExpiresAt = "license_expires_at"
        case initialPlaybackAt = "initial_playback_at", posterFile = "poster_file", thumbnailFile = "thumbnail_file"
        case contentID = "content_id", taskMetadata = "task_metadata", licenseSeal = "license_seal"
    }

    var downloadState: OfflineVideoDownloadState { OfflineVideoDownloadState(rawValue: state) ?? .error }

    /// The content id its `DownloadTask` goes by: the one it was enqueued under, else the video id.
    var taskContentID: String { contentID ?? videoID }

    /// The stored video object, with the service that found it (the kept base URL, account
    /// and policy key) as its origin.
    func video() throws -> PlaybackVideo {
        var video = try PlaybackVideo(json: Array(videoJSON))
        if let serviceBaseURL {
            video.origin = PlaybackService.Origin(baseURL: serviceBaseURL, accountID: accountID, policyKey: policyKey)
        }
        return video
    }

    /// The JSON a record keeps of `video` (`videoJSON`; `video()` reads it back).
    static func videoJSON(of video: PlaybackVideo) throws -> Data {
        try WireJSON.encoder(sortedKeys: true).encode(video.properties)
    }

    /// A new record for `video`, nothing planned or licensed yet.
    static func new(token: String, video: PlaybackVideo, state: OfflineVideoDownloadState, parameters: DownloadParameters,
                    requestedAt: Double, allowsCellular: Bool, sequence: Int64) throws -> DownloadRecord {
        DownloadRecord(
            token: token, videoID: video.id, accountID: video.accountID, videoJSON: try DownloadRecord.videoJSON(of: video),
            state: state.rawValue, parameters: try JSONEncoder().encode(parameters), selections: nil,
            displayName: parameters.displayName ?? video.name, requestedAt: requestedAt, endedAt: nil, error: nil,
            bitrate: nil, masterURL: nil, policyKey: video.origin?.policyKey, serviceBaseURL: video.origin?.baseURL,
            allowsCellular: allowsCellular, license: nil, licenseTerms: nil, licenseRequestedAt: nil, licenseExpiresAt: nil,
            initialPlaybackAt: nil, posterFile: nil, thumbnailFile: nil, sequence: sequence)
    }
}

/// One playlist of a download (video variant, audio or subtitles) and where it lives locally.
struct TrackRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "track"

    var token: String
    var position: Int
    /// `TrackChoice.Kind.rawValue`.
    var kind: String
    var language: String?
    var name: String
    var playlistURL: String
    var bandwidth: Int?
    /// The media playlist's path inside the package folder.
    var localPlaylist: String

    enum CodingKeys: String, CodingKey {
        case token, position, kind, language, name, bandwidth
        case playlistURL = "playlist_url", localPlaylist = "local_playlist"
    }
}

/// One segment to fetch. `done` is set once its file is complete on disk.
struct SegmentRecord: Sendable, Equatable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "segment"

    var token: String
    var track: Int
    var sequence: Int
    var url: String
    /// Path inside the package folder.
    var file: String
    var duration: Double
    /// Bandwidth x duration, until the real size is known.
    var estimatedBytes: Int64
    /// The real size once fetched.
    var bytes: Int64?
    var done: Bool
    /// The bytes of `url` the segment is (`EXT-X-BYTERANGE`), or nil for the whole of it.
    var range: SegmentRange? = nil

    /// The segment's identity within its download.
    var key: SegmentKey { SegmentKey(track: track, sequence: sequence) }
}

extension SegmentRecord {
    /// Read column by column, not through `Decodable`: a plan's hundreds of records are
    /// written in one transaction before the first segment is asked for, and the runner reads
    /// them a page at a time; the generic coding builds and walks a keyed container per row.
    init(row: Row) throws {
        token = row["token"]
        track = row["track"]
        sequence = row["sequence"]
        url = row["url"]
        file = row["file"]
        duration = row["duration"]
        estimatedBytes = row["estimated_bytes"]
        bytes = row["bytes"]
        done = row["done"]
        if let offset: Int64 = row["range_offset"], let length: Int64 = row["range_length"] {
            range = SegmentRange(offset: offset, length: length)
        }
    }

    /// Written column by column (see `init(row:)`), the columns it reads.
    func encode(to container: inout PersistenceContainer) throws {
        container["token"] = token
        container["track"] = track
        container["sequence"] = sequence
        container["url"] = url
        container["file"] = file
        container["duration"] = duration
        container["estimated_bytes"] = estimatedBytes
        container["bytes"] = bytes
        container["done"] = done
        container["range_offset"] = range?.offset
        container["range_length"] = range?.length
    }
}

/// The bytes of a remote file a segment is: `length` bytes from `offset`.
struct SegmentRange: Sendable, Hashable {
    var offset: Int64
    var length: Int64
}

/// A segment's progress without its URL (see `OfflineStore.forEachSegmentState`).
struct SegmentState: Sendable {
    var track: Int
    var sequence: Int
    var file: String
    var estimatedBytes: Int64
    var bytes: Int64?
    var done: Bool
    /// SHA-256 hex of the finished file, when its server sent a `Repr-Digest`.
    var digest: String?
}

/// A segment the runner finished: its size and, when the server sent one, its digest (hex).
struct FinishedSegment: Sendable, Equatable {
    var track: Int
    var sequence: Int
    var bytes: Int64
    var digest: String?
}

/// A segment's identity within its download.
struct SegmentKey: Hashable, Sendable {
    var track: Int
    var sequence: Int
}

/// An `OfflineVideoError` as stored with a failed download.
struct StoredError: Codable, Sendable {
    var code: Int
    var reason: String
    var message: String
    var httpStatus: Int?

    init(_ error: OfflineVideoError) {
        code = error.code.rawValue
        reason = error.reason.rawValue
        message = error.message
        httpStatus = error.httpStatus
    }

    var error: OfflineVideoError {
        OfflineVideoError(OfflineVideoError.Code(rawValue: code), OfflineVideoError.Reason(rawValue: reason),
                          message, httpStatus: httpStatus)
    }
}

/// A first play or a release waiting to reach the license server (`license_report`).
struct LicenseReport: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "license_report"

    enum Kind: String, Codable, Sendable {
        case firstPlay = "first_play"
        case release
    }

    var id: Int64?
    var kind: Kind
    /// The download it came from (nil or gone once deleted: a release outlives its download).
    var token: String?
    var licenseID: String
    var contentKeyID: String
    var accountID: String
    var videoID: String
    /// The video's FairPlay key system (`KeySystem` JSON): where to send it.
    var keySystem: Data
    /// The Playback API the video was found with, to renew an expired license URL.
    var serviceBaseURL: String?
    var policyKey: String?
    var createdAt: Double
    var attempts: Int

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    enum CodingKeys: String, CodingKey {
        case id, kind, token, attempts
        case licenseID = "license_id", contentKeyID = "content_key_id", accountID = "account_id", videoID = "video_id"
        case keySystem = "key_system", serviceBaseURL = "service_base_url", policyKey = "policy_key", createdAt = "created_at"
    }
}

/// An analytics event waiting to reach its collector (`analytics_event`).
struct AnalyticsRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "analytics_event"

    /// Order of recording; nil until inserted.
    var seq: Int64?
    /// The event's own id, which the collector deduplicates on.
    var id: String
    /// The base URL of the backend the video came from: the event goes to `origin` + `/tracker`.
    var origin: String
    /// The event (`TrackerEvent`) as JSON, exactly as it is sent.
    var body: Data
    /// `body.count`: what the storage limit counts.
    var bytes: Int
    var createdAt: Double
    var attempts: Int

    mutating func didInsert(_ inserted: InsertionSuccess) { seq = inserted.rowID }

    enum CodingKeys: String, CodingKey {
        case seq, id, origin, body, bytes, attempts
        case createdAt = "created_at"
    }
}
