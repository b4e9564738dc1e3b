import Foundation
import MicroHTTP
import WireModels
import Logging

/// HLS: master and media playlists generated from the catalog, and the segments behind
/// them. Every URL carries a `fastly_token` for its own path.
extension MockBackendApp {
    static let playlistContentType = "application/vnd.apple.mpegurl"

    static func addManifestRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/manifest/v1/hls/v5/:protection/:account/:video/:label/master.m3u8") { app, request, p in
            let video = try app.mediaVideo(request, p)
            guard p["label"] == Links.segmentLabel(video) else { throw HTTPError.notFound(request) }
            return app.masterPlaylistResponse(video, request)
        }
        router.add(["GET"], "/manifest/v1/hls/v5/:protection/:account/:video/:rendition/:label/rendition.m3u8") { app, request, p in
            let video = try app.mediaVideo(request, p)
            // HEVC renditions are CMAF only (Apple's HLS takes HEVC in fMP4, never TS).
            guard p["label"] == Links.segmentLabel(video), let rendition = app.catalog.rendition(uuid: p["rendition"], of: video),
                  rendition.kind != .hevc else {
                throw HTTPError.notFound(request)
            }
            let now = app.clock.now()
            let expiry = Links.expiry(now: now, ttl: app.configuration.mediaTokenTTL)
            let links = app.links(for: request)
            let (body, digest) = app.cache.media(for: "media|\(links.base)|\(rendition.uuid)|\(video.generation)|\(expiry.timeIntervalSince1970)",
                                                 validUntil: Links.bucketEnd(now: now, ttl: app.configuration.mediaTokenTTL), now: now) {
                Array(app.packager.media(video, rendition, key: app.contentKeys[video.id], keyExpiresAt: expiry,
                                         expiresAt: expiry, links: links).render().utf8)
            }
            return MediaResponse.bytes(body, digest: digest, contentType: playlistContentType)
        }
        router.add(["GET"], "/media/v1/hls/v5/:protection/:account/:video/:rendition/:segment") { app, request, p in
            let video = try app.mediaVideo(request, p)
            guard let rendition = app.catalog.rendition(uuid: p["rendition"], of: video), rendition.kind != .hevc,
                  let sequence = MockBackendApp.segmentNumber(p["segment"], kind: rendition.kind),
                  sequence < video.segmentCount
            else { throw HTTPError.notFound(request) }
            return try app.segmentResponse(video, rendition, sequence: sequence)
        }
    }

    /// The master playlist of `video`, with rendition URLs on the base of the listener `request`
    /// came in on: the signed master URL's answer and static URL delivery's `master.m3u8`.
    func masterPlaylistResponse(_ video: CatalogVideo, _ request: HTTPRequest) -> HTTPResponse {
        let now = clock.now()
        let ttl = catalog.accounts[video.accountID]?.manifestTokenTTL ?? 21600
        let expiry = Links.expiry(now: now, ttl: ttl)
        let links = links(for: request)
        let (body, digest) = cache.media(for: "master|\(links.base)|\(video.id)|\(video.generation)|\(expiry.timeIntervalSince1970)",
                                         validUntil: Links.bucketEnd(now: now, ttl: ttl), now: now) {
            Array(packager.master(video, key: contentKeys[video.id], expiresAt: expiry, links: links).render().utf8)
        }
        return MediaResponse.bytes(body, digest: digest, contentType: MockBackendApp.playlistContentType)
    }

    /// Shared checks for manifest and media URLs: a valid token for this path, a video with
    /// this uuid in this account and protection.
    func mediaVideo(_ request: HTTPRequest, _ p: RouteParameters) throws(HTTPError) -> CatalogVideo {
        try links.verify(request, now: clock.now())
        guard let video = catalog.video(uuid: p["video"]), video.accountID == p["account"],
              video.protection.rawValue == p["protection"]
        else { throw HTTPError.notFound(request) }
        return video
    }

    /// "12.ts" → 12 for audio/video, "12.vtt" for subtitles; anything else is nil.
    static func segmentNumber(_ name: String, kind: RenditionKind) -> Int? {
        let suffix = kind == .subtitles ? ".vtt" : ".ts"
        guard name.hasSuffix(suffix) else { return nil }
        let digits = name.dropLast(suffix.count)
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy(\.isASCII), let value = Int(digits), value >= 0 else { return nil }
        return value
    }

    private func segmentResponse(_ video: CatalogVideo, _ rendition: RenditionRef, sequence: Int) throws(HTTPError) -> HTTPResponse {
        let files = HLSPackager.files(video, rendition)
        let fixtureIndex = sequence % files.count
        let file = files[fixtureIndex]
        let contentType = rendition.kind == .subtitles ? "text/vtt; charset=utf-8" : "video/mp2t"
        if video.protection != .clear, rendition.kind != .subtitles {
            // Protected media is never served clear, not even when its key went missing.
            guard let key = contentKeys[video.id] else {
                throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "no content key for this video")
            }
            let cacheName = "\(rendition.kind.rawValue)-\(rendition.index)-\(fixtureIndex).ts"
            do {
                let segment = video.protection == .fairplay
                    ? try encryptor.sampleAESSegment(source: file.path, cacheName: cacheName, key: key)
                    : try encryptor.aes128Segment(source: file.path, cacheName: cacheName, key: key)
                return MediaResponse.file(path: segment.path, size: segment.size, digest: segment.digest, contentType: contentType)
            } catch {
                logger.error("cannot encrypt \(file.path): \(error)")
            }
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "cannot prepare the encrypted segment")
        }
        do {
            let digest = try video.asset.fileDigests.digest(ofFile: file.path)
            return MediaResponse.file(path: file.path, size: file.size, digest: digest, contentType: contentType)
        } catch {
            logger.error("cannot read \(file.path): \(error)")
        }
        throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "cannot read the segment")
    }
}
