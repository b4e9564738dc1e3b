import Foundation
import WireModels

/// Writes the master and media playlists of a catalog video: absolute, signed URLs,
/// alternate audio and subtitle groups, real bandwidths, keys for protected content,
/// and the asset repeated `repeatCount` times with discontinuities between passes.
struct HLSPackager: Sendable {
    static let audioGroup = "audio"
    static let subtitleGroup = "subs"

    /// Test-only: FairPlay media playlists point at the plain key URL (see
    /// `BackendConfiguration.plainSampleAESKeysForTesting`).
    var plainSampleAESKeys = false

    /// The master playlist of the TS form, its URLs from `links`. `key` is the video's content key (needed for FairPlay's session key).
    func master(_ video: CatalogVideo, key: ContentKey?, expiresAt: Date, links: Links) -> MasterPlaylist {
        master(video, key: key, version: 5, videoRenditions: video.videoRenditions, rates: { ref in
            let segments = HLSPackager.files(video, ref)
            return (HLSPackager.peakRate(segments), HLSPackager.averageRate(segments))
        }, codecs: { video.asset.video[$0.index].codecs }, uri: { links.signed(Links.renditionPath(video, $0), expiresAt: expiresAt) })
    }

    /// A master playlist of either form, a variant per video rendition of `videoRenditions`:
    /// `rates` gives a rendition's peak and average bit rates, `codecs` a video rendition's codec
    /// string, `uri` its media playlist's URL.
    func master(_ video: CatalogVideo, key: ContentKey?, version: Int, videoRenditions: [RenditionRef],
                rates: (RenditionRef) -> (peak: Int, average: Int), codecs: (RenditionRef) -> String,
                uri: (RenditionRef) -> String) -> MasterPlaylist {
        let asset = video.asset
        let audio = video.audioRenditions.map { asset.audio[$0.index] }
        let audioRates = video.audioRenditions.map(rates)
        let audioPeak = audioRates.map(\.peak).max() ?? 0
        let audioAverage = audioRates.map(\.average).max() ?? 0
        let audioCodecs = audio.first?.codecs

        var renditions: [Rendition] = []
        for (position, ref) in video.audioRenditions.enumerated() {
            let track = asset.audio[ref.index]
            renditions.append(Rendition(
                type: .audio, groupID: HLSPackager.audioGroup, language: track.language, name: track.name,
                isDefault: position == 0, autoselect: true, channels: track.channels, uri: uri(ref)))
        }
        for (position, ref) in video.subtitleRenditions.enumerated() {
            let track = asset.subtitles[ref.index]
            renditions.append(Rendition(
                type: .subtitles, groupID: HLSPackager.subtitleGroup, language: track.language, name: track.name,
                isDefault: position == 0, autoselect: true, uri: uri(ref)))
        }
        let variants = videoRenditions.map { ref in
            let track = ref.kind == .hevc ? asset.hevc[ref.index] : asset.video[ref.index]
            let (peak, average) = rates(ref)
            return VariantStream(
                bandwidth: peak + audioPeak,
                averageBandwidth: average + audioAverage,
                codecs: [codecs(ref), audioCodecs].compactMap { $0 }.joined(separator: ","),
                resolution: Resolution(width: track.width, height: track.height),
                frameRate: track.frameRate,
                audio: audio.isEmpty ? nil : HLSPackager.audioGroup,
                subtitles: video.subtitleRenditions.isEmpty ? nil : HLSPackager.subtitleGroup,
                closedCaptions: AttributeList.none, uri: uri(ref))
        }
        var sessionKeys: [EncryptionKey] = []
        if video.protection == .fairplay, let key {
            sessionKeys.append(EncryptionKey(method: .sampleAES, uri: "skd://\(key.keyID)",
                                             keyFormat: EncryptionKey.fairPlayKeyFormat, keyFormatVersions: "1"))
        }
        return MasterPlaylist(version: version, independentSegments: true, sessionKeys: sessionKeys,
                              renditions: renditions, variants: variants)
    }

