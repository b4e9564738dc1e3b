import Foundation
import Locking
import SystemFiles
import WireModels

/// One segment file of a fixture rendition, stat'ed once at start-up (its digest is the
/// asset's `fileDigests`, on first use).
struct SegmentFile: Sendable {
    var path: String
    var size: UInt64
    var duration: Double
}

/// A fixture media set (`fixtures/media/NAME/asset.json` and the files it names): the raw
/// material the packager turns into playlists. Loaded once; never changes while serving.
struct MediaAsset: Sendable {
    struct VideoRendition: Sendable {
        var name: String
        var width: Int
        var height: Int
        var frameRate: Double
        var codecs: String
        var segments: [SegmentFile]
    }

    struct AudioRendition: Sendable {
        var language: String
        var name: String
        var codecs: String
        var channels: String
        var segments: [SegmentFile]
    }

    struct SubtitleRendition: Sendable {
        var language: String
        var name: String
        var segments: [SegmentFile]
        var sidebandPath: String
    }

    /// The scrubbing previews of the thumbnail track: one tile every `interval` seconds of a
    /// pass, `columns` × `rows` tiles of `width` × `height` per sprite JPEG, sprites in order.
    struct Thumbnails: Sendable {
        var interval: Double
        var width: Int
        var height: Int
        var columns: Int
        var rows: Int
        var spritePaths: [String]
        /// The sprites' bytes together, stat'ed once at load (the track's `bandwidth`).
        var spriteBytes: Int = 0

        var tilesPerSprite: Int { columns * rows }
    }

    var name: String
    var segmentDuration: Double
    var mpegtsStart: Int
    var video: [VideoRendition]
    /// The HEVC ladder (`video-hevc/`), served only in CMAF sources; `codecs` is empty here (the
    /// CMAF track gives it, from its SPS).
    var hevc: [VideoRendition] = []
    var audio: [AudioRendition]
    var subtitles: [SubtitleRendition]
    var posterPath: String
    var thumbnailPath: String
    /// Every image size the asset has (`1920x1080` → file): the poster's and thumbnail's, and
    /// the other sizes the fixture script made from the same frame.
    var imagePaths: [String: String] = [:]
    /// The progressive MP4s static URL delivery serves, by name (`high`, `low`): remuxed once by
    /// the fixture script from the highest and lowest video rendition with the first audio.
    var progressivePaths: [String: String] = [:]
    /// Their sizes in bytes, stat'ed once at load (the Playback API's MP4 sources give them).
    var progressiveSizes: [String: Int] = [:]
    /// The thumbnail track's sprites; nil when the asset has none (made before they were, or
    /// ingested with images supplied instead of captured).
    var thumbnails: Thumbnails?
    /// The `Repr-Digest` of every file above, each hashed on first use and kept (shared by
    /// every copy of this value: the files never change while serving).
    let fileDigests = FileDigests()

    /// The length of one pass over the asset, in seconds (from the video's EXTINF durations).
    var duration: Double { video.first?.segments.reduce(0) { $0 + $1.duration } ?? 0 }

