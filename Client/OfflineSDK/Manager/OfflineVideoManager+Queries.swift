import Foundation
public import WireModels

/// Questions about an online video's HLS source, answered from its playlists.
extension OfflineVideoManager {
    /// The source offline downloads of `video` use (the FairPlay HLS source if any, else the
    /// first HLS source); HLSe and videos without HLS are refused.
    ///
    /// - Parameter video: The online video, found with ``PlaybackService``.
    /// - Returns: The source a download of `video` fetches.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/unsupported`` for HLSe content
    ///   (``OfflineVideoError/Reason/hlseNotSupported``) or a video without HLS
    ///   (``OfflineVideoError/Reason/noHLSSource``).
    public nonisolated func offlineSource(for video: PlaybackVideo) throws(OfflineVideoError) -> VideoSource {
        try planner.offlineSource(of: video)
    }

    /// The BANDWIDTH of every variant, ascending, without duplicates.
    ///
    /// - Parameter video: The online video, found with ``PlaybackService``.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/unsupported`` for HLSe content
    ///   (``OfflineVideoError/Reason/hlseNotSupported``) or a video without HLS
    ///   (``OfflineVideoError/Reason/noHLSSource``); code ``OfflineVideoError/Code/downloadFailure`` when the
    ///   master playlist cannot be fetched or read.
    public func variantBitrates(for video: PlaybackVideo) async throws(OfflineVideoError) -> [Int] {
        Array(Set(try await planner.master(of: video).playlist.variants.map(\.bandwidth))).sorted()
    }

    /// Every variant of the video's master playlist, in playlist order: what ``VariantQualifier``s
    /// pick from (``VariantQualifier/variant(_:)`` takes one of these).
    ///
    /// - Parameter video: The online video, found with ``PlaybackService``.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/unsupported`` for HLSe content
    ///   (``OfflineVideoError/Reason/hlseNotSupported``) or a video without HLS
    ///   (``OfflineVideoError/Reason/noHLSSource``); code ``OfflineVideoError/Code/downloadFailure`` when the
    ///   master playlist cannot be fetched or read.
    public func variants(for video: PlaybackVideo) async throws(OfflineVideoError) -> [OfflineVariant] {
        try await planner.master(of: video).playlist.variants.map(OfflineVariant.init)
    }

    /// Every EXT-X-STREAM-INF's attributes, one dictionary per variant, in playlist order.
    ///
    /// - Parameter video: The online video, found with ``PlaybackService``.
    /// - Returns: One dictionary per variant: attribute name to value, and `URI`.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/unsupported`` for HLSe content
    ///   (``OfflineVideoError/Reason/hlseNotSupported``) or a video without HLS
    ///   (``OfflineVideoError/Reason/noHLSSource``); code ``OfflineVideoError/Code/downloadFailure`` when the
    ///   master playlist cannot be fetched or read.
    public func variantAttributesDictionaries(for video: PlaybackVideo) async throws(OfflineVideoError) -> [[String: String]] {
        try await planner.master(of: video).playlist.variants.map { OfflineVideoManager.dictionary($0.attributes, uri: $0.uri) }
    }

    /// Every EXT-X-MEDIA's attributes (audio, subtitles, captions), one dictionary per rendition.
    ///
    /// - Parameter video: The online video, found with ``PlaybackService``.
    /// - Returns: One dictionary per rendition: attribute name to value.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/unsupported`` for HLSe content
    ///   (``OfflineVideoError/Reason/hlseNotSupported``) or a video without HLS
    ///   (``OfflineVideoError/Reason/noHLSSource``); code ``OfflineVideoError/Code/downloadFailure`` when the
    ///   master playlist cannot be fetched or read.
    public func alternativeRenditionAttributesDictionaries(for video: PlaybackVideo) async throws(OfflineVideoError) -> [[String: String]] {
        try await planner.master(of: video).playlist.renditions.map { OfflineVideoManager.dictionary($0.attributes, uri: nil) }
    }

