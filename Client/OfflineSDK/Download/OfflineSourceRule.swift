import WireModels

/// Which of a video's `sources` an offline download uses: one rule, for the download, the size
/// estimate, the license's key system and `offlineSource(for:)`. Pure: the sources in, a source
/// or a refusal out.
///
/// Brightcove's iOS SDK "takes the first HLS source, preferring HTTPS" (its README, "Source
/// Selection"), and its offline manager's source is "the preferred source being secure and
/// appropriate for playback on iOS" (`urlAssetForVideo:error:`). So, in order:
/// 1. HLS sources only (DASH and progressive MP4 are never downloaded), and of those the ones
///    this SDK stores: HLS of MPEG-TS (`ext_x_version` below 7, or none). CMAF HLS v7 sources
///    are passed over: their download is not built yet (issue 42);
/// 2. a FairPlay source when the video has one (a protected video is downloaded protected);
/// 3. HTTPS before plain HTTP;
/// 4. the first in the answer's order (TS HLS comes first in a Dynamic Delivery answer).
/// An AES-128 (HLSe) choice is refused: HLSe is never downloaded.
enum OfflineSourceRule {
    /// The source `video`'s offline download uses, or why there is none (69301).
    static func choose(_ sources: [VideoSource], videoID: String) throws(OfflineVideoError) -> VideoSource {
        let hls = sources.filter(\.isHLS)
        let stored = hls.filter { !isCMAF($0) }
        guard !stored.isEmpty else {
            let message = hls.isEmpty
                ? "Video \(videoID) has no HLS source"
                : "Video \(videoID) has only CMAF HLS (ext_x_version 7) sources, which this SDK does not download: only HLS of MPEG-TS segments"
            throw OfflineVideoError(.unsupported, .noHLSSource, message)
        }
        let fairPlay = stored.filter { $0.fairPlay != nil }
        let candidates = fairPlay.isEmpty ? stored : fairPlay
        let source = candidates.first(where: isHTTPS) ?? candidates[0]
        if source.fairPlay == nil, URLToken.path(ofURL: source.src).split(separator: "/").contains("aes128") {
            throw OfflineVideoError(.unsupported, .hlseNotSupported,
                                    "Video \(videoID) is AES-128 (HLSe) content, which is not supported for download: only clear and FairPlay HLS can be downloaded")
        }
        return source
    }

    /// Whether `source` is HLS v7 of fragmented MP4 (Dynamic Delivery's v2 HLS source).
    static func isCMAF(_ source: VideoSource) -> Bool {
        source.extXVersion.flatMap { Int($0) }.map { $0 >= 7 } ?? false
    }

    private static func isHTTPS(_ source: VideoSource) -> Bool {
        source.src.prefix(8).lowercased() == "https://"
    }
}
