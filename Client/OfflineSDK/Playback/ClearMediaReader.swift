import CMAF
import Foundation
import Locking
import SampleAES
import WireModels

/// The one place an offline package's media becomes clear: every way out (the loopback HLS
/// server, the async segment sequences, the export) reads through it. SAMPLE-AES segments
/// (MPEG-TS) and `cbcs` fragments (CMAF) are decrypted in memory with the content key unsealed
/// from the license at open; the clear key never touches the disk. A CMAF track's init segment
/// comes out without its protection boxes (`encv` is `avc1` again, no `sinf` or `pssh`) and its
/// fragments without theirs (`senc`, `saiz`, `saio`), so an unmodified player sees a clear
/// stream. Playlists come out without their keys, since what they point at is served clear.
struct ClearMediaReader: Sendable {
    /// One track of the package: where its playlist and segments are, and which are encrypted.
    struct Track: Sendable {
        var position: Int
        var selection: OfflineMediaSelection
        /// The track's folder inside the package (`0-video`).
        var folder: String
        /// The media playlist's path inside the package (`0-video/index.m3u8`).
        var playlist: String
        /// Segment file names inside `folder`, by sequence.
        var names: [String]
        var durations: [Double]
        /// The IV of each SAMPLE-AES segment (nil: clear), by sequence.
        var ivs: [[UInt8]?]
        /// Sequences preceded by `EXT-X-DISCONTINUITY` (their timestamps start afresh).
        var discontinuities: Set<Int> = []
        /// A CMAF track's init segment file names (`init-0.mp4`), by `EXT-X-MAP` in order; empty
        /// for MPEG-TS. Init segment `i` is read as sequence `PackageLayout.initSequence(i)`.
        var inits: [String] = []
        /// The init segment in effect for each segment, by sequence (empty for MPEG-TS).
        var initOfSegment: [Int] = []

        /// Whether the track is fragmented MP4 (CMAF).
        var isFragmented: Bool { !inits.isEmpty }

        /// The file name of segment `sequence` (an init segment below 0).
        func name(of sequence: Int) -> String? {
            if sequence < 0 {
                let index = -1 - sequence
                return inits.indices.contains(index) ? inits[index] : nil
            }
            return names.indices.contains(sequence) ? names[sequence] : nil
        }

        /// The content type of the track's segments as served.
        var contentType: String {
            selection.kind == .subtitles ? "text/vtt" : (isFragmented ? "video/mp4" : "video/mp2t")
        }
    }

    /// Each CMAF init segment's protection, read once per reader (from its stored bytes).
    final class InitProtections: Sendable {
        let read = Locked<[SegmentKey: ProtectedTrackInfo?]>([:])
    }

    /// Where a segment's stored bytes come from: the disk, or (during a download) the network
    /// or the download itself. Throws `OfflineVideoError`.
    typealias Source = @Sendable (_ track: Track, _ sequence: Int) async throws -> [UInt8]

    let folder: String
    let tracks: [Track]
    /// The content key and its IV, for FairPlay packages.
    let key: (key: [UInt8], iv: [UInt8])?
    let source: Source
    let protections = InitProtections()
    /// The content key made ready once for the CMAF fragments (nil without a key, or one of the wrong size).
    let cipher: SampleCipher?

    init(folder: String, tracks: [Track], key: (key: [UInt8], iv: [UInt8])?, source: @escaping Source) {
        self.folder = folder
        self.tracks = tracks
        self.key = key
        self.source = source
        cipher = key.flatMap { try? SampleCipher(key: $0.key) }
    }

