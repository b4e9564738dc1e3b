import CurlTransfer
import Foundation
import WireModels

/// A download worked out from the video's playlists: which tracks, which segments, the
/// local playlists to write and the bytes expected.
struct DownloadPlan: Sendable {
    var masterURL: String
    var variant: VariantStream
    var tracks: [PlannedTrack]
    /// Local playlists, by path inside the package folder.
    var playlists: [String: String]
    /// The FairPlay content key id (`skd://{id}`), for protected videos.
    var contentKeyID: String?
    /// The audio and subtitle options of the video with this variant (`MediaOptionCatalog`).
    var mediaOptions: [MediaSelectionOption] = []

    /// Bytes expected in all (estimates: sizes are known only once fetched).
    var estimatedBytes: Int64 {
        tracks.reduce(0) { total, track in track.durations.reduce(total) { $0 + track.estimatedBytes(duration: $1) } }
    }

    var trackRecords: [TrackRecord] { tracks.map(\.record) }

    /// The rows to store for the segments, made one at a time as the store inserts them: a
    /// long video's plan holds its URLs once and compactly, never as records. A track's init
    /// segments come first (sequences below 0).
    var segmentRecords: some Sequence<SegmentRecord> {
        tracks.lazy.flatMap { track in
            let inits = track.inits.enumerated().lazy.map { index, section in
                let sequence = PackageLayout.initSequence(index)
                return SegmentRecord(token: track.record.token, track: track.record.position, sequence: sequence, url: section.url,
                                     file: PackageLayout.segmentFile(trackFolder: track.folder, sequence: sequence, remoteURL: section.url,
                                                                     kind: track.kind),
                                     duration: 0, estimatedBytes: PlannedTrack.initEstimate, bytes: nil, done: false, range: section.range)
            }
            let media = zip(track.urls, track.durations).enumerated().lazy.map { sequence, segment in
                let range = track.ranges.isEmpty ? nil : track.ranges[sequence]
                return SegmentRecord(token: track.record.token, track: track.record.position, sequence: sequence, url: segment.0,
                                     file: PackageLayout.segmentFile(trackFolder: track.folder, sequence: sequence, remoteURL: segment.0,
                                                                     kind: track.kind, fragmented: track.isFragmented, ranged: range != nil),
                                     duration: segment.1, estimatedBytes: track.estimatedBytes(duration: segment.1), bytes: nil, done: false,
                                     range: range)
            }
            return [AnySequence(inits), AnySequence(media)].lazy.joined()
        }
    }
}

/// One track of a plan and its segments, in order.
struct PlannedTrack: Sendable {
    var record: TrackRecord
    var kind: TrackChoice.Kind
    /// The track's folder inside the package folder.
    var folder: String
    /// The rate sizes are estimated at until they are known.
    var bitsPerSecond: Double
    /// The segments' absolute URLs and durations.
    var urls: SegmentURLs
    var durations: [Double]
    /// Each segment's byte range of its URL (`EXT-X-BYTERANGE`), by sequence; empty when no
    /// segment has one.
    var ranges: [SegmentRange?] = []
    /// The track's init segments (`EXT-X-MAP`), in the order they appear: fragmented MP4.
    var inits: [(url: String, range: SegmentRange?)] = []

    /// An init segment's size until it is known: a few hundred bytes to a few kilobytes.
    static let initEstimate: Int64 = 1_024

    /// Whether the track is fragmented MP4 (CMAF): it has an init segment.
    var isFragmented: Bool { !inits.isEmpty }

    /// Bandwidth x duration, until the real size is known.
    func estimatedBytes(duration: Double) -> Int64 { Int64((bitsPerSecond * duration / 8).rounded(.up)) }
}

/// Reads a video's master and media playlists and plans its download. Network only; the
/// rules themselves are `RenditionChooser`'s.
struct DownloadPlanner: Sendable {
    var client: HTTPClient
    /// How often a playlist fetch that failed in passing (no connection, a timeout, a 5xx or
    /// 429) is tried again, and how long between tries.
    var retry = RetryPolicy()

    /// Which source and which variants the app's device takes (its settings).
    var sources = OfflineSourceRule()

