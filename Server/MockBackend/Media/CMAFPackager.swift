import CMAF
import Crypto
import Foundation
import Locking
import WireModels

/// One rendition of an asset as a CMAF track: its init segment, the fragments of one pass
/// over the asset (remuxed from the TS segments, the same frames and samples), and how long a
/// pass lasts in the track's timescale.
struct PackagedTrack: Sendable {
    var format: TrackFormat
    var initSegment: [UInt8]
    var pass: [Fragment]
    var passLength: UInt64

    /// The track played `count` times in a row (a catalog video's `repeatCount`).
    func repeated(_ count: Int) -> RepeatedTrack { RepeatedTrack(pass: pass, passLength: passLength, passCount: count) }

    /// The highest bit rate of any one fragment, and total bits over total seconds (bits per second).
    var peakRate: Int {
        pass.map { Int((Double($0.data.count * 8) * Double(format.timescale) / Double(max($0.duration, 1))).rounded(.up)) }.max() ?? 0
    }
    var averageRate: Int {
        let bits = pass.reduce(0) { $0 + Double($1.data.count * 8) }
        let ticks = pass.reduce(0) { $0 + Double($1.duration) }
        return ticks > 0 ? Int((bits * Double(format.timescale) / ticks).rounded(.up)) : 0
    }
}

/// Packages each asset's renditions as CMAF on first use, as Dynamic Delivery packages just in
/// time, and keeps them: the fixtures and ingested assets never change while served. All
/// renditions of an asset share one timeline (`origin`: the earliest DTS of any of them), so
/// audio and video stay in sync as they were in the TS segments.
final class CMAFPackager: Sendable {
    private let tracks = Locked<[String: PackagedTrack]>([:])
    private let origins = Locked<[String: Int64]>([:])
    /// Digests of the bodies served (init segments, WebVTT, image playlists), by what made them.
    private let digests = Locked<[String: ReprDigest]>([:])
    /// Media segments made (serialized, and encrypted for cbcs and cenc), kept with their digest,
    /// as the TS form keeps its encrypted segments, but in memory: a segment is made on its first
    /// request and served as is after. At most `segmentBudget` bytes; the oldest go first.
    private let segments = Locked<SegmentCache>(SegmentCache())
    private let segmentBudget: Int
    /// The byte-range forms laid out, by rendition and encryption.
    private let singleFiles = Locked<[String: SingleTrackFile]>([:])

    init(segmentBudget: Int = 256 << 20) { self.segmentBudget = segmentBudget }

    /// The bytes of the media segments kept now.
    var cachedSegmentBytes: Int { segments.withLock { $0.size } }

    private struct SegmentCache {
        var bodies: [String: (bytes: [UInt8], digest: ReprDigest)] = [:]
        var order: [String] = []
        var size = 0
    }

    /// The CMAF track of `ref` (a video or audio rendition) of `video`'s asset.
    func track(_ video: CatalogVideo, _ ref: RenditionRef) throws(CMAFError) -> PackagedTrack {
        let id = "\(video.asset.name)|\(ref.kind.rawValue)|\(ref.index)"
        if let track = tracks.withLock({ $0[id] }) { return track }
        let origin = try origin(of: video.asset)
        let demuxed = try demux(video.asset, ref)
        let fragments = demuxed.fragments(origin: origin)
        // A pass lasts as long as the first video rendition's frames, end to end, in every track.
        let passSeconds: Double
        if ref.kind == .video, ref.index == 0 {
            passSeconds = Double(fragments.reduce(0) { $0 + $1.duration }) / Double(demuxed.format.timescale)
        } else {
            let reference = try track(video, RenditionRef(uuid: "", kind: .video, index: 0))
            passSeconds = Double(reference.passLength) / Double(reference.format.timescale)
        }
        let track = PackagedTrack(format: demuxed.format, initSegment: InitSegment.bytes(demuxed.format), pass: fragments,
                                  passLength: UInt64((passSeconds * Double(demuxed.format.timescale)).rounded()))
        tracks.withLock { $0[id] = track }
        return track
    }

    /// The init segment of `ref` encrypted as `encryption` says, and its digest.
    func initSegment(_ video: CatalogVideo, _ ref: RenditionRef, _ encryption: CMAFEncryption) throws(CMAFError) -> (bytes: [UInt8], digest: ReprDigest) {
        let track = try track(video, ref)
        let bytes = try encryption.encryptor(track.format, ref).map { InitSegment.bytes(track.format, protection: $0.protection(psshBoxes: encryption.psshBoxes)) }
            ?? track.initSegment
        return (bytes, digest(of: bytes, id: "\(video.asset.name)|\(ref.kind.rawValue)|\(ref.index)|init|\(encryption.cacheName)"))
    }

