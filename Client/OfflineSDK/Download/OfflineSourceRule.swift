import WireModels

/// Which of a video's `sources` an offline download uses: one rule, for the download, the size
/// estimate, the URL refresh and `offlineSource(for:)`. Pure: the sources and the app's settings
/// in, a source or a refusal out.
///
/// Brightcove's iOS SDK "takes the first HLS source, preferring HTTPS" (its README, "Source
/// Selection"), and its offline manager's source is "the preferred source being secure and
/// appropriate for playback on iOS" (`urlAssetForVideo:error:`). So, in order:
/// 1. HLS sources only (DASH and progressive MP4 are never downloaded): HLS of MPEG-TS
///    (`ext_x_version` below 7, or none) and CMAF HLS (v7, fragmented MP4), except a source whose
///    `codecs` lists only video codecs the app says it cannot play (`unplayableCodecs`);
/// 2. a FairPlay source when the video has one (a protected video is downloaded protected);
/// 3. the format the app prefers (`preference`), if any source has it: by default none, so the
///    answer's order decides as in Brightcove's SDK (TS HLS comes first in a Dynamic Delivery answer);
/// 4. HTTPS before plain HTTP;
/// 5. the first in the answer's order.
/// An AES-128 (HLSe) choice is refused: HLSe is never downloaded.
struct OfflineSourceRule: Sendable, Equatable {
    var preference: HLSSourcePreference = .firstListed
    var unplayableCodecs: Set<MediaCodec> = []

    init(preference: HLSSourcePreference = .firstListed, unplayableCodecs: Set<MediaCodec> = []) {
        self.preference = preference
        self.unplayableCodecs = unplayableCodecs
    }

    /// The rule with the app's settings.
    init(_ configuration: OfflineVideoManagerConfiguration) {
        self.init(preference: configuration.sourcePreference, unplayableCodecs: configuration.unplayableCodecs)
    }

    /// The source `video`'s offline download uses, or why there is none (69301). `format`, when
    /// given, is the only format taken (a download refreshing its URLs stays in its format).
    func choose(_ sources: [VideoSource], videoID: String, format: HLSSourceFormat? = nil) throws(OfflineVideoError) -> VideoSource {
        let hls = sources.filter(\.isHLS)
        guard !hls.isEmpty else { throw OfflineVideoError(.unsupported, .noHLSSource, "Video \(videoID) has no HLS source") }
        let playable = hls.filter { playsCodecs(of: $0) && (format == nil || Self.format(of: $0) == format) }
        guard !playable.isEmpty else {
            let message = if let format, !hls.contains(where: { Self.format(of: $0) == format }) {
                "Video \(videoID) no longer has the \(format) HLS source it was downloaded from"
            } else {
                "Video \(videoID) has no HLS source this device can play: its sources use only "
                    + Set(hls.compactMap(\.codecs)).sorted().joined(separator: "; ")
                    + ", and the app cannot play " + unplayableCodecs.map(\.rawValue).sorted().joined(separator: ", ")
            }
            throw OfflineVideoError(.unsupported, .noHLSSource, message)
        }
        let fairPlay = playable.filter { $0.fairPlay != nil }
        var candidates = fairPlay.isEmpty ? playable : fairPlay
        if let preferred = preference.format {
            let inFormat = candidates.filter { Self.format(of: $0) == preferred }
            if !inFormat.isEmpty { candidates = inFormat }
        }
        let source = candidates.first(where: Self.isHTTPS) ?? candidates[0]
        if source.fairPlay == nil, URLToken.path(ofURL: source.src).split(separator: "/").contains("aes128") {
            throw OfflineVideoError(.unsupported, .hlseNotSupported,
                                    "Video \(videoID) is AES-128 (HLSe) content, which is not supported for download: only clear and FairPlay HLS can be downloaded")
        }
        return source
    }

    /// Whether a variant's `CODECS` (or a source's `codecs`) has nothing the app cannot play.
    func plays(codecs: String?) -> Bool {
        guard let codecs, !unplayableCodecs.isEmpty else { return true }
        return !MediaCodec.families(in: codecs).contains { unplayableCodecs.contains($0) }
    }

    /// A source lists its renditions' codecs together (`avc1,hvc1,mp4a`): it is playable while
    /// one of its video codecs is (its other variants are then passed over one by one).
    private func playsCodecs(of source: VideoSource) -> Bool {
        guard let codecs = source.codecs, !unplayableCodecs.isEmpty else { return true }
        let video = MediaCodec.families(in: codecs).filter(\.isVideo)
        return video.isEmpty || video.contains { !unplayableCodecs.contains($0) }
    }

    /// Whether `source` is HLS v7 of fragmented MP4 (Dynamic Delivery's v2 HLS source).
    static func format(of source: VideoSource) -> HLSSourceFormat {
        (source.extXVersion.flatMap { Int($0) }.map { $0 >= 7 } ?? false) ? .cmaf : .transportStream
    }

    private static func isHTTPS(_ source: VideoSource) -> Bool {
        source.src.prefix(8).lowercased() == "https://"
    }
}

/// The two HLS formats a video's sources come in.
public enum HLSSourceFormat: String, Sendable, Hashable, CustomStringConvertible {
    /// HLS of MPEG-TS segments (Dynamic Delivery's v1 sources, `ext_x_version` 4 or 5).
    case transportStream = "MPEG-TS"
    /// HLS v7 of CMAF (fragmented MP4) segments, Dynamic Delivery's v2 sources: what HEVC needs.
    case cmaf = "CMAF"

    public var description: String { rawValue }
}

/// Which HLS format an offline download takes when a video offers both
/// (`OfflineVideoManagerConfiguration.sourcePreference`).
public enum HLSSourcePreference: Sendable, Hashable {
    /// The first HLS source in the Playback API's answer, after the FairPlay and HTTPS
    /// preferences: Brightcove's iOS rule, and the default. Dynamic Delivery lists TS HLS first.
    case firstListed
    /// The source of this format when the video has one, else the other.
    case prefer(HLSSourceFormat)

    var format: HLSSourceFormat? {
        if case .prefer(let format) = self { format } else { nil }
    }
}

/// A codec family as HLS `CODECS` and a source's `codecs` name it, for the codecs an app says it
/// cannot play (`OfflineVideoManagerConfiguration.unplayableCodecs`).
public enum MediaCodec: String, Sendable, Hashable, CaseIterable {
    /// H.264 (`avc1`, `avc3`).
    case h264
    /// HEVC (`hvc1`, `hev1`).
    case hevc
    /// AAC (`mp4a`).
    case aac
    /// AC-3 (`ac-3`).
    case ac3
    /// E-AC-3 (`ec-3`).
    case eac3

    /// Whether the family is a video codec.
    public var isVideo: Bool { self == .h264 || self == .hevc }

    /// The family of one `CODECS` entry (`hvc1.2.4.L123.B0`), nil for one this SDK does not name.
    public init?(codecsEntry entry: some StringProtocol) {
        let kind = String(entry.split(separator: ".", maxSplits: 1).first ?? "").filter { $0 != " " }.lowercased()
        switch kind {
        case "avc1", "avc3": self = .h264
        case "hvc1", "hev1": self = .hevc
        case "mp4a": self = .aac
        case "ac-3": self = .ac3
        case "ec-3": self = .eac3
        default: return nil
        }
    }

    /// The families a `CODECS` value (comma-separated, the source's `_` form too) names.
    static func families(in codecs: String) -> Set<MediaCodec> {
        Set(codecs.split(whereSeparator: { $0 == "," || $0 == "_" }).compactMap { MediaCodec(codecsEntry: $0) })
    }
}
