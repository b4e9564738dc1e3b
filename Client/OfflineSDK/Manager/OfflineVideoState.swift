public import Foundation

/// Identifies one offline video (a download, a preloaded license, or both) for the life of
/// the store: the same string after the process restarts.
public typealias OfflineVideoToken = String

/// Where a download stands. The raw values are persisted and are the reference's numbers:
/// they never change; new states get new numbers.
public enum OfflineVideoDownloadState: Int, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Accepted and queued; nothing fetched yet.
    case requested = 0
    /// Fetching media.
    case downloading = 1
    /// Paused by the app (`pauseVideoDownload`); `resumeVideoDownload` continues it.
    case suspended = 2
    /// Cancelled by the app; its files are removed, the record stays until deleted.
    case cancelled = 3
    /// Every selected segment, the playlists and the license are on disk.
    case completed = 4
    /// Failed; `OfflineVideoStatus.error` says why. Finished segments are kept.
    case error = 5
    /// A FairPlay license is held and no download has been requested yet.
    case licensePreloaded = 6
    /// The files of a completed download vanished behind the manager's back.
    case stale = 7

    /// Whether the download can still make progress by itself.
    public var isActive: Bool { self == .requested || self == .downloading }

    public var description: String {
        switch self {
        case .requested: "requested"
        case .downloading: "downloading"
        case .suspended: "suspended"
        case .cancelled: "cancelled"
        case .completed: "completed"
        case .error: "error"
        case .licensePreloaded: "licensePreloaded"
        case .stale: "stale"
        }
    }
}

/// A snapshot of one offline video's download. Copies: changing one changes nothing.
public struct OfflineVideoStatus: Sendable, Equatable {
    /// The offline video token.
    public var token: OfflineVideoToken
    /// The state now.
    public var downloadState: OfflineVideoDownloadState
    /// When the download (or the license preload) was requested.
    public var downloadStartTime: Date
    /// When it ended, however it ended; nil while it has not.
    public var downloadEndTime: Date?
    /// 0 to 100; exactly 100 only when every byte is on disk; 0 once cancelled (its files are gone).
    public var downloadPercent: Double
    /// Why it failed, for `.error` (and `.stale`).
    public var error: OfflineVideoError?
    /// The name it was requested under (`DownloadParameters.displayName`, else the video's name).
    public var displayName: String
    /// When its FairPlay license was requested (the start of a rental's duration); nil without one.
    public var licenseRequestTime: Date?

    /// Creates a status.
    ///
    /// - Parameters:
    ///   - token: The offline video token.
    ///   - downloadState: The state.
    ///   - downloadStartTime: When the download (or the license preload) was requested.
    ///   - downloadEndTime: When it ended; nil (the default) while it has not.
    ///   - downloadPercent: 0 to 100; 0 by default.
    ///   - error: Why it failed; nil by default.
    ///   - displayName: The name it was requested under; empty by default.
    ///   - licenseRequestTime: When its FairPlay license was requested; nil (the default) without one.
    public init(token: OfflineVideoToken, downloadState: OfflineVideoDownloadState, downloadStartTime: Date,
                downloadEndTime: Date? = nil, downloadPercent: Double = 0, error: OfflineVideoError? = nil,
                displayName: String = "", licenseRequestTime: Date? = nil) {
        self.licenseRequestTime = licenseRequestTime
        self.token = token
        self.displayName = displayName
        self.downloadState = downloadState
        self.downloadStartTime = downloadStartTime
        self.downloadEndTime = downloadEndTime
        self.downloadPercent = downloadPercent
        self.error = error
    }
}

/// Where one track of a download stands in bytes (`OfflineVideoManager.downloadProgress`).
public struct OfflineTrackProgress: Sendable, Equatable {
    /// The track.
    public var selection: OfflineMediaSelection
    /// Bytes on disk.
    public var bytesDone: Int64
    /// Bytes expected in all: finished segments' real sizes plus estimates for the others.
    public var bytesExpected: Int64
    /// 0 to 100; 100 only once every segment is on disk.
    public var percent: Double
}