    /// The media segment `index` (over all passes) of `ref`, encrypted as `encryption` says,
    /// and its digest: made on first request, then kept (within the budget).
    func segment(_ video: CatalogVideo, _ ref: RenditionRef, index: Int,
                 _ encryption: CMAFEncryption) throws(CMAFError) -> (bytes: [UInt8], digest: ReprDigest) {
        let id = CMAFPackager.segmentID(video, ref, index, encryption)
        if let made = segments.withLock({ $0.bodies[id] }) { return made }
        let made = try makeSegment(video, ref, index: index, encryption)
        let budget = segmentBudget
        segments.withLock { cache in
            guard cache.bodies[id] == nil else { return }
            cache.bodies[id] = made
            cache.order.append(id)
            cache.size += made.bytes.count
            while cache.size > budget, !cache.order.isEmpty {
                let oldest = cache.order.removeFirst()
                cache.size -= cache.bodies.removeValue(forKey: oldest)?.bytes.count ?? 0
            }
        }
        return made
    }

    /// The byte-range form of `ref` encrypted as `encryption` says (`track.mp4`), laid out on
    /// first use from the sizes of one pass's segments.
    func singleFile(_ video: CatalogVideo, _ ref: RenditionRef, _ encryption: CMAFEncryption) throws(CMAFError) -> SingleTrackFile {
        let id = "\(video.asset.name)|\(video.repeatCount)|\(ref.kind.rawValue)|\(ref.index)|\(encryption.cacheName)"
        if let file = singleFiles.withLock({ $0[id] }) { return file }
        let track = try track(video, ref)
        let repeated = track.repeated(video.repeatCount)
        let perPass = track.pass.count, passes = repeated.passCount
        var sizes: [Int] = []
        for position in 0 ..< perPass {
            sizes.append(try segment(video, ref, index: (passes - 1) * perPass + position, encryption).bytes.count)
        }
        let shortened = passes > 1 ? try segment(video, ref, index: perPass - 1, encryption).bytes.count : sizes[perPass - 1]
        let file = SingleTrackFile(initSegment: try initSegment(video, ref, encryption).bytes, timescale: track.format.timescale,
                                   earliestPresentationTime: repeated.timing(0).earliestPresentation, passSizes: sizes,
                                   shortenedLast: shortened, passCount: passes, span: repeated.span)
        singleFiles.withLock { $0[id] = file }
        return file
    }

    /// The bytes `lower ... upper` of the byte-range form of `ref`.
    func singleFileBytes(_ video: CatalogVideo, _ ref: RenditionRef, _ encryption: CMAFEncryption,
                         _ lower: UInt64, _ upper: UInt64) throws(CMAFError) -> [UInt8] {
        try singleFile(video, ref, encryption).bytes(lower, upper) { (index: Int) throws(CMAFError) -> [UInt8] in
            try segment(video, ref, index: index, encryption).bytes
        }
    }

    /// The digest of the whole byte-range form of `ref`: every segment made once more (not kept:
    /// a long video's would push every other segment out), hashed in order, then kept.
    func singleFileDigest(_ video: CatalogVideo, _ ref: RenditionRef, _ encryption: CMAFEncryption) throws(CMAFError) -> ReprDigest {
        let id = "\(video.asset.name)|\(video.repeatCount)|\(ref.kind.rawValue)|\(ref.index)|track|\(encryption.cacheName)"
        if let digest = digests.withLock({ $0[id] }) { return digest }
        let file = try singleFile(video, ref, encryption)
        var hasher = SHA256()
        hasher.update(data: file.header)
        for index in 0 ..< file.count {
            let cached = segments.withLock { cache in cache.bodies[CMAFPackager.segmentID(video, ref, index, encryption)]?.bytes }
            if let cached { hasher.update(data: cached) } else { hasher.update(data: try makeSegmentBytes(video, ref, index: index, encryption)) }
        }
        let digest = ReprDigest(hasher)
        digests.withLock { $0[id] = digest }
        return digest
    }

    private static func segmentID(_ video: CatalogVideo, _ ref: RenditionRef, _ index: Int, _ encryption: CMAFEncryption) -> String {
        "\(video.asset.name)|\(video.repeatCount)|\(ref.kind.rawValue)|\(ref.index)|\(index)|\(encryption.cacheName)"
    }