    /// The HLS source offline downloads use (`OfflineSourceRule`); `format` keeps a download
    /// refreshing its URLs in the format it was planned in.
    func offlineSource(of video: PlaybackVideo, format: HLSSourceFormat? = nil) throws(OfflineVideoError) -> VideoSource {
        try sources.choose(video.sources, videoID: video.id, format: format)
    }

    /// The FairPlay key system of `video`'s HLS sources (each format has the same), if any.
    static func fairPlaySystem(of video: PlaybackVideo) -> KeySystem? {
        video.sources.first { $0.isHLS && $0.fairPlay != nil }?.fairPlay
    }

    /// The offline source's master playlist, its URIs made absolute, without the variants whose
    /// codecs the app cannot play.
    func master(of video: PlaybackVideo, format: HLSSourceFormat? = nil) async throws(OfflineVideoError) -> (url: String, playlist: MasterPlaylist) {
        let url = try offlineSource(of: video, format: format).src
        let text = try await fetchText(url, what: "master playlist")
        do {
            var master = try MasterPlaylist(parsing: text)
            for index in master.variants.indices { master.variants[index].uri = DownloadPlanner.resolve(master.variants[index].uri, against: url) }
            for index in master.renditions.indices {
                master.renditions[index].uri = master.renditions[index].uri.map { DownloadPlanner.resolve($0, against: url) }
            }
            let all = master.variants
            master.variants.removeAll { !sources.plays(codecs: $0.codecs) }
            if master.variants.isEmpty, !all.isEmpty {
                throw OfflineVideoError(.unsupported, .noMatchingRendition,
                                        "Every variant of video \(video.id) uses a codec the app cannot play ("
                                            + sources.unplayableCodecs.map(\.rawValue).sorted().joined(separator: ", ") + "): "
                                            + all.compactMap(\.codecs).joined(separator: "; "))
            }
            return (url, master)
        } catch {
            throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "The master playlist of video \(video.id) is not valid HLS: \(error)")
        }
    }

    /// Reads a media playlist (its bytes as received) segment by segment, checking it for what
    /// offline downloads support (no HLSe or SAMPLE-AES-CTR, no live or event playlist, no
    /// MPEG-TS init section) and making each segment's and `EXT-X-MAP`'s URI absolute before
    /// `segment` sees them, with the segment's byte range resolved (an omitted offset follows
    /// the previous range of the same URI). Returns the playlist without its segments.
    static func readMedia(_ body: [UInt8], url: String,
                          segment: (_ index: Int, Segment, _ range: SegmentRange?) -> Void) throws(OfflineVideoError) -> MediaPlaylist {
        var index = 0
        var keysInEffect: [EncryptionKey] = []
        var refusal: OfflineVideoError?
        var previous: (uri: String, end: Int)?
        let playlist: MediaPlaylist
        do {
            playlist = try MediaPlaylist.parse(utf8: body) { parsed in
                guard refusal == nil else { return }
                if !parsed.keys.isEmpty { keysInEffect = parsed.keys }
                let method = keysInEffect.first(where: { $0.method != .none })?.method
                if method == .aes128 {
                    refusal = OfflineVideoError(.unsupported, .hlseNotSupported,
                                                "AES-128 (HLSe) content is not supported for download: only clear and FairPlay HLS can be downloaded")
                    return
                }
                if let method, method != .sampleAES {
                    refusal = OfflineVideoError(.unsupported, .malformedPlaylist,
                                                "\(method) encryption is not supported offline: only clear and FairPlay (SAMPLE-AES) HLS can be downloaded")
                    return
                }
                var absolute = parsed
                absolute.uri = DownloadPlanner.resolve(parsed.uri, against: url)
                if var map = parsed.map {
                    map.uri = DownloadPlanner.resolve(map.uri, against: url)
                    if URLToken.path(ofURL: map.uri).hasSuffix(".ts") {
                        refusal = OfflineVideoError(.unsupported, .malformedPlaylist,
                                                    "An MPEG-TS initialization section (EXT-X-MAP to a .ts file) is not supported offline")
                        return
                    }
                    absolute.map = map
                }
                var range: SegmentRange?
                if let byteRange = parsed.byteRange {
                    // An omitted offset continues the previous range of the same resource (RFC 8216 4.4.4.2).
                    let offset = byteRange.offset ?? (previous?.uri == absolute.uri ? previous?.end ?? 0 : 0)
                    let (end, overflow) = offset.addingReportingOverflow(byteRange.length)
                    guard byteRange.length > 0, !overflow else {
                        refusal = OfflineVideoError(.downloadFailure, .malformedPlaylist,
                                                    "Segment \(index) of \(url) has an unusable byte range \(byteRange)")
                        return
                    }
                    range = SegmentRange(offset: Int64(offset), length: Int64(byteRange.length))
                    previous = (absolute.uri, end)
                } else {
                    previous = nil
                }
                segment(index, absolute, range)
                index += 1
            }
        } catch {
            throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "A media playlist is not valid HLS: \(error)")
        }
        if let refusal { throw refusal }
        // A finished VOD only: a live or event playlist downloaded now would be kept as a truncated video.
        guard playlist.endList, playlist.playlistType != .event else {
            let kind = playlist.playlistType == .event ? "an event playlist (EXT-X-PLAYLIST-TYPE:EVENT)" : "a live playlist (no EXT-X-ENDLIST)"
            throw OfflineVideoError(.unsupported, .liveNotSupported,
                                    "\(url.split(separator: "?").first.map(String.init) ?? url) is \(kind): only finished video on demand can be downloaded")
        }
        return playlist
    }

    /// An `EXT-X-MAP`'s byte range (an omitted offset is 0), or nil for the whole resource.
    static func range(of map: InitializationSection) -> SegmentRange? {
        map.byteRange.map { SegmentRange(offset: Int64($0.offset ?? 0), length: Int64($0.length)) }
    }

    /// Several media playlists fetched at once, their bodies in the order of `urls`. Bytes, not
    /// parsed playlists: the caller reads one at a time, so a long video's playlists are
    /// never in memory as segment lists together.
    func mediaBodies(_ urls: [String]) async throws(OfflineVideoError) -> [[UInt8]] {
        var bodies: [Int: [UInt8]] = [:]
        do {
            try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
                for (index, url) in urls.enumerated() {
                    group.addTask { (index, try await self.fetchBody(url, what: "media playlist")) }
                }
                for try await (index, body) in group { bodies[index] = body }
            }
        } catch let error as OfflineVideoError {
            throw error
        } catch {
            throw OfflineVideoError(.downloadFailure, .other, "Fetching the media playlists stopped: \(error)")
        }
        return try urls.indices.map { index throws(OfflineVideoError) in
            guard let body = bodies[index] else {
                throw OfflineVideoError(.downloadFailure, .other, "A media playlist fetch did not finish")
            }
            return body
        }
    }

    /// The content key id of the first `skd://` key among `keys`.
    static func fairPlayKeyID(_ keys: [EncryptionKey]) -> String? {
        for key in keys {
            if let uri = key.uri, uri.hasPrefix("skd://"), uri.count > 6 { return String(uri.dropFirst(6)) }
        }
        return nil
    }

    /// An absolute URL for `uri` as written in the playlist at `base`.
    static func resolve(_ uri: String, against base: String) -> String {
        if uri.contains("://") { return uri }
        return URL(string: uri, relativeTo: URL(string: base))?.absoluteString ?? uri
    }

    /// Plans the download of `video` for `token`.
    func plan(token: String, video: PlaybackVideo, variant rule: VariantRule, audioLanguages: [String],
              subtitleLanguages: [String]) async throws(OfflineVideoError) -> DownloadPlan {
        let (masterURL, master) = try await master(of: video)
        let chosen: VariantStream?
        switch rule {
        case .atOrBelow(let bitrate):
            chosen = RenditionChooser.variant(in: master, requestedBitrate: bitrate)
        case .lowestWithVideo:
            chosen = RenditionChooser.variant(in: master, requestedBitrate: nil)
        case .largest:
            chosen = RenditionChooser.largest(in: master)
        case .qualifiers(let qualifiers):
            chosen = RenditionChooser.variant(in: master, qualifiers: qualifiers)
            if chosen == nil, !master.variants.isEmpty {
                throw OfflineVideoError(.invalidParameter, .noMatchingRendition,
                                        "No variant of video \(video.id) meets the variant qualifiers; it has "
                                            + master.variants.map { OfflineVariant($0).description }.joined(separator: "; "))
            }
        }
        guard let variant = chosen else {
            throw OfflineVideoError(.downloadFailure, .noMatchingRendition, "The master playlist of video \(video.id) has no variant")
        }
        let choices = try RenditionChooser.tracks(master: master, variant: variant, audioLanguages: audioLanguages,
                                                  subtitleLanguages: subtitleLanguages)
        var tracks: [PlannedTrack] = [], playlists: [String: String] = [:]
        var folders: [(TrackChoice, folder: String)] = []
        var bodies = try await mediaBodies(choices.map(\.playlistURL))
        var keys = master.sessionKeys
        for (position, choice) in choices.enumerated() {
            let (track, local, firstKeys) = try DownloadPlanner.planTrack(bodies[position], token: token, position: position, choice: choice)
            bodies[position] = []
            keys += firstKeys
            playlists[track.record.localPlaylist] = local
            tracks.append(track)
            folders.append((choice, track.folder))
        }
        playlists[PackageLayout.masterPlaylist] = PackageLayout.localMaster(master, variant: variant, tracks: folders).render()
        let keyID = DownloadPlanner.fairPlayKeyID(keys)
        return DownloadPlan(masterURL: masterURL, variant: variant, tracks: tracks, playlists: playlists, contentKeyID: keyID,
                            mediaOptions: MediaOptionCatalog.options(master: master, variant: variant, video: video))
    }

    /// Plans one track from its remote media playlist's bytes, in one pass: each segment
    /// becomes a planned segment and an entry of the local playlist naming its file (the parsed
    /// playlist is never held whole). Returns the track, its local playlist and the keys before
    /// its first segment.
    static func planTrack(_ body: [UInt8], token: String, position: Int,
                          choice: TrackChoice) throws(OfflineVideoError) -> (PlannedTrack, local: String, firstKeys: [EncryptionKey]) {
        let folder = PackageLayout.trackFolder(position: position, choice)
        // Audio renditions have no BANDWIDTH of their own: estimate them at 128 kbit/s,
        // subtitles at 1 kbit/s, until the real sizes arrive.
        let bitsPerSecond: Double = switch choice.kind {
        case .video: Double(choice.bandwidth ?? 1_000_000)
        case .audio: 128_000
        case .subtitles: 1_000
        }
        var urls = SegmentURLs(), durations: [Double] = [], localSegments = "", firstKeys: [EncryptionKey] = []
        var ranges: [SegmentRange?] = [], ranged = false, inits: [(url: String, range: SegmentRange?)] = []
        var lastMap: InitializationSection?
        var mapAfterStart = false
        let remote = try readMedia(body, url: choice.playlistURL) { index, segment, range in
            if index == 0 { firstKeys = segment.keys }
            if index > 0, lastMap == nil, segment.map != nil { mapAfterStart = true }
            var local = segment
            if let map = segment.map {
                // A map repeated as it was (a playlist may restate it) is the same init segment.
                if map != lastMap {
                    inits.append((map.uri, DownloadPlanner.range(of: map)))
                    lastMap = map
                }
                local.map = InitializationSection(uri: PackageLayout.segmentName(sequence: PackageLayout.initSequence(inits.count - 1),
                                                                                 remoteURL: map.uri, kind: choice.kind))
            }
            // The same name as the segment's record gets (`PackageLayout.segmentFile`): one file per segment.
            local.uri = PackageLayout.segmentName(sequence: index, remoteURL: segment.uri, kind: choice.kind,
                                                  fragmented: lastMap != nil, ranged: range != nil)
            local.byteRange = nil
            local.render(into: &localSegments)
            urls.append(segment.uri)
            durations.append(segment.duration)
            if range != nil, !ranged {
                ranged = true
                ranges = Array(repeating: nil, count: index)
            }
            if ranged { ranges.append(range) }
        }
        var local = ""
        remote.renderHead(into: &local)
        local += localSegments
        remote.renderTail(into: &local)
        let record = TrackRecord(token: token, position: position, kind: choice.kind.rawValue, language: choice.language,
                                 name: choice.name, playlistURL: choice.playlistURL, bandwidth: choice.bandwidth,
                                 localPlaylist: "\(folder)/index.m3u8")
        if mapAfterStart {
            throw OfflineVideoError(.unsupported, .malformedPlaylist,
                                    "\(choice.playlistURL) starts without an EXT-X-MAP and has one later: a track that changes from MPEG-TS to fragmented MP4 is not supported offline")
        }
        return (PlannedTrack(record: record, kind: choice.kind, folder: folder, bitsPerSecond: bitsPerSecond, urls: urls,
                             durations: durations, ranges: ranges, inits: inits), local, firstKeys)
    }

    /// Fresh segment URLs for the tracks of a planned download, from a fresh video object, in
    /// the download's `format`.
    func freshURLs(video: PlaybackVideo, tracks: [TrackRecord],
                   format: HLSSourceFormat) async throws(OfflineVideoError) -> [(track: Int, sequence: Int, url: String)] {
        let (_, master) = try await master(of: video, format: format)
        var playlistURLs: [String] = []
        for track in tracks {
            guard let playlistURL = DownloadPlanner.matching(track, in: master) else {
                throw OfflineVideoError(.downloadFailure, .noMatchingRendition,
                                        "The video's playlists no longer have the \(track.kind) track \(track.name)")
            }
            playlistURLs.append(playlistURL)
        }
        var urls: [(track: Int, sequence: Int, url: String)] = []
        for (track, (body, playlistURL)) in zip(tracks, zip(try await mediaBodies(playlistURLs), playlistURLs)) {
            var maps = 0
            var lastMap: InitializationSection?
            _ = try DownloadPlanner.readMedia(body, url: playlistURL) { index, segment, _ in
                if let map = segment.map, map != lastMap {
                    urls.append((track.position, PackageLayout.initSequence(maps), map.uri))
                    maps += 1
                    lastMap = map
                }
                urls.append((track.position, index, segment.uri))
            }
        }
        return urls
    }

    /// The same track in a fresh master playlist: the variant with the same bandwidth, the
    /// rendition with the same type, language and name.
    static func matching(_ track: TrackRecord, in master: MasterPlaylist) -> String? {
        switch track.kind {
        case TrackChoice.Kind.video.rawValue:
            return master.variants.first { $0.bandwidth == track.bandwidth }?.uri
        default:
            let type: MediaType = track.kind == TrackChoice.Kind.audio.rawValue ? .audio : .subtitles
            return master.renditions.first { $0.type == type && $0.language == track.language && $0.name == track.name }?.uri
        }
    }

    private func fetchText(_ url: String, what: String) async throws(OfflineVideoError) -> String {
        String(decoding: try await fetchBody(url, what: what), as: UTF8.self)
    }

    /// The body of a 200 answer. Failures that may pass (transport failures, 408, 429, 5xx) are
    /// tried again by `retry`, honouring `Retry-After`; the last one, or any other status, throws
    /// `downloadFailure`.
    private func fetchBody(_ url: String, what: String) async throws(OfflineVideoError) -> [UInt8] {
        try await retry.retrying { _ -> Attempt<[UInt8], OfflineVideoError> in
            do throws(TransferError) {
                let response = try await client.send(HTTPClientRequest(url: url))
                if response.status == 200 { return .done(response.body) }
                let reason: OfflineVideoError.Reason = response.status == 403 ? .tokenExpired : .http
                let failure = OfflineVideoError(.downloadFailure, reason, "The \(what) answered HTTP \(response.status)",
                                                httpStatus: response.status, responseBody: response.body)
                guard RetryPolicy.isRetryable(status: response.status) else { return .failed(failure) }
                return .again(failure, retryAfter: RetryPolicy.retryAfter(response.headers["Retry-After"]))
            } catch {
                let failure = OfflineVideoError(.downloadFailure, .network, "Cannot fetch the \(what): \(error.message)")
                return RetryPolicy.isRetryable(error) ? .again(failure, retryAfter: nil) : .failed(failure)
            }
        }
    }
}