    /// Reads `asset.json` in `directory` and every rendition playlist it names.
    static func load(directory: URL) throws(CatalogError) -> MediaAsset {
        let manifestURL = directory.appendingPathComponent("asset.json")
        let manifest: AssetManifest
        do {
            manifest = try JSONDecoder().decode(AssetManifest.self, from: Data(contentsOf: manifestURL))
        } catch {
            throw CatalogError(.unreadableFile, "cannot read \(manifestURL.path): \(error)", underlying: error)
        }
        func segments(_ dir: String) throws(CatalogError) -> [SegmentFile] {
            try loadSegments(directory.appendingPathComponent(dir))
        }
        var asset = MediaAsset(
            name: manifest.name,
            segmentDuration: manifest.segment_duration,
            mpegtsStart: manifest.mpegts_start,
            video: try manifest.video.map { v throws(CatalogError) in
                VideoRendition(name: v.name, width: v.width, height: v.height, frameRate: v.frame_rate,
                               codecs: v.codecs, segments: try segments(v.dir))
            },
            audio: try manifest.audio.map { a throws(CatalogError) in
                AudioRendition(language: a.language, name: a.name, codecs: a.codecs, channels: a.channels,
                               segments: try segments(a.dir))
            },
            subtitles: try manifest.subtitles.map { s throws(CatalogError) in
                SubtitleRendition(language: s.language, name: s.name, segments: try segments(s.dir),
                                  sidebandPath: try existingFile(directory.appendingPathComponent(s.sideband)).path)
            },
            posterPath: try existingFile(directory.appendingPathComponent(manifest.poster)).path,
            thumbnailPath: try existingFile(directory.appendingPathComponent(manifest.thumbnail)).path)
        var imagePaths = ["1280x720": asset.posterPath, "160x90": asset.thumbnailPath]
        for (size, file) in manifest.images ?? [:] {
            guard ImageSize(size) != nil else { throw CatalogError(.invalidAsset, "asset \(manifest.name): image size '\(size)' is not WIDTHxHEIGHT") }
            imagePaths[size] = try existingFile(directory.appendingPathComponent(file)).path
        }
        asset.imagePaths = imagePaths
        for (name, file) in manifest.progressive ?? [:] {
            guard ["high", "low"].contains(name) else { throw CatalogError(.invalidAsset, "asset \(manifest.name): progressive rendition '\(name)' is not high or low") }
            let path = try existingFile(directory.appendingPathComponent(file)).path
            asset.progressivePaths[name] = path
            asset.progressiveSizes[name] = FileStatus(path: path).map { Int($0.size) } ?? 0
        }
        asset.hevc = try (manifest.hevc ?? []).map { v throws(CatalogError) in
            VideoRendition(name: v.name, width: v.width, height: v.height, frameRate: v.frame_rate, codecs: "", segments: try segments(v.dir))
        }
        if let t = manifest.thumbnails {
            guard t.interval > 0, t.width > 0, t.height > 0, t.columns > 0, t.rows > 0, !t.sprites.isEmpty else {
                throw CatalogError(.invalidAsset, "asset \(manifest.name): thumbnails need a positive interval, tile size and layout, and sprites")
            }
            let sprites = try t.sprites.map { file throws(CatalogError) in try existingFile(directory.appendingPathComponent(file)).path }
            asset.thumbnails = Thumbnails(interval: t.interval, width: t.width, height: t.height, columns: t.columns, rows: t.rows,
                                          spritePaths: sprites,
                                          spriteBytes: sprites.compactMap { FileStatus(path: $0).map { Int($0.size) } }.reduce(0, +))
        }
        guard !asset.video.isEmpty else { throw CatalogError(.invalidAsset, "asset \(manifest.name) has no video rendition") }
        let counts = Set((asset.video.map(\.segments.count)) + asset.hevc.map(\.segments.count) + asset.audio.map(\.segments.count)
            + asset.subtitles.map(\.segments.count))
        guard counts.count == 1 else {
            throw CatalogError(.invalidAsset, "asset \(manifest.name): renditions have different segment counts \(counts.sorted())")
        }
        return asset
    }

    /// Parses a rendition's `index.m3u8` (as ffmpeg wrote it) and stats every segment it lists.
    private static func loadSegments(_ directory: URL) throws(CatalogError) -> [SegmentFile] {
        let playlistURL = directory.appendingPathComponent("index.m3u8")
        let playlist: MediaPlaylist
        do {
            playlist = try MediaPlaylist(parsing: String(contentsOf: playlistURL, encoding: .utf8))
        } catch {
            throw CatalogError(.unreadableFile, "cannot read \(playlistURL.path): \(error)", underlying: error)
        }
        return try playlist.segments.map { segment throws(CatalogError) in
            let file = try existingFile(directory.appendingPathComponent(segment.uri))
            let size = ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? UInt64) ?? 0
            return SegmentFile(path: file.path, size: size, duration: segment.duration)
        }
    }

    private static func existingFile(_ url: URL) throws(CatalogError) -> URL {
        guard FileManager.default.isReadableFile(atPath: url.path) else { throw CatalogError(.unreadableFile, "missing media file \(url.path)") }
        return url
    }
}

/// `asset.json` as the fixture script writes it (snake_case, decoded as is).
private struct AssetManifest: Decodable {
    struct Video: Decodable { var name, dir, codecs: String; var width, height: Int; var frame_rate: Double }
    struct Audio: Decodable { var language, name, dir, codecs, channels: String }
    struct Subtitle: Decodable { var language, name, dir, sideband: String }
    var name: String
    var segment_duration: Double
    var mpegts_start: Int
    var video: [Video]
    var audio: [Audio]
    var subtitles: [Subtitle]
    var poster: String
    var thumbnail: String
    /// Other image sizes, `"1920x1080": "images/1920x1080.jpg"`.
    var images: [String: String]?
    /// Progressive MP4s, `"high": "mp4/high.mp4"`, `"low": …`.
    var progressive: [String: String]?
    /// The thumbnail track's sprites.
    var thumbnails: Thumbnails?
    /// The HEVC ladder.
    var hevc: [HEVCVideo]?
    struct HEVCVideo: Decodable { var name, dir: String; var width, height: Int; var frame_rate: Double }
    struct Thumbnails: Decodable { var interval: Double; var width, height, columns, rows: Int; var sprites: [String] }
}

