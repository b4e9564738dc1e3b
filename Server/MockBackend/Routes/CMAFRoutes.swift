import CMAF
import Foundation
import MicroHTTP
import Locking
import Logging
import WireModels

/// Dynamic Delivery's v2 sources: HLS v7 and DASH manifests over one set of CMAF segments per
/// rendition (init and media segments, WebVTT for HLS subtitles). Every URL carries a
/// `fastly_token`: its own path's in HLS, the video's media folder's in DASH templates.
extension MockBackendApp {
    static func addCMAFRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/manifest/v2/hls/v7/:protection/:codecs/:account/:video/:label/master.m3u8") { app, request, p in
            let video = try app.cmafVideo(request, p, format: .cmafHLS)
            let now = app.clock.now()
            let ttl = app.catalog.accounts[video.accountID]?.manifestTokenTTL ?? 21600
            let expiry = Links.expiry(now: now, ttl: ttl)
            let links = app.links(for: request)
            let (body, digest) = try app.cmafBody("cmaf-master|\(links.base)|\(video.id)|\(video.generation)|\(expiry.timeIntervalSince1970)",
                                                  validUntil: Links.bucketEnd(now: now, ttl: ttl), now: now) { () throws(HTTPError) in
                let tracks = try app.cmafTracks(video)
                return Array(app.packager.cmafMaster(video, key: app.contentKeys[video.id], track: { tracks[$0.uuid] },
                                                     expiresAt: expiry, links: links).render().utf8)
            }
            return MediaResponse.bytes(body, digest: digest, contentType: playlistContentType)
        }
        router.add(["GET"], "/manifest/v2/hls/v7/:protection/:codecs/:account/:video/:rendition/:label/rendition.m3u8") { app, request, p in
            let video = try app.cmafVideo(request, p, format: .cmafHLS)
            guard let rendition = app.catalog.rendition(uuid: p["rendition"], of: video) else { throw HTTPError.notFound(request) }
            let now = app.clock.now()
            let expiry = Links.expiry(now: now, ttl: app.configuration.mediaTokenTTL)
            let links = app.links(for: request)
            let addressing = app.cmafAddressing(video)
            let (body, digest) = try app.cmafBody("cmaf-media|\(links.base)|\(rendition.uuid)|\(video.generation)|\(addressing.rawValue)|\(expiry.timeIntervalSince1970)",
                                                  validUntil: Links.bucketEnd(now: now, ttl: app.configuration.mediaTokenTTL), now: now) { () throws(HTTPError) in
                let track = try app.cmafTrack(video, rendition.kind == .subtitles ? video.videoRenditions[0] : rendition)
                let singleFile = addressing == .byteRanges && rendition.kind != .subtitles
                    ? try app.cmafSingleFile(video, rendition, scheme: HLSPackager.cmafScheme(video)) : nil
                return Array(app.packager.cmafMedia(video, rendition, track: track, singleFile: singleFile, key: app.contentKeys[video.id],
                                                    keyExpiresAt: expiry, expiresAt: expiry, links: links).render().utf8)
            }
            return MediaResponse.bytes(body, digest: digest, contentType: playlistContentType)
        }
        router.add(["GET"], "/manifest/v2/dash/live-baseurl/:protection/:codecs/:account/:video/:label/manifest.mpd") { app, request, p in
            try app.dashManifestResponse(app.cmafVideo(request, p, format: .dash), request)
        }
        router.add(["GET"], "/media/v2/cmaf/:scheme/:account/:video/:rendition/:file") { app, request, p in
            try app.links.verify(request, now: app.clock.now())
            guard let video = app.catalog.video(uuid: p["video"]), video.accountID == p["account"], app.servesCMAF(video),
                  let encryption = CMAFEncryption.named(p["scheme"], video: video, key: app.contentKeys[video.id]),
                  let rendition = app.catalog.rendition(uuid: p["rendition"], of: video)
            else { throw HTTPError.notFound(request) }
            return try app.cmafFileResponse(video, rendition, encryption, file: p["file"], request)
        }
    }

    /// The DASH MPD of `video`, its URLs on the base of the listener `request` came in on: the
    /// signed MPD URL's answer and static URL delivery's `manifest.mpd`.
    func dashManifestResponse(_ video: CatalogVideo, _ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        let now = clock.now()
        let ttl = catalog.accounts[video.accountID]?.manifestTokenTTL ?? 21600
        let expiry = Links.expiry(now: now, ttl: ttl)
        let mediaExpiry = Links.expiry(now: now, ttl: configuration.mediaTokenTTL)
        let links = links(for: request)
        let (body, digest) = try cmafBody("mpd|\(links.base)|\(video.id)|\(video.generation)|\(cmafAddressing(video).rawValue)|\(expiry.timeIntervalSince1970)|\(mediaExpiry.timeIntervalSince1970)",
                                          validUntil: min(Links.bucketEnd(now: now, ttl: ttl), Links.bucketEnd(now: now, ttl: configuration.mediaTokenTTL)),
                                          now: now) { () throws(HTTPError) in
            Array(try dashManifest(video, links: links, mediaExpiry: mediaExpiry).render().utf8)
        }
        return MediaResponse.bytes(body, digest: digest, contentType: DASHManifest.contentType)
    }

    /// Whether `video` has CMAF sources: clear and FairPlay videos (HLS cbcs, DASH cenc with
    /// ClearKey). AES-128 videos are HLSe over TS only, as Brightcove serves HLSe.
    func servesCMAF(_ video: CatalogVideo) -> Bool { video.protection != .aes128 }

    /// Checks for v2 manifest URLs: the token for this path, a video of this account with this
    /// protection, codecs and segment label, whose account delivers `format`.
    func cmafVideo(_ request: HTTPRequest, _ p: RouteParameters, format: DeliveryFormat) throws(HTTPError) -> CatalogVideo {
        try links.verify(request, now: clock.now())
        guard let video = catalog.video(uuid: p["video"]), video.accountID == p["account"], servesCMAF(video),
              catalog.accounts[video.accountID]?.deliveryFormats.contains(format) == true,
              p["protection"] == (format == .dash ? Links.dashProtection(video) : video.protection.rawValue),
              p["codecs"] == Links.codecsLabel(video), p["label"] == Links.segmentLabel(video)
        else { throw HTTPError.notFound(request) }
        return video
    }

    /// The CMAF track of a video or audio rendition; a 500 that says why when the asset cannot be packaged.
    func cmafTrack(_ video: CatalogVideo, _ ref: RenditionRef) throws(HTTPError) -> PackagedTrack {
        do {
            return try cmaf.track(video, ref)
        } catch {
            logger.error("cannot package \(video.asset.name) \(ref.kind.rawValue) \(ref.index) as CMAF: \(error)")
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "cannot package the rendition as CMAF: \(error.message)")
        }
    }

    /// How the account of `video` addresses CMAF media.
    func cmafAddressing(_ video: CatalogVideo) -> CMAFAddressing { catalog.accounts[video.accountID]?.cmafAddressing ?? .segments }

    /// The byte-range form of a rendition encrypted with `scheme` (`clear`, `cbcs`, `cenc`); a 500 that says why when it cannot be made.
    func cmafSingleFile(_ video: CatalogVideo, _ ref: RenditionRef, scheme: String) throws(HTTPError) -> SingleTrackFile {
        guard let encryption = CMAFEncryption.named(scheme, video: video, key: contentKeys[video.id]) else {
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "no content key for this video")
        }
        do {
            return try cmaf.singleFile(video, ref, encryption)
        } catch {
            logger.error("cannot lay out the single file of \(video.asset.name) \(ref.kind.rawValue) \(ref.index): \(error)")
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "cannot package the rendition as CMAF: \(MockBackendApp.reason(error))")
        }
    }

    /// What went wrong, in a sentence: a CMAF error's message, or the error.
    static func reason(_ error: any Error) -> String { (error as? CMAFError)?.message ?? "\(error)" }

    /// The CMAF tracks of every video and audio rendition of `video`, by rendition uuid.
    private func cmafTracks(_ video: CatalogVideo) throws(HTTPError) -> [String: PackagedTrack] {
        var tracks: [String: PackagedTrack] = [:]
        for ref in video.cmafVideoRenditions + video.audioRenditions { tracks[ref.uuid] = try cmafTrack(video, ref) }
        return tracks
    }

    /// A manifest body from the response cache, made by `make` on a miss.
    private func cmafBody(_ key: String, validUntil: Date, now: Date,
                          make: () throws(HTTPError) -> [UInt8]) throws(HTTPError) -> (body: [UInt8], digest: ReprDigest) {
        var failure: HTTPError?
        let result = cache.media(for: key, validUntil: validUntil, now: now) {
            do throws(HTTPError) { return try make() } catch {
                failure = error
                return []
            }
        }
        if let failure { throw failure }
        return result
    }

    /// The DASH MPD of `video`: its media folder signed until `mediaExpiry` in the templates.
    private func dashManifest(_ video: CatalogVideo, links: Links, mediaExpiry: Date) throws(HTTPError) -> DASHManifest {
        let scheme = video.protection == .clear ? "clear" : "cenc"
        let prefix = Links.cmafMediaPrefix(video, scheme: scheme)
        let byteRanges = cmafAddressing(video) == .byteRanges
        let representation = { (ref: RenditionRef, codecs: String?) throws(HTTPError) -> DASHManifest.Representation in
            let track = try self.cmafTrack(video, ref)
            return DASHManifest.Representation(ref: ref, codecs: codecs ?? track.format.codecString, track: track,
                                               singleFile: byteRanges ? try self.cmafSingleFile(video, ref, scheme: scheme) : nil)
        }
        let videos = try video.videoRenditions.map { ref throws(HTTPError) in try representation(ref, nil) }
        let hevc = try video.hevcRenditions.map { ref throws(HTTPError) in try representation(ref, nil) }
        let audios = try video.audioRenditions.map { ref throws(HTTPError) in
            let track = video.asset.audio[ref.index]
            return (try representation(ref, track.codecs), language: track.language, label: track.name, channels: track.channels)
        }
        let texts = video.subtitleRenditions.map { ref in
            let track = video.asset.subtitles[ref.index]
            return DASHManifest.TextTrack(ref: ref, language: track.language, label: track.name,
                                          url: links.url(Links.textTrackPath(video, language: track.language)))
        }
        let firstVideo = videos.first?.track.pass.first?.earliestPresentationTime ?? 0
        let thumbnails = ThumbnailTrack(video).flatMap { track in
            track.hasImageStream ? (track, links.url(Links.spritePath(video, track, number: 0)).replacingOccurrences(of: "tile_0.jpg", with: "tile_$Number$.jpg")) : nil
        }
        var protection: DASHManifest.Protection?
        if video.protection == .fairplay {
            guard let key = contentKeys[video.id]?.commonEncryptionKey else {
                throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "no content key for this video")
            }
            protection = DASHManifest.Protection(key: key, licenseURL: links.signed(Links.clearKeyLicensePath(video), expiresAt: mediaExpiry))
        }
        return DASHManifest(video: video, videos: videos, hevc: hevc, audios: audios, texts: texts, baseURL: links.url(prefix),
                            protection: protection, thumbnails: thumbnails, token: links.prefixToken(prefix, expiresAt: mediaExpiry),
                            presentationStart90k: firstVideo)
    }

    /// `init.mp4`, `{n}.m4s` or (subtitles) `{n}.vtt` of a rendition.
    private func cmafFileResponse(_ video: CatalogVideo, _ rendition: RenditionRef, _ encryption: CMAFEncryption, file: String,
                                  _ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        if rendition.kind == .subtitles {
            guard let number = MockBackendApp.segmentNumber(file, kind: .subtitles), number < video.segmentCount else {
                throw HTTPError.notFound(request)
            }
            return try cmafSubtitleResponse(video, rendition, number: number)
        }
        let contentType = rendition.kind == .audio ? "audio/mp4" : "video/mp4"
        if file == SingleTrackFile.name { return try singleFileResponse(video, rendition, encryption, contentType: contentType) }
        let number: Int?
        if file == "init.mp4" {
            number = nil
        } else {
            guard file.hasSuffix(".m4s"), let n = MockBackendApp.segmentNumber(String(file.dropLast(4)) + ".ts", kind: .video),
                  n < video.segmentCount else { throw HTTPError.notFound(request) }
            number = n
        }
        do {
            let file = if let number { try cmaf.segment(video, rendition, index: number, encryption) }
                else { try cmaf.initSegment(video, rendition, encryption) }
            return MediaResponse.file(path: file.path, size: file.size, digest: file.digest, contentType: contentType)
        } catch {
            logger.error("cannot package \(file) of \(video.asset.name) \(rendition.kind.rawValue) \(rendition.index): \(error)")
            // Protected media is never served clear: a segment that cannot be encrypted is a 500.
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "cannot package the file: \(MockBackendApp.reason(error))")
        }
    }

    /// The byte-range form of a rendition (`track.mp4`): a range within one segment is that
    /// segment's file (sent like any file); a longer one is read from the files it covers, and a
    /// long one (a whole file) streamed a piece at a time.
    private func singleFileResponse(_ video: CatalogVideo, _ rendition: RenditionRef, _ encryption: CMAFEncryption,
                                    contentType: String) throws(HTTPError) -> HTTPResponse {
        let (file, digest): (SingleTrackFile, ReprDigest)
        do {
            file = try cmaf.singleFile(video, rendition, encryption)
            digest = try cmaf.singleFileDigest(video, rendition, encryption)
        } catch {
            logger.error("cannot lay out the single file of \(video.asset.name) \(rendition.kind.rawValue) \(rendition.index): \(error)")
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "cannot package the file: \(MockBackendApp.reason(error))")
        }
        let cmaf = cmaf, logger = logger
        let segmentFile = { @Sendable (index: Int) -> CachedFile? in
            do {
                let made = try cmaf.segment(video, rendition, index: index, encryption)
                guard made.size == file.range(of: index).length else {
                    logger.error("segment \(index) of \(video.asset.name) is \(made.size) bytes where its single file has \(file.range(of: index).length)")
                    return nil
                }
                return made
            } catch {
                logger.error("cannot make segment \(index) of the single file of \(video.asset.name): \(error)")
                return nil
            }
        }
        // The bytes of `lower ... upper`, nil when a segment cannot be made.
        let bytes = { @Sendable (lower: UInt64, upper: UInt64) -> [UInt8]? in
            var out: [UInt8] = []
            out.reserveCapacity(Int(upper - lower + 1))
            for piece in file.pieces(lower, upper) {
                switch piece {
                case .header(let range):
                    out += file.header[range]
                case .segment(let index, let offset, let length):
                    guard let made = segmentFile(index),
                          let data = HTTPResponse.Body.file(path: made.path, offset: offset, length: length).contents else { return nil }
                    out += data
                }
            }
            return out
        }
        let body = RangedBody(length: file.size, make: { lower, upper in
            let pieces = file.pieces(lower, upper)
            if pieces.count == 1, case .segment(let index, let offset, let length) = pieces[0], let made = segmentFile(index) {
                return .file(path: made.path, offset: offset, length: length)
            }
            if upper - lower < 4 << 20 {
                // Never the wrong bytes: a range that cannot be made breaks the connection off.
                return bytes(lower, upper).map { .bytes($0) } ?? .stream(BodyStream(length: upper - lower + 1) { _ in .abort })
            }
            let next = Locked(lower)
            return .stream(BodyStream(length: upper - lower + 1) { max in
                next.withLock { position in
                    guard position <= upper else { return .end }
                    let end = Swift.min(upper, position + UInt64(max) - 1)
                    guard let piece = bytes(position, end) else { return .abort }
                    position = end + 1
                    return .bytes(piece)
                }
            })
        }, digest: { lower, upper in
            // The range a player asks for (one segment, the init header, or the rest of one after a
            // resume): its digest, the segment file's own when it is exactly that. None for a long
            // range (a whole file read at once), which would be hashed for every request.
            let pieces = file.pieces(lower, upper)
            if pieces.count == 1, case .segment(let index, let offset, let length) = pieces[0],
               let made = segmentFile(index), offset == 0, length == made.size {
                return made.digest.headerValue
            }
            guard upper - lower < 4 << 20, let made = bytes(lower, upper) else { return nil }
            return ReprDigest(of: made).headerValue
        })
        return MediaResponse.ranged(body, digest: digest, contentType: contentType)
    }

    /// A WebVTT segment of CMAF HLS: the fixture's, its timestamp map on the CMAF timeline.
    private func cmafSubtitleResponse(_ video: CatalogVideo, _ rendition: RenditionRef, number: Int) throws(HTTPError) -> HTTPResponse {
        let files = HLSPackager.files(video, rendition)
        let file = files[number % files.count]
        let reference = try cmafTrack(video, video.videoRenditions[0])
        guard let origin = cmaf.origin(ofPackaged: video.asset), let fixture = try? [UInt8](Data(contentsOf: URL(fileURLWithPath: file.path))) else {
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "cannot read the subtitle segment")
        }
        let passLength90k = reference.passLength * 90000 / UInt64(reference.format.timescale)
        let body = HLSPackager.cmafSubtitleSegment(fixture, origin: origin, pass: number / files.count, passLength90k: passLength90k)
        let digest = cmaf.digest(of: body, id: "\(video.asset.name)|subtitles|\(rendition.index)|\(number)")
        return MediaResponse.bytes(body, digest: digest, contentType: "text/vtt; charset=utf-8")
    }
}
