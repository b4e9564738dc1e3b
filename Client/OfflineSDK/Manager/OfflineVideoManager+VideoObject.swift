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
    /// completed downloads are cached until ``clearOfflineVideoCache()``.
    ///
    /// - Parameter token: The offline video's token.
    /// - Returns: The video with the ``OfflineProperty`` properties (``PlaybackVideo/offlineVideoToken`` among
    ///   them); nil for an unknown token.
    public func videoObject(fromOfflineVideoToken token: OfflineVideoToken) -> PlaybackVideo? {
        sessions.onSharedQueue { $0.videoObject(token) }
    }

    /// Forgets cached offline video objects; the next `videoObject` builds them afresh.
    public func clearOfflineVideoCache() {
        sessions.onSharedQueue { $0.clearVideoObjects() }
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
