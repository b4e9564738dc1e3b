import Foundation
import LicenseProtocol
import WireModels

/// The offline video object: the stored video with the reference's offline properties.
extension OfflineVideoManager {
    /// The property names of an offline video (times are seconds since 2001-01-01 UTC).
    public enum OfflineProperty {
        public static let token = "offline_video_token"
        public static let licenseRequestTime = "offline_download_license_request_time"
        public static let licenseAbsoluteExpirationTime = "offline_download_license_absolute_expiration_time"
        public static let initialPlaybackTime = "offline_download_initial_playback_time"
        public static let startTime = "offline_download_start_time"
        /// 0 until the download ends.
        public static let endTime = "offline_download_end_time"
        /// The URL of the online source the download came from, as a string (it may have expired).
        public static let onlineSource = "online_source"
        /// The online source the download came from, as the Playback API described it (its URL,
        /// type and key systems).
        public static let onlineSourceObject = "online_source_object"
        /// Whether the license is a purchase (the `DownloadParameters` terms the license was made with).
        public static let licensePurchase = "offline_license_purchase"
        /// A rental's duration in seconds, from the license request.
        public static let licenseRentalDuration = "offline_license_rental_duration"
        /// A rental's play window in seconds from the first play ("dual expiry"), when it has one.
        public static let licensePlayDuration = "offline_license_play_duration"
        public static let thumbnailName = "offline_thumbnail_name"
        public static let thumbnailPath = "offline_thumbnail"
        public static let posterName = "offline_poster_name"
        public static let posterPath = "offline_poster"
        /// The download configuration's artwork (`DownloadConfiguration.artworkData`), when given.
        public static let artworkName = "offline_artwork_name"
        public static let artworkPath = "offline_artwork"
        /// The package folder's path relative to the storage directory (the reference's
        /// relative path of the video bundle).
        public static let relativeVideoPath = "offline_relative_video_path"
        /// The package folder's absolute path: the downloaded video bundle, every file of the
        /// download inside it (sum its files for the download's size).
        public static let videoPath = "offline_video_path"
        /// The local master playlist's absolute path (inside the package folder): what a player opens.
        public static let masterPlaylistPath = "offline_master_playlist_path"
        public static let usesSidebandSubtitles = "offline_uses_sideband_subtitles"
        public static let sidebandSubtitleLanguages = "offline_sideband_subtitle_languages"
        /// Absolute paths of the sideband subtitle files, by language.
        public static let sidebandSubtitlePaths = "offline_sideband_subtitle_paths"
        /// True only when every selected segment is on disk.
        public static let playableOffline = "offline_playable"
        /// The name the download was requested with (`DownloadParameters.displayName`, else the video's name).
        public static let displayName = "offline_display_name"
    }

