public import Foundation
public import WireModels

/// One variant (`EXT-X-STREAM-INF`) of a video's master playlist, as variant qualifiers see it
/// and `willDownloadVariants` reports it (the counterpart of `AVAssetVariant`).
public struct OfflineVariant: Sendable, Hashable, CustomStringConvertible {
    /// `BANDWIDTH`: peak bits per second.
    public var peakBitRate: Int
    /// `AVERAGE-BANDWIDTH`: average bits per second, when the playlist gives it.
    public var averageBitRate: Int?
    /// `RESOLUTION` of the video.
    public var resolution: Resolution?
    /// `FRAME-RATE`.
    public var frameRate: Double?
    /// `CODECS`, one entry per codec (`avc1.4d401e`, `mp4a.40.2`).
    public var codecs: [String]

    /// Creates a variant description.
    ///
    /// - Parameters:
    ///   - peakBitRate: `BANDWIDTH`: peak bits per second.
    ///   - averageBitRate: `AVERAGE-BANDWIDTH`: average bits per second; nil (the default) when the playlist
    ///     gives none.
    ///   - resolution: `RESOLUTION` of the video; nil by default.
    ///   - frameRate: `FRAME-RATE`; nil by default.
    ///   - codecs: `CODECS`, one entry per codec; empty by default.
    public init(peakBitRate: Int, averageBitRate: Int? = nil, resolution: Resolution? = nil, frameRate: Double? = nil,
                codecs: [String] = []) {
        self.peakBitRate = peakBitRate
        self.averageBitRate = averageBitRate
        self.resolution = resolution
        self.frameRate = frameRate
        self.codecs = codecs
    }