    private func makeSegment(_ video: CatalogVideo, _ ref: RenditionRef, index: Int,
                             _ encryption: CMAFEncryption) throws(CMAFError) -> (bytes: [UInt8], digest: ReprDigest) {
        let bytes = try makeSegmentBytes(video, ref, index: index, encryption)
        return (bytes, ReprDigest(of: bytes))
    }

    private func makeSegmentBytes(_ video: CatalogVideo, _ ref: RenditionRef, index: Int,
                                  _ encryption: CMAFEncryption) throws(CMAFError) -> [UInt8] {
        let track = try track(video, ref)
        let repeated = track.repeated(video.repeatCount)
        var fragment = repeated.fragment(index)
        var information: FragmentEncryption?
        if let encryptor = try encryption.encryptor(track.format, ref) {
            // Sample numbers over the whole track (a pass's left-out sample keeps its number), for unique cenc IVs.
            let perPass = track.pass.reduce(0) { $0 + $1.samples.count }
            let before = track.pass.prefix(index % track.pass.count).reduce(0) { $0 + $1.samples.count }
            (fragment, information) = try encryptor.encrypt(fragment, firstSample: UInt64(index / track.pass.count * perPass + before))
        }
        return MediaSegment.bytes(fragment, sequenceNumber: UInt32(index + 1), encryption: information)
    }

    /// The digest of `bytes`, kept under `id` (a body made the same way every time).
    func digest(of bytes: [UInt8], id: String) -> ReprDigest {
        if let digest = digests.withLock({ $0[id] }) { return digest }
        let digest = ReprDigest(of: bytes)
        digests.withLock { $0[id] = digest }
        return digest
    }

    /// The time origin of an asset already packaged (90 kHz), nil before any of its tracks is.
    func origin(ofPackaged asset: MediaAsset) -> Int64? { origins.withLock { $0[asset.name] } }

    /// The asset's shared time origin: the earliest DTS of the first segment of any rendition.
    private func origin(of asset: MediaAsset) throws(CMAFError) -> Int64 {
        if let origin = origins.withLock({ $0[asset.name] }) { return origin }
        var earliest = Int64.max
        let firsts = asset.video.compactMap(\.segments.first) + asset.audio.compactMap(\.segments.first)
        for file in firsts {
            let stream = try TransportStreamDemuxer.stream(of: try CMAFPackager.read(file.path))
            earliest = min(earliest, stream.units.map(\.dts).min() ?? earliest)
        }
        guard earliest != .max else { throw CMAFError(.malformedTransportStream, "asset \(asset.name) has no video or audio") }
        origins.withLock { $0[asset.name] = earliest }
        return earliest
    }

    private func demux(_ asset: MediaAsset, _ ref: RenditionRef) throws(CMAFError) -> DemuxedTrack {
        switch ref.kind {
        case .video, .hevc:
            let rendition = ref.kind == .video ? asset.video[ref.index] : asset.hevc[ref.index]
            let segments = try rendition.segments.map { file throws(CMAFError) in try CMAFPackager.read(file.path) }
            return try TrackRemuxer.demux(segments: segments)
        case .audio:
            let rendition = asset.audio[ref.index]
            let segments = try rendition.segments.map { file throws(CMAFError) in try CMAFPackager.read(file.path) }
            var track = try TrackRemuxer.demux(segments: segments)
            track.format.language = CMAFPackager.isoLanguage(rendition.language)
            return track
        case .subtitles:
            throw CMAFError(.unsupportedStream, "subtitles are WebVTT files, not CMAF tracks")
        }
    }

    private static func read(_ path: String) throws(CMAFError) -> [UInt8] {
        do {
            return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw CMAFError(.malformedTransportStream, "cannot read \(path): \(error.localizedDescription)")
        }
    }

    /// The three-letter ISO 639-2/T code a media header carries for a two-letter one, `und` for one it does not know.
    static func isoLanguage(_ code: String) -> String {
        let known = ["en": "eng", "fr": "fra", "es": "spa", "de": "deu", "it": "ita", "pt": "por", "nl": "nld", "ja": "jpn",
                     "zh": "zho", "ko": "kor", "ru": "rus", "ar": "ara", "sv": "swe", "da": "dan", "fi": "fin", "no": "nor", "pl": "pol"]
        let lower = code.lowercased()
        if lower.count == 3, lower.allSatisfy({ $0.isASCII && $0.isLetter }) { return lower }
        return known[String(lower.prefix(2))] ?? "und"
    }
}
