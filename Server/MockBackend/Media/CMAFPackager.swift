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
/// time, and keeps them: the tracks in memory, the init and media segments (serialized, and
/// encrypted for cbcs and cenc) as files in the data directory's cache (`MediaFileCache`), made
/// on their first request and served like any file after. All renditions of an asset share one
/// timeline (`origin`: the earliest DTS of any of them), so audio and video stay in sync as they
/// were in the TS segments.
final class CMAFPackager: Sendable {
    /// The version of the bytes this packager makes, in every cache path: raise it when a change
    /// makes different bytes, so no data directory serves files an older packager made.
    static let formatVersion = 1

    private let tracks = Locked<[String: PackagedTrack]>([:])
    private let origins = Locked<[String: Int64]>([:])
    /// Each asset's fingerprint (its TS files' digests), in cache paths: media made again never meets old files.
    private let fingerprints = Locked<[String: String]>([:])
    /// Digests of bodies not kept as files (WebVTT, image playlists) and of the byte-range forms, by what made them.
    private let digests = Locked<[String: ReprDigest]>([:])
    private let cache: MediaFileCache
    /// The byte-range forms laid out, by rendition and encryption.
    private let singleFiles = Locked<[String: SingleTrackFile]>([:])

    init(cache: MediaFileCache) { self.cache = cache }

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

    /// The init segment of `ref` encrypted as `encryption` says, as a file in the cache.
    func initSegment(_ video: CatalogVideo, _ ref: RenditionRef, _ encryption: CMAFEncryption) throws -> CachedFile {
        let track = try track(video, ref)
        return try cache.file(folder: try folder(video, ref, encryption), name: "init.mp4") { () throws(CMAFError) -> [UInt8] in
            try encryption.encryptor(track.format, ref).map { InitSegment.bytes(track.format, protection: $0.protection(psshBoxes: encryption.psshBoxes)) }
                ?? track.initSegment
        }
    }

    /// The media segment `index` (over all passes) of `ref`, encrypted as `encryption` says, as
    /// a file in the cache: made on first request.
    func segment(_ video: CatalogVideo, _ ref: RenditionRef, index: Int, _ encryption: CMAFEncryption) throws -> CachedFile {
        try cache.file(folder: try folder(video, ref, encryption), name: "\(index).m4s") { () throws(CMAFError) -> [UInt8] in
            try makeSegmentBytes(video, ref, index: index, encryption)
        }
    }

    /// Where a rendition's files go in the cache: everything their bytes depend on (the
    /// packager's version, the asset's files, how often it repeats, the encryption and its key id).
    private func folder(_ video: CatalogVideo, _ ref: RenditionRef, _ encryption: CMAFEncryption) throws(CMAFError) -> String {
        "cmaf/v\(CMAFPackager.formatVersion)/\(try fingerprint(of: video.asset))/x\(video.repeatCount)/"
            + "\(encryption.cacheName.replacingOccurrences(of: ":", with: "-"))/\(ref.kind.rawValue)-\(ref.index)"
    }

    /// The asset's fingerprint: a digest of its video, HEVC and audio files' digests (each read once).
    private func fingerprint(of asset: MediaAsset) throws(CMAFError) -> String {
        if let fingerprint = fingerprints.withLock({ $0[asset.name] }) { return fingerprint }
        var hasher = SHA256()
        for file in (asset.video + asset.hevc).flatMap(\.segments) + asset.audio.flatMap(\.segments) {
            do {
                hasher.update(data: try asset.fileDigests.digest(ofFile: file.path).sha256)
            } catch {
                throw CMAFError(.malformedTransportStream, "cannot read \(file.path): \(error)")
            }
        }
        let fingerprint = String(ReprDigest(hasher).hex.prefix(24))
        fingerprints.withLock { $0[asset.name] = fingerprint }
        return fingerprint
    }

    /// The byte-range form of `ref` encrypted as `encryption` says (`track.mp4`), laid out on
    /// first use from the sizes of one pass's segments.
    func singleFile(_ video: CatalogVideo, _ ref: RenditionRef, _ encryption: CMAFEncryption) throws -> SingleTrackFile {
        let id = "\(video.asset.name)|\(video.repeatCount)|\(ref.kind.rawValue)|\(ref.index)|\(encryption.cacheName)"
        if let file = singleFiles.withLock({ $0[id] }) { return file }
        let track = try track(video, ref)
        let repeated = track.repeated(video.repeatCount)
        let perPass = track.pass.count, passes = repeated.passCount
        var sizes: [Int] = []
        for position in 0 ..< perPass {
            sizes.append(Int(try segment(video, ref, index: (passes - 1) * perPass + position, encryption).size))
        }
        let shortened = passes > 1 ? Int(try segment(video, ref, index: perPass - 1, encryption).size) : sizes[perPass - 1]
        let initBytes = try CMAFPackager.read(try initSegment(video, ref, encryption).path)
        let file = SingleTrackFile(initSegment: initBytes, timescale: track.format.timescale,
                                   earliestPresentationTime: repeated.timing(0).earliestPresentation, passSizes: sizes,
                                   shortenedLast: shortened, passCount: passes, span: repeated.span)
        singleFiles.withLock { $0[id] = file }
        return file
    }

    /// The digest of the whole byte-range form of `ref`: its header and every segment in order
    /// (one this run has not made yet made once more and not written: a long video's would fill
    /// the disk for one digest), then kept.
    func singleFileDigest(_ video: CatalogVideo, _ ref: RenditionRef, _ encryption: CMAFEncryption) throws -> ReprDigest {
        let id = "\(video.asset.name)|\(video.repeatCount)|\(ref.kind.rawValue)|\(ref.index)|track|\(encryption.cacheName)"
        if let digest = digests.withLock({ $0[id] }) { return digest }
        let file = try singleFile(video, ref, encryption)
        let folder = try folder(video, ref, encryption)
        var hasher = SHA256()
        hasher.update(data: file.header)
        for index in 0 ..< file.count {
            if let made = cache.known(folder: folder, name: "\(index).m4s"), let bytes = try? CMAFPackager.read(made.path) {
                hasher.update(data: bytes)
            } else {
                hasher.update(data: try makeSegmentBytes(video, ref, index: index, encryption))
            }
        }
        let digest = ReprDigest(hasher)
        digests.withLock { $0[id] = digest }
        return digest
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

    static func read(_ path: String) throws(CMAFError) -> [UInt8] {
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
