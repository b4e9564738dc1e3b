public import Foundation

/// The license an offline FairPlay video is downloaded with (the reference's purchase and
/// rental-duration keys, plus the play duration of "dual expiry"). Durations in seconds.
/// A struct of terms, so a term added later (with a default) breaks no caller:
///
/// ```swift
/// let bought = RequestedLicense.purchase
/// let rented = RequestedLicense.rental(duration: 48 * 3600, playDuration: 6 * 3600)
/// ```
public struct RequestedLicense: Sendable, Equatable, Codable {
    /// Purchase or rental.
    public enum Kind: String, Sendable, Equatable, Codable {
        /// Never expires.
        case purchase
        /// Ends `rentalDuration` after the license request (and `playDuration` after the first play, if earlier).
        case rental
    }

    /// Purchase or rental.
    public var kind: Kind
    /// Rentals: seconds from the license request to the rental's end (required for a rental).
    public var rentalDuration: TimeInterval?
    /// Rentals: seconds from the first playback ("dual expiry"); nil: no play window.
    public var playDuration: TimeInterval?
    /// A task's rental end as its request named it (`DownloadRequest.expiration`), kept with the
    /// terms the key was fetched on: a later request naming the same end matches it exactly,
    /// never through the duration the server counted from its own time.
    var rentalEnd: Date?

    /// Terms of `kind`; a request with terms that do not go together (a purchase with a duration, a
    /// rental without one, a duration not over 0) is refused with `invalidLicenseParameters`.
    ///
    /// - Parameters:
    ///   - kind: Purchase or rental.
    ///   - rentalDuration: Rentals: seconds from the license request to the rental's end (required for a
    ///     rental); nil by default.
    ///   - playDuration: Rentals: seconds from the first playback ("dual expiry"); nil (the default) for no
    ///     play window.
    public init(kind: Kind, rentalDuration: TimeInterval? = nil, playDuration: TimeInterval? = nil) {
        self.kind = kind
        self.rentalDuration = rentalDuration
        self.playDuration = playDuration
    }

    /// Never expires.
    public static let purchase = RequestedLicense(kind: .purchase)

    /// Ends `duration` seconds after the license request; with `playDuration`, also that many
    /// seconds after the first playback, whichever comes first.
    ///
    /// - Parameters:
    ///   - duration: Seconds from the license request to the rental's end.
    ///   - playDuration: Seconds from the first playback; nil (the default) for no play window.
    public static func rental(duration: TimeInterval, playDuration: TimeInterval? = nil) -> RequestedLicense {
        RequestedLicense(kind: .rental, rentalDuration: duration, playDuration: playDuration)
    }

    /// The same terms: kind, rental duration and play window (a task's named end is how they
    /// were asked for, not another term).
    public static func == (a: RequestedLicense, b: RequestedLicense) -> Bool {
        a.kind == b.kind && a.rentalDuration == b.rentalDuration && a.playDuration == b.playDuration
    }

    enum CodingKeys: String, CodingKey {
        case kind, rentalDuration, playDuration, rentalEnd
        // How SDKs before the struct stored it (an enum): {"purchase":{}} or {"rental":{"duration":…,"playDuration":…}}.
        case purchase, rental, duration
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if c.contains(.kind) {
            self.init(kind: try c.decode(Kind.self, forKey: .kind), rentalDuration: try c.decodeIfPresent(TimeInterval.self, forKey: .rentalDuration),
                      playDuration: try c.decodeIfPresent(TimeInterval.self, forKey: .playDuration))
            rentalEnd = try c.decodeIfPresent(Date.self, forKey: .rentalEnd)
        } else if c.contains(.rental) {
            let rental = try c.nestedContainer(keyedBy: CodingKeys.self, forKey: .rental)
            self = .rental(duration: try rental.decode(TimeInterval.self, forKey: .duration),
                           playDuration: try rental.decodeIfPresent(TimeInterval.self, forKey: .playDuration))
        } else if c.contains(.purchase) {
            self = .purchase
        } else {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: "not license terms"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encodeIfPresent(rentalDuration, forKey: .rentalDuration)
        try c.encodeIfPresent(playDuration, forKey: .playDuration)
        try c.encodeIfPresent(rentalEnd, forKey: .rentalEnd)
    }
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
    ///
    /// - Parameters:
    ///   - requestedBitrate: The largest variant bitrate to take, in bits per second; nil (the default) picks
    ///     the lowest rendition with video.
    ///   - displayName: A name for the app's UI; nil (the default) takes the video's name.
    ///   - license: The license terms, for FairPlay videos (required for them unless a license was preloaded);
    ///     nil by default.
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
    /// Whether to take the video's thumbnail track (Dynamic Delivery's scrubbing previews: the
    /// `text_tracks` entry labelled `thumbnails`, its WebVTT and sprite images), for
    /// ``OfflinePlayback/thumbnails`` offline. False by default, as Brightcove's iOS SDK, whose
    /// offline videos have no thumbnail seeking. A video without the track downloads without it.
    public var thumbnails: Bool

    /// Creates selections.
    ///
    /// - Parameters:
    ///   - audioLanguages: Audio languages to take; empty (the default) takes the default audio rendition only.
    ///   - subtitleLanguages: Subtitle languages to take; empty (the default) takes none.
    ///   - thumbnails: Whether to take the thumbnail track; false by default.
    public init(audioLanguages: [String] = [], subtitleLanguages: [String] = [], thumbnails: Bool = false) {
        self.audioLanguages = audioLanguages
        self.subtitleLanguages = subtitleLanguages
        self.thumbnails = thumbnails
    }

    enum CodingKeys: String, CodingKey { case audioLanguages, subtitleLanguages, thumbnails }

    /// Reads selections written before `thumbnails` (without it: false).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(audioLanguages: try c.decode([String].self, forKey: .audioLanguages),
                  subtitleLanguages: try c.decode([String].self, forKey: .subtitleLanguages),
                  thumbnails: try c.decodeIfPresent(Bool.self, forKey: .thumbnails) ?? false)
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

    /// Terms for a renewal: no bitrate (a bitrate is the caller's mistake to report).
    static func validateRenewal(_ parameters: DownloadParameters) throws(OfflineVideoError) -> RequestedLicense {
        if parameters.requestedBitrate != nil {
            throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters,
                                    "A license renewal cannot change the bitrate; delete the video and download it again")
        }
        return try validateNewLicense(parameters.license)
    }

    /// A purchase has no durations; a rental has a rental duration, and both durations are
    /// more than 0 seconds.
    private static func validateDurations(_ terms: RequestedLicense) throws(OfflineVideoError) {
        guard terms.kind == .rental else {
            if terms.rentalDuration != nil || terms.playDuration != nil {
                throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters,
                                        "A purchase takes no rental or play duration: ask for purchase or a rental, not both")
            }
            return
        }
        let playDuration = terms.playDuration
        guard let duration = terms.rentalDuration, duration > 0, duration.isFinite else {
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