    /// The stored video with the offline properties, or nil for an unknown token. Objects of
    /// completed downloads are cached until `clearOfflineVideoCache()`.
    public func videoObject(fromOfflineVideoToken token: OfflineVideoToken) -> PlaybackVideo? {
        if let cached = videoCache[token] { return cached }
        guard let record = try? store.download(token), let original = try? record.video() else { return nil }
        var properties = original.properties
        let since2001 = { (seconds: Double) in JSONValue.number(seconds - Date.timeIntervalBetween1970AndReferenceDate) }
        let folder = packageFolder(token)
        properties[OfflineProperty.token] = .string(token)
        properties[OfflineProperty.displayName] = .string(record.displayName)
        properties[OfflineProperty.startTime] = since2001(record.requestedAt)
        properties[OfflineProperty.endTime] = record.endedAt.map(since2001) ?? .number(0)
        if let requested = record.licenseRequestedAt { properties[OfflineProperty.licenseRequestTime] = since2001(requested) }
        // The effective expiry (after a first play, the earlier of the rental's end and the play
        // window's), the same answer as `fairPlayLicenseExpiration`; none for a purchase.
        if let expires = OfflineLicenses.expiration(of: record), expires != .distantFuture {
            properties[OfflineProperty.licenseAbsoluteExpirationTime] = since2001(expires.timeIntervalSince1970)
        }
        if let played = record.initialPlaybackAt { properties[OfflineProperty.initialPlaybackTime] = since2001(played) }
        if let source = try? DownloadPlanner.offlineSource(of: original) {
            properties[OfflineProperty.onlineSource] = .string(source.src)
            if let data = try? WireJSON.encoder(sortedKeys: true).encode(source),
               let json = try? JSONDecoder().decode(JSONValue.self, from: data) {
                properties[OfflineProperty.onlineSourceObject] = json
            }
        }
        if let terms = StoredLicense.terms(of: record) {
            // The terms as asked (preload, download or last renewal); the server's rental end is
            // whole seconds counted from its own time, so it is only the fallback.
            let asked = (try? JSONDecoder().decode(DownloadParameters.self, from: record.parameters))?.license
            properties[OfflineProperty.licensePurchase] = .bool(terms.kind == .purchase)
            if terms.kind == .rental {
                if let duration = asked?.kind == .rental ? asked?.rentalDuration : nil {
                    properties[OfflineProperty.licenseRentalDuration] = .number(duration)
                } else if let end = terms.rentalEnd {
                    properties[OfflineProperty.licenseRentalDuration] = .number(end.timeIntervalSince(terms.issuedAt).rounded())
                }
            }
            if let play = terms.playDuration { properties[OfflineProperty.licensePlayDuration] = .number(play) }
        }
        if let poster = record.posterFile {
            properties[OfflineProperty.posterName] = .string((poster as NSString).lastPathComponent)
            properties[OfflineProperty.posterPath] = .string(folder.appendingPathComponent(poster).path)
        }
        if let thumbnail = record.thumbnailFile {
            properties[OfflineProperty.thumbnailName] = .string((thumbnail as NSString).lastPathComponent)
            properties[OfflineProperty.thumbnailPath] = .string(folder.appendingPathComponent(thumbnail).path)
        }
        if let artwork = StoredRequest.of(record).configuration?.artworkFile {
            properties[OfflineProperty.artworkName] = .string((artwork as NSString).lastPathComponent)
            properties[OfflineProperty.artworkPath] = .string(folder.appendingPathComponent(artwork).path)
        }
        properties[OfflineProperty.relativeVideoPath] = .string("packages/\(token)")
        properties[OfflineProperty.videoPath] = .string(folder.path)
        properties[OfflineProperty.masterPlaylistPath] = .string(folder.appendingPathComponent(PackageLayout.masterPlaylist).path)
        let sideband = OfflineVideoManager.sidebandTracks(record: record, video: original)
        properties[OfflineProperty.usesSidebandSubtitles] = .bool(!sideband.isEmpty)
        properties[OfflineProperty.sidebandSubtitleLanguages] = .array(sideband.map { .string($0.srclang) })
        properties[OfflineProperty.sidebandSubtitlePaths] = .object(Dictionary(
            sideband.map { ($0.srclang, JSONValue.string(folder.appendingPathComponent(PackageLayout.sidebandFile($0)).path)) },
            uniquingKeysWith: { first, _ in first }))
        let playable = record.downloadState == .completed && missingFile(record) == nil
        properties[OfflineProperty.playableOffline] = .bool(playable)
        let video = PlaybackVideo(video: original.video, properties: properties, origin: original.origin)
        if record.downloadState == .completed { videoCache[token] = video }
        return video
    }

    /// Forgets cached offline video objects; the next `videoObject` builds them afresh.
    public func clearOfflineVideoCache() {
        videoCache = [:]
    }
}

extension PlaybackVideo {
    /// The offline token, when this object came from `videoObject(fromOfflineVideoToken:)`.
    public var offlineVideoToken: OfflineVideoToken? { properties[OfflineVideoManager.OfflineProperty.token]?.stringValue }
    /// Whether every selected segment of the offline video is on disk.
    public var playableOffline: Bool { properties[OfflineVideoManager.OfflineProperty.playableOffline]?.boolValue ?? false }
    /// The name an offline video was downloaded under (`DownloadParameters.displayName`, else its name).
    public var offlineDisplayName: String? { properties[OfflineVideoManager.OfflineProperty.displayName]?.stringValue }
    /// The package folder of an offline video (every file of the download is inside it).
    public var offlineVideoPath: String? { properties[OfflineVideoManager.OfflineProperty.videoPath]?.stringValue }
    /// The local master playlist of an offline video: what a player opens.
    public var offlineMasterPlaylistPath: String? { properties[OfflineVideoManager.OfflineProperty.masterPlaylistPath]?.stringValue }
}
