import Foundation
import WireModels

/// One playlist a download takes: the video variant, an audio rendition or a subtitle rendition.
struct TrackChoice: Sendable, Equatable, Codable {
    enum Kind: String, Sendable, Codable { case video, audio, subtitles }
    var kind: Kind
    /// Playlist `LANGUAGE`, for audio and subtitles.
    var language: String?
    /// Playlist `NAME` (the resolution for video).
    var name: String
    /// The remote media playlist URL.
    var playlistURL: String
    /// `BANDWIDTH` of the variant (video only).
    var bandwidth: Int?
}

/// The bitrate and language rules, pure: which variant and which alternate renditions a
/// download takes from a master playlist.
enum RenditionChooser {
    /// The variant with the largest `BANDWIDTH` at or below `requestedBitrate` among those with
    /// video; with no bitrate, or when every variant is above it, the lowest with video.
    static func variant(in master: MasterPlaylist, requestedBitrate: Int?) -> VariantStream? {
        let withVideo = master.variants.filter(\.hasVideo).sorted { $0.bandwidth < $1.bandwidth }
        guard let lowest = withVideo.first else { return master.variants.min { $0.bandwidth < $1.bandwidth } }
        guard let requestedBitrate else { return lowest }
        return withVideo.last { $0.bandwidth <= requestedBitrate } ?? lowest
    }

    /// The variant with the largest `BANDWIDTH` among those with video (among all when none has video).
    static func largest(in master: MasterPlaylist) -> VariantStream? {
        let withVideo = master.variants.filter(\.hasVideo)
        return (withVideo.isEmpty ? master.variants : withVideo).max { $0.bandwidth < $1.bandwidth }
    }

    /// The variant the first qualifier that admits any variant with video (any variant when none
    /// has video) picks: among those it admits, the one with the highest `BANDWIDTH`. Nil when
    /// no qualifier admits any.
    static func variant(in master: MasterPlaylist, qualifiers: [VariantQualifier]) -> VariantStream? {
        let withVideo = master.variants.filter(\.hasVideo)
        let candidates = withVideo.isEmpty ? master.variants : withVideo
        for qualifier in qualifiers {
            if let best = candidates.filter({ qualifier.admits(OfflineVariant($0)) }).max(by: { $0.bandwidth < $1.bandwidth }) {
                return best
            }
        }
        return nil
    }

    /// Whether a playlist language matches a wanted one: case-insensitive, and "en" matches "en-US".
    static func language(_ candidate: String?, matches wanted: String) -> Bool {
        guard let candidate = candidate?.lowercased() else { return false }
        let wanted = wanted.lowercased()
        return candidate == wanted || candidate.hasPrefix(wanted + "-") || wanted.hasPrefix(candidate + "-")
    }

    /// The tracks to download: the variant, then audio, then subtitles.
    ///
    /// Audio: the renditions of the variant's `AUDIO` group in the wanted languages, or the
    /// group's `DEFAULT=YES` rendition (else its first) when none is wanted. Subtitles: the
    /// renditions of the variant's `SUBTITLES` group in the wanted languages. A wanted
    /// language the playlist does not have is an error, never silently dropped.
    static func tracks(master: MasterPlaylist, variant: VariantStream, audioLanguages: [String],
                       subtitleLanguages: [String]) throws(OfflineVideoError) -> [TrackChoice] {
        let videoName = variant.resolution.map { "\($0.width)x\($0.height)" } ?? "\(variant.bandwidth) bps"
        var tracks = [TrackChoice(kind: .video, language: nil, name: videoName, playlistURL: variant.uri, bandwidth: variant.bandwidth)]

        if let group = variant.audio {
            let audio = master.renditions(inGroup: group, type: .audio).filter { $0.uri != nil }
            let chosen = audioLanguages.isEmpty
                ? [audio.first(where: \.isDefault) ?? audio.first].compactMap { $0 }
                : try pick(audioLanguages, from: audio, what: "audio")
            tracks += chosen.map { TrackChoice(kind: .audio, language: $0.language, name: $0.name, playlistURL: $0.uri ?? "") }
        }
        if !subtitleLanguages.isEmpty {
            let subtitles = variant.subtitles.map { master.renditions(inGroup: $0, type: .subtitles) }?.filter { $0.uri != nil } ?? []
            let chosen = try pick(subtitleLanguages, from: subtitles, what: "subtitles in its playlist")
            tracks += chosen.map { TrackChoice(kind: .subtitles, language: $0.language, name: $0.name, playlistURL: $0.uri ?? "") }
        }
        return tracks
    }

    /// The renditions in the wanted languages, in the order wanted, each once.
    private static func pick(_ languages: [String], from renditions: [Rendition], what: String) throws(OfflineVideoError) -> [Rendition] {
        var chosen: [Rendition] = []
        for wanted in languages {
            guard let match = renditions.first(where: { language($0.language, matches: wanted) }) else {
                throw OfflineVideoError(.invalidParameter, .noMatchingRendition,
                                        "The video has no \(wanted) \(what); it has \(renditions.compactMap(\.language).joined(separator: ", "))")
            }
            if !chosen.contains(match) { chosen.append(match) }
        }
        return chosen
    }
}
