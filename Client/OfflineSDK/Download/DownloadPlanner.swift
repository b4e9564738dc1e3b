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
    /// long video's plan holds its URLs once and compactly, never as records.
    var segmentRecords: some Sequence<SegmentRecord> {
        tracks.lazy.flatMap { track in
            zip(track.urls, track.durations).enumerated().lazy.map { sequence, segment in
                SegmentRecord(token: track.record.token, track: track.record.position, sequence: sequence, url: segment.0,
                              file: PackageLayout.segmentFile(trackFolder: track.folder, sequence: sequence, remoteURL: segment.0,
                                                              kind: track.kind),
                              duration: segment.1, estimatedBytes: track.estimatedBytes(duration: segment.1), bytes: nil, done: false)
            }
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

    /// The HLS source offline downloads use (`OfflineSourceRule`).
    static func offlineSource(of video: PlaybackVideo) throws(OfflineVideoError) -> VideoSource {
        try OfflineSourceRule.choose(video.sources, videoID: video.id)
    }

    func master(of video: PlaybackVideo) async throws(OfflineVideoError) -> (url: String, playlist: MasterPlaylist) {
        let url = try DownloadPlanner.offlineSource(of: video).src
        let text = try await fetchText(url, what: "master playlist")
        do {
            var master = try MasterPlaylist(parsing: text)
            for index in master.variants.indices { master.variants[index].uri = DownloadPlanner.resolve(master.variants[index].uri, against: url) }
            for index in master.renditions.indices {
                master.renditions[index].uri = master.renditions[index].uri.map { DownloadPlanner.resolve($0, against: url) }
            }
            return (url, master)
        } catch {
            throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "The master playlist of video \(video.id) is not valid HLS: \(error)")
        }
    }

    /// Reads a media playlist (its bytes as received) segment by segment, checking it for what
    /// offline downloads support (no HLSe, no live or event playlist) and making each segment URI
    /// absolute before `segment` sees it. Returns the playlist without its segments.
    static func readMedia(_ body: [UInt8], url: String,
                          segment: (_ index: Int, Segment) -> Void) throws(OfflineVideoError) -> MediaPlaylist {
        var index = 0
        var keysInEffect: [EncryptionKey] = []
        var refusal: OfflineVideoError?
        let playlist: MediaPlaylist
        do {
            playlist = try MediaPlaylist.parse(utf8: body) { parsed in
                guard refusal == nil else { return }
                if !parsed.keys.isEmpty { keysInEffect = parsed.keys }
                if keysInEffect.first(where: { $0.method != .none })?.method == .aes128 {
                    refusal = OfflineVideoError(.unsupported, .hlseNotSupported,
                                                "AES-128 (HLSe) content is not supported for download: only clear and FairPlay HLS can be downloaded")
                } else if parsed.byteRange != nil || parsed.map != nil {
                    refusal = OfflineVideoError(.unsupported, .malformedPlaylist,
                                                "Byte-range and fMP4 (EXT-X-MAP) playlists are not supported offline")
                } else {
                    var absolute = parsed
                    absolute.uri = DownloadPlanner.resolve(parsed.uri, against: url)
                    segment(index, absolute)
                    index += 1
                }
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
        let remote = try readMedia(body, url: choice.playlistURL) { index, segment in
            if index == 0 { firstKeys = segment.keys }
            // The same name as the segment's record gets (`PackageLayout.segmentFile`).
            var local = segment
            local.uri = PackageLayout.segmentName(sequence: index, remoteURL: segment.uri, kind: choice.kind)
            local.render(into: &localSegments)
            urls.append(segment.uri)
            durations.append(segment.duration)
        }
        var local = ""
        remote.renderHead(into: &local)
        local += localSegments
        remote.renderTail(into: &local)
        let record = TrackRecord(token: token, position: position, kind: choice.kind.rawValue, language: choice.language,
                                 name: choice.name, playlistURL: choice.playlistURL, bandwidth: choice.bandwidth,
                                 localPlaylist: "\(folder)/index.m3u8")
        return (PlannedTrack(record: record, kind: choice.kind, folder: folder, bitsPerSecond: bitsPerSecond, urls: urls,
                             durations: durations), local, firstKeys)
    }

    /// Fresh segment URLs for the tracks of a planned download, from a fresh video object.
    func freshURLs(video: PlaybackVideo, tracks: [TrackRecord]) async throws(OfflineVideoError) -> [(track: Int, sequence: Int, url: String)] {
        let (_, master) = try await master(of: video)
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
            _ = try DownloadPlanner.readMedia(body, url: playlistURL) { index, segment in urls.append((track.position, index, segment.uri)) }
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
