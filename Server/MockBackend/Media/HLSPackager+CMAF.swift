import CMAF
import Foundation
import WireModels

/// The HLS v7 form of a video (Dynamic Delivery's v2 source): the same renditions as the TS
/// form, each a CMAF track (`EXT-X-MAP` to its init segment, `.m4s` media segments whose
/// times keep increasing across the asset's repetitions), WebVTT subtitles segmented as in
/// the TS form with their `X-TIMESTAMP-MAP` on the CMAF timeline.
extension HLSPackager {
    /// The v7 master playlist; `track` gives a video or audio rendition's CMAF track.
    func cmafMaster(_ video: CatalogVideo, key: ContentKey?, track: (RenditionRef) -> PackagedTrack?, expiresAt: Date,
                    links: Links) -> MasterPlaylist {
        var playlist = master(video, key: key, version: 7, videoRenditions: video.cmafVideoRenditions, rates: { ref in
            track(ref).map { ($0.peakRate, $0.averageRate) } ?? (0, 0)
        }, codecs: { track($0)?.format.codecString ?? "" }, uri: { links.signed(Links.cmafRenditionPath(video, $0), expiresAt: expiresAt) })
        if let thumbnails = ThumbnailTrack(video), thumbnails.hasImageStream {
            // Roku's image stream; players that do not know the tag skip it.
            playlist.otherTags.append("#EXT-X-IMAGE-STREAM-INF:BANDWIDTH=\(thumbnails.bandwidth),"
                + "RESOLUTION=\(thumbnails.thumbnails.width)x\(thumbnails.thumbnails.height),CODECS=\"jpeg\","
                + "URI=\"\(links.signed(Links.imagePlaylistPath(video), expiresAt: expiresAt))\"")
        }
        return playlist
    }

    /// A rendition's v7 media playlist. `track` is the rendition's CMAF track, or for
    /// subtitles the first video rendition's (whose segment boundaries the text follows).
    /// With `singleFile` (an account addressing CMAF by byte ranges; nil for subtitles, which stay
    /// WebVTT files), the init and media segments are byte ranges of the rendition's `track.mp4`.
    func cmafMedia(_ video: CatalogVideo, _ ref: RenditionRef, track: PackagedTrack, singleFile: SingleTrackFile? = nil,
                   key: ContentKey?, keyExpiresAt: Date, expiresAt: Date, links: Links) -> MediaPlaylist {
        let scheme = HLSPackager.cmafScheme(video)
        let repeated = track.repeated(video.repeatCount)
        var encryption: EncryptionKey?
        if ref.kind != .subtitles, video.protection == .fairplay, let key {
            // fMP4 SAMPLE-AES means cbcs; the IV is the init segment's (tenc), never an attribute (Apple 13.4).
            encryption = plainSampleAESKeys
                ? EncryptionKey(method: .sampleAES,
                                uri: links.signed(Links.sampleAESTestKeyPath(video, keyID: key.keyID), expiresAt: keyExpiresAt),
                                keyFormat: "identity")
                : EncryptionKey(method: .sampleAES, uri: "skd://\(key.keyID)",
                                keyFormat: EncryptionKey.fairPlayKeyFormat, keyFormatVersions: "1")
        }
        let singleFileURI = singleFile.map { _ in links.signed(Links.cmafSingleFilePath(video, ref, scheme: scheme), expiresAt: expiresAt) }
        let map = ref.kind == .subtitles ? nil : InitializationSection(
            uri: singleFileURI ?? links.signed(Links.cmafInitPath(video, ref, scheme: scheme), expiresAt: expiresAt),
            byteRange: singleFile.map { ByteRange(length: $0.initLength, offset: 0) })
        let timescale = Double(track.format.timescale)
        var segments: [Segment] = []
        segments.reserveCapacity(repeated.count)
        // EXTINFs in whole milliseconds of where each segment begins and ends on the track's
        // timeline, so their sum never drifts from it (a player summing them places segment 3,599 right).
        let first = repeated.timing(0).earliestPresentation
        let milliseconds = { (ticks: UInt64) in ((Double(ticks - first) / timescale) * 1000).rounded() }
        for index in 0 ..< repeated.count {
            let start = repeated.timing(index).earliestPresentation
            let range = singleFile.map { file in file.range(of: index) }.map { ByteRange(length: Int($0.length), offset: Int($0.offset)) }
            segments.append(Segment(
                duration: (milliseconds(start + repeated.span(index)) - milliseconds(start)) / 1000,
                uri: singleFileURI ?? links.signed(Links.cmafSegmentPath(video, ref, index, scheme: scheme), expiresAt: expiresAt),
                byteRange: range, key: index == 0 ? encryption : nil, map: index == 0 ? map : nil))
        }
        let target = segments.map { Int($0.duration.rounded()) }.max() ?? 1
        return MediaPlaylist(version: 7, targetDuration: max(1, target), mediaSequence: 0, playlistType: .vod,
                             independentSegments: true, segments: segments, endList: true)
    }

    /// The CMAF encryption HLS serves a video with: `clear`, or `cbcs` (FairPlay-style SAMPLE-AES).
    static func cmafScheme(_ video: CatalogVideo) -> String { video.protection == .fairplay ? "cbcs" : "clear" }

    /// The WebVTT segment `number` of a subtitle rendition for CMAF HLS: the fixture's text with
    /// its `X-TIMESTAMP-MAP` moved onto the CMAF timeline (`origin` is the asset's, 90 kHz) and on
    /// by whole passes, so cues meet the frames they met in the TS form.
    static func cmafSubtitleSegment(_ fixture: [UInt8], origin: Int64, pass: Int, passLength90k: UInt64) -> [UInt8] {
        var text = String(decoding: fixture, as: UTF8.self)
        guard let range = text.range(of: "X-TIMESTAMP-MAP=MPEGTS:"),
              let end = text[range.upperBound...].firstIndex(where: { !$0.isNumber }),
              let mpegts = Int64(text[range.upperBound ..< end]) else { return fixture }
        let moved = mpegts - origin + Int64(pass) * Int64(passLength90k)
        text.replaceSubrange(range.upperBound ..< end, with: String(max(0, moved)))
        return Array(text.utf8)
    }
}