    /// A rendition's media playlist, every segment URL signed until `expiresAt`.
    func media(_ video: CatalogVideo, _ ref: RenditionRef, key: ContentKey?, keyExpiresAt: Date, expiresAt: Date,
               links: Links) -> MediaPlaylist {
        let files = HLSPackager.files(video, ref)
        var encryption: EncryptionKey?
        if ref.kind != .subtitles, let key {
            switch video.protection {
            case .clear: break
            case .aes128:
                encryption = EncryptionKey(method: .aes128,
                                           uri: links.signed(Links.aes128KeyPath(video, keyID: key.keyID), expiresAt: keyExpiresAt),
                                           iv: EncryptionKey.ivString(key.iv))
            case .fairplay where plainSampleAESKeys:
                encryption = EncryptionKey(method: .sampleAES,
                                           uri: links.signed(Links.sampleAESTestKeyPath(video, keyID: key.keyID), expiresAt: keyExpiresAt),
                                           iv: EncryptionKey.ivString(key.iv))
            case .fairplay:
                encryption = EncryptionKey(method: .sampleAES, uri: "skd://\(key.keyID)", iv: EncryptionKey.ivString(key.iv),
                                           keyFormat: EncryptionKey.fairPlayKeyFormat, keyFormatVersions: "1")
            }
        }
        // Audio and subtitle passes can be a few milliseconds shorter than the video pass
        // (AAC frames do not end on the video's boundary). Players place each pass by summing
        // EXTINFs, so over hundreds of passes the gap would add up to seconds of drift: the
        // last segment of each pass is stretched to end where the video pass ends.
        let passPadding = video.repeatCount > 1 && ref.kind != .video ? HLSPackager.passPadding(video, files) : 0
        var segments: [Segment] = []
        segments.reserveCapacity(files.count * video.repeatCount)
        for pass in 0..<video.repeatCount {
            for (index, file) in files.enumerated() {
                let sequence = pass * files.count + index
                segments.append(Segment(
                    duration: index == files.count - 1 ? (file.duration * 1000).rounded() / 1000 + passPadding : file.duration,
                    uri: links.signed(Links.segmentPath(video, ref, sequence), expiresAt: expiresAt),
                    discontinuity: pass > 0 && index == 0,
                    key: sequence == 0 ? encryption : nil))
            }
        }
        let target = files.map { Int($0.duration.rounded()) }.max() ?? 1
        return MediaPlaylist(version: 5, targetDuration: max(1, target), mediaSequence: 0, playlistType: .vod,
                             independentSegments: ref.kind == .video, segments: segments, endList: true)
    }

    /// The fixture files behind a rendition, one pass.
    static func files(_ video: CatalogVideo, _ ref: RenditionRef) -> [SegmentFile] {
        switch ref.kind {
        case .video: video.asset.video[ref.index].segments
        case .hevc: video.asset.hevc[ref.index].segments
        case .audio: video.asset.audio[ref.index].segments
        case .subtitles: video.asset.subtitles[ref.index].segments
        }
    }

    /// How much shorter than the video (its first rendition) one pass of `files` is; zero when longer.
    static func passPadding(_ video: CatalogVideo, _ files: [SegmentFile]) -> Double {
        guard let reference = video.asset.video.first?.segments else { return 0 }
        // In whole milliseconds, as the playlist writes each EXTINF.
        let milliseconds = { (segments: [SegmentFile]) in segments.reduce(0) { $0 + Int(($1.duration * 1000).rounded()) } }
        return Double(max(0, milliseconds(reference) - milliseconds(files))) / 1000
    }

    /// The highest bit rate of any one segment.
    static func peakRate(_ segments: [SegmentFile]) -> Int {
        segments.map { Int((Double($0.size * 8) / max($0.duration, 0.001)).rounded(.up)) }.max() ?? 0
    }

    /// Total bits over total seconds.
    static func averageRate(_ segments: [SegmentFile]) -> Int {
        let bits = segments.reduce(0) { $0 + Double($1.size * 8) }
        let seconds = segments.reduce(0) { $0 + $1.duration }
        return seconds > 0 ? Int((bits / seconds).rounded(.up)) : 0
    }
}