    /// Reads a package's local playlists. `keyID` is the content key id the license is for:
    /// a playlist naming another key cannot be read with it.
    static func open(folder: String, tracks: [TrackRecord], key: (key: [UInt8], iv: [UInt8])?, licenseKeyID: String?,
                     source: @escaping Source) throws(OfflineVideoError) -> ClearMediaReader {
        var read: [Track] = []
        for record in tracks {
            let selection = OfflineMediaSelection(kind: OfflineMediaSelection.Kind(rawValue: record.kind) ?? .video,
                                                  language: record.language, name: record.name)
            let path = folder + "/" + record.localPlaylist
            guard let body = FileManager.default.contents(atPath: path) else {
                throw OfflineVideoError(.downloadFailure, .filesMissing, "The package is incomplete: \(record.localPlaylist) is missing")
            }
            var names: [String] = [], durations: [Double] = [], ivs: [[UInt8]?] = [], discontinuities: Set<Int> = []
            var inits: [String] = [], initOfSegment: [Int] = []
            var keyInEffect: EncryptionKey?
            var foreignKey: String?
            do {
                _ = try MediaPlaylist.parse(utf8: Array(body)) { segment in
                    if !segment.keys.isEmpty { keyInEffect = segment.keys.first { $0.method != .none } }
                    if let map = segment.map, inits.last != map.uri { inits.append(map.uri) }
                    if !inits.isEmpty { initOfSegment.append(inits.count - 1) }
                    if segment.discontinuity { discontinuities.insert(names.count) }
                    names.append(segment.uri)
                    durations.append(segment.duration)
                    if let encryption = keyInEffect {
                        if let uri = encryption.uri, let keyID = licenseKeyID, uri != "skd://\(keyID)" { foreignKey = uri }
                        ivs.append(encryption.ivBytes ?? key?.iv ?? [])
                    } else {
                        ivs.append(nil)
                    }
                }
            } catch {
                throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "\(record.localPlaylist) is not valid HLS: \(error)")
            }
            if let foreignKey {
                throw OfflineVideoError(.invalidLicense, .license, "The license is for key \(licenseKeyID ?? "-"); \(record.localPlaylist) uses \(foreignKey)")
            }
            if key == nil, ivs.contains(where: { $0 != nil }) {
                throw OfflineVideoError(.invalidLicense, .license, "\(record.localPlaylist) is encrypted and the video holds no license")
            }
            let trackFolder = record.localPlaylist.split(separator: "/").dropLast().joined(separator: "/")
            if !inits.isEmpty, initOfSegment.count != names.count {
                throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "\(record.localPlaylist) has segments before its EXT-X-MAP")
            }
            read.append(Track(position: record.position, selection: selection, folder: trackFolder, playlist: record.localPlaylist,
                              names: names, durations: durations, ivs: ivs, discontinuities: discontinuities,
                              inits: inits, initOfSegment: initOfSegment))
        }
        return ClearMediaReader(folder: folder, tracks: read, key: key, source: source)
    }

    /// Segment `sequence` of `track`, clear (an init segment below 0, without its protection boxes).
    func segment(_ track: Track, _ sequence: Int) async throws(OfflineVideoError) -> [UInt8] {
        guard track.name(of: sequence) != nil else {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "Track \(track.selection) has no segment \(sequence)")
        }
        let stored = try await stored(track, sequence)
        if sequence < 0 {
            do { return try ProtectionRemoval.clearInit(stored).clear } catch {
                throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "The init segment \(track.folder)/\(track.inits[-1 - sequence]) cannot be read: \(error)")
            }
        }
        guard let iv = track.ivs[sequence], let key else { return stored }
        do {
            if track.isFragmented {
                // cbcs: the IV is the init segment's (tenc), never the playlist's.
                guard let protection = try await protection(track, initIndex: track.initOfSegment[sequence]) else { return stored }
                guard let cipher else { return try ProtectionRemoval.clearSegment(stored, protection: protection, key: key.key) }  // throws the key's error
                return try ProtectionRemoval.clearSegment(stored, protection: protection, cipher: cipher)
            }
            return try SampleAES.decrypt(segment: stored, key: key.key, iv: iv.count == 16 ? iv : key.iv)
        } catch let error as OfflineVideoError {
            throw error
        } catch {
            throw OfflineVideoError(.invalidLicense, .license, "Segment \(sequence) of \(track.selection) does not decrypt: \(error)")
        }
    }

    private func stored(_ track: Track, _ sequence: Int) async throws(OfflineVideoError) -> [UInt8] {
        do { return try await source(track, sequence) } catch let error as OfflineVideoError { throw error } catch {
            throw OfflineVideoError(.downloadFailure, .other, "Segment \(sequence) of \(track.selection) cannot be read: \(error)")
        }
    }

    /// The protection of `track`'s init segment `initIndex` (nil: a clear track), read from its
    /// stored bytes on first use.
    private func protection(_ track: Track, initIndex: Int) async throws(OfflineVideoError) -> ProtectedTrackInfo? {
        let key = SegmentKey(track: track.position, sequence: PackageLayout.initSequence(initIndex))
        if let known = protections.read.withLock({ $0[key] }) { return known }
        let bytes = try await stored(track, key.sequence)
        let protection: ProtectedTrackInfo?
        do { protection = try ProtectionRemoval.clearInit(bytes).protection } catch {
            throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "The init segment \(track.folder)/\(track.inits[initIndex]) cannot be read: \(error)")
        }
        protections.read.withLock { $0[key] = .some(protection) }
        return protection
    }

    /// The track whose segment file is `path` inside the package, and its sequence.
    func segment(at path: String) -> (Track, Int)? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let folder = path[..<slash], name = path[path.index(after: slash)...]
        guard let track = tracks.first(where: { $0.folder == folder }) else { return nil }
        if let index = track.inits.firstIndex(where: { $0 == name }) { return (track, PackageLayout.initSequence(index)) }
        // Names are the sequence number and an extension (`PackageLayout.segmentName`).
        guard let sequence = Int(name.prefix { $0.isASCII && $0.isNumber }), track.names.indices.contains(sequence),
              track.names[sequence] == name
        else { return nil }
        return (track, sequence)
    }

    /// A local playlist as served clear: without `EXT-X-KEY` and `EXT-X-SESSION-KEY`; nil for
    /// a path that is none of the package's playlists.
    /// `sideband` lists subtitle playlists to add to the master as renditions (sideband text
    /// tracks the manifest does not carry), by language; `defaultSubtitle` is the subtitle
    /// language marked `DEFAULT=YES,AUTOSELECT=YES` (every other one `DEFAULT=NO`).
    func clearPlaylist(_ path: String, sideband: [(language: String, uri: String)] = [], defaultSubtitle: String? = nil) -> String? {
        guard let body = FileManager.default.contents(atPath: folder + "/" + path) else { return nil }
        let text = String(decoding: body, as: UTF8.self)
        if path == PackageLayout.masterPlaylist {
            guard var master = try? MasterPlaylist(parsing: text) else { return nil }
            master.sessionKeys = []
            let group = master.variants.first?.subtitles ?? "sideband"
            for (language, uri) in sideband where !master.renditions.contains(where: { $0.type == .subtitles && $0.language == language }) {
                master.renditions.append(Rendition(type: .subtitles, groupID: group, language: language, name: language,
                                                   autoselect: true, uri: uri))
            }
            if !sideband.isEmpty {
                for index in master.variants.indices where master.variants[index].subtitles == nil { master.variants[index].subtitles = group }
            }
            if let defaultSubtitle {
                for index in master.renditions.indices where master.renditions[index].type == .subtitles {
                    let chosen = master.renditions[index].language == defaultSubtitle
                    master.renditions[index].isDefault = chosen
                    if chosen { master.renditions[index].autoselect = true }
                }
            }
            return master.render()
        }
        guard tracks.contains(where: { $0.playlist == path }) else { return nil }
        var clear = ""
        guard let playlist = try? MediaPlaylist.parse(utf8: Array(body), segment: { segment in
            var segment = segment
            segment.keys = []
            segment.render(into: &clear)
        }) else { return nil }
        var out = ""
        playlist.renderHead(into: &out)
        out += clear
        playlist.renderTail(into: &out)
        return out
    }
}
