public import Foundation

/// The license an offline FairPlay video is downloaded with (the reference's purchase and
/// rental-duration keys, plus the play duration of "dual expiry"). Durations in seconds.
public enum RequestedLicense: Sendable, Equatable, Codable {
    /// Never expires.
    case purchase
    /// Ends `duration` seconds after the license request; with `playDuration`, also that
    /// many seconds after the first playback, whichever comes first.
    case rental(duration: TimeInterval, playDuration: TimeInterval? = nil)
}

/// What `requestVideoDownload` is asked for.
///
/// ```swift
/// let parameters = DownloadParameters(requestedBitrate: 1_000_000, license: .rental(duration: 7 * 86400))
/// ```
public struct DownloadParameters: Sendable, Equatable, Codable {
    /// Picks the rendition with the largest bitrate at or below it; nil picks the lowest rendition with video.
    public var requestedBitrate: Int?
    /// A name for the app's UI; defaults to the video's name.
    public var displayName: String?
    /// The license terms (FairPlay videos only; required for them unless a license was preloaded).
    public var license: RequestedLicense?

    /// Creates parameters.
    public init(requestedBitrate: Int? = nil, displayName: String? = nil, license: RequestedLicense? = nil) {
        self.requestedBitrate = requestedBitrate
        self.displayName = displayName
        self.license = license
    }
}

/// Which alternate tracks to download besides the video. Languages are matched against the
/// playlist's `LANGUAGE` (case-insensitive, "en" also matches "en-US").
public struct MediaSelections: Sendable, Equatable, Codable {
    /// Audio languages to take; empty takes the default audio rendition only.
    public var audioLanguages: [String]
    /// Subtitle languages to take; empty takes none.
    public var subtitleLanguages: [String]

    /// Creates selections.
    public init(audioLanguages: [String] = [], subtitleLanguages: [String] = []) {
        self.audioLanguages = audioLanguages
        self.subtitleLanguages = subtitleLanguages
    }
}

/// The checks the reference makes before any request, as pure functions.
enum ParameterRules {
    /// Terms for a new license (download or preload).
    static func validateNewLicense(_ terms: RequestedLicense?) throws(OfflineVideoError) -> RequestedLicense {
        guard let terms else {
            throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters,
                                    "A FairPlay download needs license terms: purchase or a rental duration")
        }
        try validateDurations(terms)
        return terms
    }

    /// Terms for a renewal: no bitrate, and not purchase and rental together (the enum makes
    /// the latter impossible; a bitrate is the caller's mistake to report).
    static func validateRenewal(_ parameters: DownloadParameters) throws(OfflineVideoError) -> RequestedLicense {
        if parameters.requestedBitrate != nil {
            throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters,
                                    "A license renewal cannot change the bitrate; delete the video and download it again")
        }
        return try validateNewLicense(parameters.license)
    }

    private static func validateDurations(_ terms: RequestedLicense) throws(OfflineVideoError) {
        guard case .rental(let duration, let playDuration) = terms else { return }
        guard duration > 0, duration.isFinite else {
            throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters, "The rental duration must be more than 0 seconds")
        }
        if let playDuration, !(playDuration > 0 && playDuration.isFinite) {
            throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters, "The play duration must be more than 0 seconds")
        }
    }

    /// The requested bitrate, if given, must be positive.
    static func validateBitrate(_ bitrate: Int?) throws(OfflineVideoError) {
        if let bitrate, bitrate <= 0 {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "The requested bitrate must be more than 0")
        }
    }
}