/// An image size as image URLs write it: `1920x1080`, digits without leading zeros.
struct ImageSize: Sendable, Hashable {
    var width: Int
    var height: Int

    init?(_ text: String) {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0,
              "\(width)x\(height)" == text else { return nil }
        self.width = width
        self.height = height
    }
}

/// Why a catalog or media asset cannot be served: a stable `code`, what is wrong in words,
/// and the file system's, JSON decoder's or database's error underneath when one failed.
public typealias CatalogError = BackendError<CatalogErrorCode>

/// The kinds of ``CatalogError``. A struct over a private enum, so kinds can be added later
/// without breaking anyone's exhaustive switch.
public struct CatalogErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Hashable, Sendable { case unreadableFile, invalidCatalog, invalidAsset, storageFailed }
    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// A catalog, asset or media file is missing, unreadable or not valid JSON / HLS.
    public static let unreadableFile = CatalogErrorCode(.unreadableFile)
    /// The catalog does not hold together: a duplicate id, an unknown account, asset or
    /// rendition, a bad date or TTL.
    public static let invalidCatalog = CatalogErrorCode(.invalidCatalog)
    /// A media asset that cannot be served: no such asset, no video, uneven renditions.
    public static let invalidAsset = CatalogErrorCode(.invalidAsset)
    /// The database failed (reading the stored edits, making a content key).
    public static let storageFailed = CatalogErrorCode(.storageFailed)

    /// The stable name of the kind, e.g. "invalidCatalog".
    public var description: String { base.rawValue }
}

/// The media assets under a folder (`NAME/asset.json` each), each loaded on first use and
/// kept: catalog edits name assets again and again. A second folder, the media folder, holds
/// the assets Dynamic Ingest made (`ingest-…`); a name is looked up in the first folder first.
final class MediaAssets: Sendable {
    let root: URL
    /// Where ingested assets live (`--media-dir`); nil: only `root`.
    let ingestedRoot: URL?
    private let loaded = Locked<[String: MediaAsset]>([:])

    init(root: URL, ingestedRoot: URL? = nil) {
        self.root = root
        self.ingestedRoot = ingestedRoot
    }

    /// The asset `name`, loaded now if it was not yet.
    func asset(named name: String) throws(CatalogError) -> MediaAsset {
        if let asset = loaded.withLock({ $0[name] }) { return asset }
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else { throw CatalogError(.invalidAsset, "'\(name)' is not an asset name") }
        guard let directory = directory(of: name) else {
            throw CatalogError(.invalidAsset, "there is no asset '\(name)' (assets: \(names.joined(separator: ", ")))")
        }
        let asset = try MediaAsset.load(directory: directory)
        loaded.withLock { $0[name] = asset }
        return asset
    }

    /// The folder of the asset `name` (the first root that has its `asset.json`), or nil.
    func directory(of name: String) -> URL? {
        ([root] + (ingestedRoot.map { [$0] } ?? [])).map { $0.appendingPathComponent(name) }
            .first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("asset.json").path) }
    }

    /// The name of the asset a Dynamic Ingest job makes for a video (`ingest-` names are never
    /// fixtures').
    static func ingestedName(video: String, job: String) -> String { "ingest-\(video)-\(job.prefix(8))" }

    /// Whether `name` is an asset Dynamic Ingest made.
    static func isIngested(_ name: String) -> Bool { name.hasPrefix("ingest-") }

    /// Removes an ingested asset's folder (never a fixture's) and forgets it; nothing when there is none.
    func removeIngested(named name: String) {
        guard let ingestedRoot, !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else { return }
        let directory = ingestedRoot.appendingPathComponent(name)
        guard directory.standardizedFileURL != root.appendingPathComponent(name).standardizedFileURL else { return }
        try? FileManager.default.removeItem(at: directory)
        loaded.withLock { _ = $0.removeValue(forKey: name) }
    }

    /// The names of the assets there are, sorted.
    var names: [String] {
        let roots = [root] + (ingestedRoot.map { [$0] } ?? [])
        return roots.flatMap { root in
            ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [])
                .filter { FileManager.default.fileExists(atPath: root.appendingPathComponent($0).appendingPathComponent("asset.json").path) }
        }.sorted()
    }
}