    /// The size of a download in megabytes (the reference's unit; 1 MB = 1,000,000 bytes,
    /// ``bytesPerMegabyte``): the rendition at or below `requestedBitrate`,
    /// or the largest when none is given, with the selected audio and subtitles (nil: the
    /// configured preferred languages). Sizes are BANDWIDTH x duration per segment (audio at
    /// 128 kbit/s), since the playlists do not carry segment sizes.
    ///
    /// - Parameters:
    ///   - video: The online video, found with ``PlaybackService``.
    ///   - requestedBitrate: The largest variant bitrate to take, in bits per second; nil (the default)
    ///     measures the largest variant.
    ///   - mediaSelections: The audio and subtitle languages; nil (the default) takes the configured preferred
    ///     languages.
    /// - Returns: The estimated size in megabytes (``bytesPerMegabyte``).
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` for a bitrate that is
    ///   not positive or a language the video does not have; code ``OfflineVideoError/Code/unsupported`` for
    ///   HLSe content (``OfflineVideoError/Reason/hlseNotSupported``) or a video without HLS
    ///   (``OfflineVideoError/Reason/noHLSSource``); code ``OfflineVideoError/Code/downloadFailure`` when a
    ///   playlist cannot be fetched or read.
    public func estimateDownloadSize(_ video: PlaybackVideo, requestedBitrate: Int? = nil,
                                     mediaSelections: MediaSelections? = nil) async throws(OfflineVideoError) -> Double {
        try await estimate(video, DownloadSpec(mediaSelections: mediaSelections, parameters: DownloadParameters(requestedBitrate: requestedBitrate),
                                               withoutBitrate: .largest))
    }

    /// The size in megabytes (1,000,000 bytes) of exactly what
    /// ``requestVideoDownload(_:mediaSelections:parameters:)`` with these arguments would download: without a
    /// requested bitrate, the lowest variant with video (not the largest, as the estimate by bitrate measures).
    ///
    /// - Parameters:
    ///   - video: The online video, found with ``PlaybackService``.
    ///   - mediaSelections: The audio and subtitle languages; nil takes the configured preferred languages.
    ///   - parameters: The download's parameters (only the requested bitrate counts).
    /// - Returns: The estimated size in megabytes (``bytesPerMegabyte``).
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` for a bitrate that is
    ///   not positive or a language the video does not have; code ``OfflineVideoError/Code/unsupported`` for
    ///   HLSe content (``OfflineVideoError/Reason/hlseNotSupported``) or a video without HLS
    ///   (``OfflineVideoError/Reason/noHLSSource``); code ``OfflineVideoError/Code/downloadFailure`` when a
    ///   playlist cannot be fetched or read.
    public func estimateDownloadSize(_ video: PlaybackVideo, mediaSelections: MediaSelections?,
                                     parameters: DownloadParameters) async throws(OfflineVideoError) -> Double {
        try await estimate(video, DownloadSpec(mediaSelections: mediaSelections, parameters: parameters))
    }

    /// The size of a download requested with `downloadConfiguration` in megabytes (1,000,000 bytes): the
    /// variant its qualifiers pick (the largest when it has none), with the audio and subtitles of every
    /// content configuration. The same checks of the configuration as
    /// ``requestVideoDownload(_:downloadConfiguration:parameters:)`` (nothing is reserved or stored, so not the
    /// download's own: a video not offline-enabled or already downloaded, a reader, free space).
    ///
    /// - Parameters:
    ///   - video: The online video, found with ``PlaybackService``.
    ///   - downloadConfiguration: The download configuration, as
    ///     ``requestVideoDownload(_:downloadConfiguration:parameters:)`` would take it.
    /// - Returns: The estimated size in megabytes (``bytesPerMegabyte``).
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` for an empty title,
    ///   qualifiers on an auxiliary configuration, or qualifiers no variant meets
    ///   (``OfflineVideoError/Reason/noMatchingRendition``); code ``OfflineVideoError/Code/unsupported`` for
    ///   HLSe content (``OfflineVideoError/Reason/hlseNotSupported``) or a video without HLS
    ///   (``OfflineVideoError/Reason/noHLSSource``); code ``OfflineVideoError/Code/downloadFailure`` when a
    ///   playlist cannot be fetched or read.
    public func estimateDownloadSize(_ video: PlaybackVideo,
                                     downloadConfiguration: DownloadConfiguration) async throws(OfflineVideoError) -> Double {
        try await estimate(video, try DownloadSpec(downloadConfiguration, parameters: DownloadParameters(), withoutBitrate: .largest))
    }

    /// The one estimate under both: what `requestDownload` would plan, without storing anything.
    private func estimate(_ video: PlaybackVideo, _ spec: DownloadSpec) async throws(OfflineVideoError) -> Double {
        try ParameterRules.validateBitrate(spec.parameters.requestedBitrate)
        let selections = spec.selections ?? MediaSelections(audioLanguages: configuration.preferredAudioLanguages,
                                                            subtitleLanguages: configuration.preferredSubtitleLanguages)
        let plan = try await planner.plan(token: "estimate", video: video, variant: spec.variant, audioLanguages: selections.audioLanguages,
                                          subtitleLanguages: OfflineDownloads.manifestSubtitleLanguages(selections.subtitleLanguages, video: video))
        let thumbnails = ThumbnailTrackFile.estimatedBytes(of: video, asked: selections.thumbnails)
        return Double(plan.estimatedBytes + thumbnails + Int64(spec.configuration?.artwork?.count ?? 0)) / OfflineVideoManager.bytesPerMegabyte
    }

    /// The megabyte of `estimateDownloadSize`: 1,000,000 bytes.
    public static let bytesPerMegabyte: Double = 1_000_000

    static func dictionary(_ attributes: AttributeList, uri: String?) -> [String: String] {
        var dictionary: [String: String] = [:]
        for attribute in attributes.attributes { dictionary[attribute.name] = attribute.value }
        if let uri { dictionary["URI"] = uri }
        return dictionary
    }
}
