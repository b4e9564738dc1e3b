import Foundation
import WireModels

/// Where a download's files live inside its package folder (`{storage}/packages/{token}/`),
/// and the local playlists that point at them with relative paths.
enum PackageLayout {
    static let masterPlaylist = "master.m3u8"
    static let posterFile = "images/poster.jpg"
    static let thumbnailFile = "images/thumbnail.jpg"
    /// The download configuration's artwork, as given (any image format).
    static let artworkFile = "images/artwork"
    /// The video's audio and subtitle options (`MediaOptionCatalog`), as JSON.
    static let mediaOptionsFile = "media-options.json"
    /// The stamp of the offline store that made the folder (`OfflineDownloads.storeStamp`), its
    /// first file: only a folder this store made and never recorded is a stranded one to delete.
    static let storeStampFile = ".store"

    /// Where the package folders are: `packages/` in the storage folder.
    static func packagesDirectory(in storage: URL) -> URL {
        storage.appendingPathComponent("packages", isDirectory: true)
    }

    /// The package folder of download `token` under `packages` (its files, whether there or not).
    static func packageFolder(_ token: String, in packages: URL) -> URL {
        packages.appendingPathComponent(token, isDirectory: true)
    }

    /// `0-video`, `1-audio-en`, `3-subtitles-fr`: unique per track, safe as a folder name.
    static func trackFolder(position: Int, _ track: TrackChoice) -> String {
        var name = "\(position)-\(track.kind.rawValue)"
        if let language = track.language { name += "-" + safeName(language) }
        return name
    }

    /// A language tag as part of a file name: letters, digits and `-` kept, anything else
    /// (`/`, `.`) made `_`, at most 32 characters.
    private static func safeName(_ language: String) -> String {
        String(language.unicodeScalars.prefix(32).map { CharacterSet.alphanumerics.contains($0) || $0 == "-" ? Character($0) : "_" })
    }

    /// The file of segment `sequence` inside the package folder: `{trackFolder}/{segmentName}`.
    static func segmentFile(trackFolder: String, sequence: Int, remoteURL: String, kind: TrackChoice.Kind,
                            fragmented: Bool = false, ranged: Bool = false) -> String {
        trackFolder + "/" + segmentName(sequence: sequence, remoteURL: remoteURL, kind: kind, fragmented: fragmented, ranged: ranged)
    }

    /// The sequence of a track's init segment `index` (its `index`-th `EXT-X-MAP`): init
    /// segments are stored as segments numbered below 0, so they are fetched first.
    static func initSequence(_ index: Int) -> Int { -1 - index }

    /// The file name of segment `sequence` in its track's folder (`00042.ts`), keeping the
    /// remote file's extension (`.ts`, `.m4s`, `.vtt`, `.aac`). A byte range of a remote file
    /// (`ranged`) is a CMAF fragment of its own, `.m4s`; without a usable extension a segment is
    /// `.vtt` for subtitles, `.m4s` in a `fragmented` (EXT-X-MAP) track, else `.ts`. An init
    /// segment (a sequence below 0) is `init-0.mp4`.
    static func segmentName(sequence: Int, remoteURL: String, kind: TrackChoice.Kind, fragmented: Bool = false, ranged: Bool = false) -> String {
        if sequence < 0 { return "init-\(-1 - sequence).mp4" }
        // Byte-wise and without String(format:): this runs for every segment planned.
        var ext = ""
        if !ranged {
            let path = URLToken.path(ofURL: remoteURL)
            let name = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { path[path.utf8.index(after: $0)...] } ?? path[...]
            ext = name.utf8.lastIndex(of: UInt8(ascii: ".")).map { String(name[name.utf8.index(after: $0)...]) } ?? ""
        }
        let isAlphanumeric = { (byte: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        if ext.isEmpty || ext.utf8.count > 5 || !ext.utf8.allSatisfy(isAlphanumeric) {
            ext = kind == .subtitles ? "vtt" : (fragmented || ranged ? "m4s" : "ts")
        }
        let number = String(sequence)
        return String(repeating: "0", count: max(0, 5 - number.utf8.count)) + number + "." + ext
    }

    /// The local master playlist: only the chosen variant and renditions, with relative URIs.
    static func localMaster(_ remote: MasterPlaylist, variant: VariantStream, tracks: [(TrackChoice, folder: String)]) -> MasterPlaylist {
        var renditions: [Rendition] = []
        var localVariant = variant
        for (track, folder) in tracks {
            switch track.kind {
            case .video:
                localVariant.uri = "\(folder)/index.m3u8"
            case .audio, .subtitles:
                let type: MediaType = track.kind == .audio ? .audio : .subtitles
                guard var rendition = remote.renditions.first(where: { $0.type == type && $0.uri == track.playlistURL }) else { continue }
                rendition.uri = "\(folder)/index.m3u8"
                renditions.append(rendition)
            }
        }
        if !tracks.contains(where: { $0.0.kind == .subtitles }) { localVariant.subtitles = nil }
        return MasterPlaylist(version: remote.version, independentSegments: remote.independentSegments,
                              sessionKeys: remote.sessionKeys, renditions: renditions, variants: [localVariant],
                              otherTags: remote.otherTags)
    }
}

extension PackageLayout {
    /// `sideband/{language}.vtt` for a sideband text track.
    static func sidebandFile(_ track: TextTrack) -> String {
        "sideband/\(safeName(track.srclang)).vtt"
    }
}