    init(_ variant: VariantStream) {
        self.init(peakBitRate: variant.bandwidth, averageBitRate: variant.averageBandwidth, resolution: variant.resolution,
                  frameRate: variant.frameRate,
                  codecs: (variant.codecs ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }

    public var description: String {
        var text = "\(peakBitRate) bps"
        if let resolution { text += " \(resolution.width)x\(resolution.height)" }
        if !codecs.isEmpty { text += " " + codecs.joined(separator: ",") }
        return text
    }
}

/// Which variant a download takes (the counterpart of `AVAssetVariantQualifier`): an exact
/// variant from `OfflineVideoManager.variants(for:)`, or a predicate over a variant's peak and
/// average bit rate, resolution, frame rate and codecs.
///
/// ```swift
/// let qualifier = VariantQualifier.predicate { $0.peakBitRate > 600_000 && $0.codecs.contains { $0.hasPrefix("avc1") } }
/// ```
public struct VariantQualifier: Sendable, CustomStringConvertible {
    enum Rule: Sendable {
        case variant(OfflineVariant)
        case predicate(@Sendable (OfflineVariant) -> Bool)
    }

    let rule: Rule

    /// Qualifies exactly `variant` (all its attributes equal).
    ///
    /// - Parameter variant: One of the variants ``OfflineVideoManager/variants(for:)`` returns.
    public static func variant(_ variant: OfflineVariant) -> VariantQualifier { VariantQualifier(rule: .variant(variant)) }

    /// Qualifies every variant `predicate` is true for.
    ///
    /// - Parameter predicate: Says whether a variant qualifies, from its bit rates, resolution, frame rate and
    ///   codecs.
    public static func predicate(_ predicate: @escaping @Sendable (OfflineVariant) -> Bool) -> VariantQualifier {
        VariantQualifier(rule: .predicate(predicate))
    }

    /// Whether `variant` qualifies.
    ///
    /// - Parameter variant: A variant of the video's master playlist.
    public func admits(_ variant: OfflineVariant) -> Bool {
        switch rule {
        case .variant(let wanted): wanted == variant
        case .predicate(let predicate): predicate(variant)
        }
    }

    public var description: String {
        switch rule {
        case .variant(let variant): "the variant \(variant)"
        case .predicate: "a predicate"
        }
    }
}

/// What one content configuration of a download takes (the counterpart of
/// `AVAssetDownloadContentConfiguration`).
public struct ContentConfiguration: Sendable {
    /// Tried in order: the first that admits a variant with video picks, among the variants it
    /// admits, the one with the highest peak bit rate. Empty: `DownloadParameters.requestedBitrate`
    /// decides, as for `requestVideoDownload(_:mediaSelections:parameters:)`. Auxiliary
    /// configurations take none.
    public var variantQualifiers: [VariantQualifier]
    /// The audio and subtitle languages to take; nil takes the configured preferred languages
    /// (primary configuration) or nothing more (auxiliary ones).
    public var mediaSelections: MediaSelections?

    /// Creates a content configuration.
    ///
    /// - Parameters:
    ///   - variantQualifiers: The qualifiers tried in order to pick the variant; empty (the default) leaves it
    ///     to ``DownloadParameters/requestedBitrate``. Auxiliary configurations take none.
    ///   - mediaSelections: The audio and subtitle languages to take; nil (the default) takes the configured
    ///     preferred languages (primary configuration) or nothing more (auxiliary ones).
    public init(variantQualifiers: [VariantQualifier] = [], mediaSelections: MediaSelections? = nil) {
        self.variantQualifiers = variantQualifiers
        self.mediaSelections = mediaSelections
    }
}

/// A download described the way `AVAssetDownloadConfiguration` describes one, for
/// `OfflineVideoManager.requestVideoDownload(_:downloadConfiguration:parameters:)`.
///
/// ```swift
/// var configuration = DownloadConfiguration(title: "Color Bars")
/// configuration.primaryContentConfiguration.variantQualifiers = [.predicate { $0.peakBitRate > 600_000 }]
/// configuration.auxiliaryContentConfigurations = [ContentConfiguration(mediaSelections: MediaSelections(audioLanguages: ["fr"], subtitleLanguages: ["de"]))]
/// let token = try await manager.requestVideoDownload(video, downloadConfiguration: configuration, parameters: nil)
/// ```
public struct DownloadConfiguration: Sendable {
    /// The display name of the download (it takes the place of `DownloadParameters.displayName`).
    public var title: String
    /// An image shown with the download (any format; kept in the package as `images/artwork`
    /// and named by the offline video object's `offline_artwork` properties).
    public var artworkData: Data?
    /// The variant and the main media selections.
    public var primaryContentConfiguration: ContentConfiguration
    /// Further audio or subtitle languages, taken with the primary configuration's.
    public var auxiliaryContentConfigurations: [ContentConfiguration]

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - title: The display name of the download; it may not be empty.
    ///   - artworkData: An image kept with the download, in any format; nil by default.
    ///   - primaryContentConfiguration: The variant and the main media selections; by default no qualifiers and
    ///     the configured preferred languages.
    ///   - auxiliaryContentConfigurations: Further audio or subtitle languages; none by default.
    public init(title: String, artworkData: Data? = nil, primaryContentConfiguration: ContentConfiguration = ContentConfiguration(),
                auxiliaryContentConfigurations: [ContentConfiguration] = []) {
        self.title = title
        self.artworkData = artworkData
        self.primaryContentConfiguration = primaryContentConfiguration
        self.auxiliaryContentConfigurations = auxiliaryContentConfigurations
    }
}

/// How a download's variant is chosen. "No bitrate" means two things in the source material,
/// each named here: a download without one takes the lowest variant with video (the guide), an
/// estimate without one measures the largest (the class reference).
enum VariantRule: Sendable {
    /// The largest `BANDWIDTH` at or below the bitrate among variants with video (the lowest
    /// with video when every one is above it).
    case atOrBelow(Int)
    /// What a download requested without a bitrate takes.
    case lowestWithVideo
    /// What an estimate asked without a bitrate measures.
    case largest
    /// The first variant qualifier that admits a variant (download configurations).
    case qualifiers([VariantQualifier])

    /// The rule for `bitrate`, or `withoutBitrate` when none is given.
    static func bitrate(_ bitrate: Int?, otherwise withoutBitrate: VariantRule) -> VariantRule {
        bitrate.map(VariantRule.atOrBelow) ?? withoutBitrate
    }
}

/// What the shared request path is asked for, whichever public method (of either façade) asked.
struct DownloadSpec: Sendable {
    var variant: VariantRule
    /// nil: the configured preferred languages.
    var selections: MediaSelections?
    var parameters: DownloadParameters
    /// Set for the download-configuration path.
    var configuration: ConfiguredDownload?
    /// Set for a `DownloadTask`: stored with the record; the download waits, suspended, for a resume.
    var task: TaskFields?

    /// The task-style façade's own parts (`DownloadManager.enqueue`).
    struct TaskFields: Sendable {
        var contentID: String
        var metadata: String?
        /// The content key id the request names (`skd`): the video's must be the same.
        var keyID: String?
        /// The request's terms as it names them (a rental end, a play window; nil: a purchase),
        /// checked against a key fetched earlier.
        var expiration: Date? = nil
        var playbackExpiryDuration: TimeInterval? = nil
    }

    /// The download-configuration path's own parts.
    struct ConfiguredDownload: Sendable {
        var artwork: Data?
    }

    /// A media-selections request as it is (`withoutBitrate`: the variant when it names no
    /// bitrate; an estimate's differs from a download's).
    init(mediaSelections: MediaSelections?, parameters: DownloadParameters, withoutBitrate: VariantRule = .lowestWithVideo) {
        self.variant = .bitrate(parameters.requestedBitrate, otherwise: withoutBitrate)
        self.selections = mediaSelections
        self.parameters = parameters
    }

    /// A download configuration translated: the title becomes the display name, the qualifiers
    /// the variant rule, the media selections of every content configuration one selection.
    init(_ configuration: DownloadConfiguration, parameters: DownloadParameters,
         withoutBitrate: VariantRule = .lowestWithVideo) throws(OfflineVideoError) {
        let title = configuration.title.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !title.isEmpty else {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "A download configuration needs a title")
        }
        let qualifiers = configuration.primaryContentConfiguration.variantQualifiers
        if !qualifiers.isEmpty, parameters.requestedBitrate != nil {
            throw OfflineVideoError(.invalidParameter, .invalidParameter,
                                    "Choose the variant with variant qualifiers or with a requested bitrate, not both")
        }
        if configuration.auxiliaryContentConfigurations.contains(where: { !$0.variantQualifiers.isEmpty }) {
            throw OfflineVideoError(.invalidParameter, .invalidParameter,
                                    "Auxiliary content configurations take audio and subtitle selections only, not variant qualifiers")
        }
        var selections = configuration.primaryContentConfiguration.mediaSelections
        let auxiliary = configuration.auxiliaryContentConfigurations.compactMap(\.mediaSelections)
        if !auxiliary.isEmpty {
            var merged = selections ?? MediaSelections()
            for extra in auxiliary {
                merged.audioLanguages += extra.audioLanguages.filter { !merged.audioLanguages.contains($0) }
                merged.subtitleLanguages += extra.subtitleLanguages.filter { !merged.subtitleLanguages.contains($0) }
                merged.thumbnails = merged.thumbnails || extra.thumbnails
            }
            selections = merged
        }
        var parameters = parameters
        parameters.displayName = title
        self.variant = qualifiers.isEmpty ? .bitrate(parameters.requestedBitrate, otherwise: withoutBitrate) : .qualifiers(qualifiers)
        self.selections = selections
        self.parameters = parameters
        self.configuration = ConfiguredDownload(artwork: configuration.artworkData.flatMap { $0.isEmpty ? nil : $0 })
    }
}

/// What a download was asked for, as the record's `selections` column keeps it: the languages
/// (`MediaSelections`' own fields, so rows written before the download-configuration path read
/// as they are) and whether the download-configuration path asked for it.
struct StoredRequest: Codable, Sendable {
    var audioLanguages: [String]
    var subtitleLanguages: [String]
    /// Present for the download-configuration path: whole-download progress and
    /// `willDownloadVariants` instead of progress per media selection.
    var configuration: Configured?
    /// Whether the thumbnail track was asked for (absent, as rows before it were written: no).
    var thumbnails: Bool?

    struct Configured: Codable, Sendable {
        /// The artwork's file in the package, if one was given.
        var artworkFile: String?
    }

    var selections: MediaSelections {
        MediaSelections(audioLanguages: audioLanguages, subtitleLanguages: subtitleLanguages, thumbnails: thumbnails ?? false)
    }

    init(_ selections: MediaSelections, configuration: Configured?) {
        audioLanguages = selections.audioLanguages
        subtitleLanguages = selections.subtitleLanguages
        thumbnails = selections.thumbnails ? true : nil
        self.configuration = configuration
    }

    /// The stored request of `record`; a record with none asked for the preferred languages' defaults.
    static func of(_ record: DownloadRecord) -> StoredRequest {
        record.selections.flatMap { try? JSONDecoder().decode(StoredRequest.self, from: $0) }
            ?? StoredRequest(MediaSelections(), configuration: nil)
    }
}
