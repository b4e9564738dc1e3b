import Foundation
import MicroHTTP
import WireModels

/// The thumbnail track: its WebVTT (signed, like Brightcove's), its sprites (public, like
/// posters) and, for HLS v7, its image playlist (Roku's HLS image media playlist).
extension MockBackendApp {
    static func addThumbnailRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/thumbnail/v1/:account/:video/:track/thumbnail.webvtt") { app, request, p in
            try app.links.verify(request, now: app.clock.now())
            guard let video = app.catalog.video(uuid: p["video"]), video.accountID == p["account"],
                  p["track"] == StableID.uuid("thumbnails:\(video.id)"), let track = ThumbnailTrack(video)
            else { throw HTTPError.notFound(request) }
            let links = app.links(for: request)
            let now = app.clock.now()
            let (body, digest) = app.cache.media(for: "thumbnails|\(links.base)|\(video.id)|\(video.generation)",
                                                 validUntil: now.addingTimeInterval(3600), now: now) {
                Array(track.webVTT { links.url(Links.spritePath(video, track, number: $0)) }.utf8)
            }
            return MediaResponse.bytes(body, digest: digest, contentType: "text/vtt; charset=utf-8")
        }
        router.add(["GET"], "/image/v1/sprite/:account/:video/:interval/thumbnails/:layout/:tile") { app, request, p in
            guard let video = app.catalog.video(uuid: p["video"]), video.accountID == p["account"], let track = ThumbnailTrack(video),
                  p["interval"] == Links.spriteIntervalLabel(track), p["layout"] == track.layout,
                  p["tile"].hasPrefix("tile_"), p["tile"].hasSuffix(".jpg"),
                  let number = Int(p["tile"].dropFirst(5).dropLast(4)), "tile_\(number).jpg" == p["tile"],
                  let path = track.spritePath(number: number)
            else { throw HTTPError.notFound(request) }
            return try MediaResponse.fixtureFile(path, of: video, contentType: "image/jpeg", request)
        }
        router.add(["GET"], "/manifest/v2/hls/v7/:protection/:codecs/:account/:video/thumbnails/:label/images.m3u8") { app, request, p in
            let video = try app.cmafVideo(request, p, format: .cmafHLS)
            guard let track = ThumbnailTrack(video), track.hasImageStream else { throw HTTPError.notFound(request) }
            let links = app.links(for: request)
            let body = Array(HLSPackager.imagePlaylist(track) { links.url(Links.spritePath(video, track, number: $0)) }.utf8)
            return MediaResponse.bytes(body, digest: app.cmaf.digest(of: body, id: "images|\(links.base)|\(video.id)|\(video.generation)"),
                                       contentType: playlistContentType)
        }
    }
}

extension HLSPackager {
    /// The image media playlist of a thumbnail track (Roku's "HLS image media playlists":
    /// `EXT-X-IMAGES-ONLY`, one sprite per segment with its `EXT-X-TILES` layout).
    static func imagePlaylist(_ track: ThumbnailTrack, spriteURL: (Int) -> String) -> String {
        let duration = track.spriteDuration
        var text = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:\(Int(duration.rounded(.up)))\n#EXT-X-MEDIA-SEQUENCE:1\n"
        text += "#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-IMAGES-ONLY\n"
        let total = track.video.asset.duration * Double(track.video.repeatCount)
        for number in 1 ... track.spriteCount {
            let start = Double(number - 1) * duration
            text += String(format: "#EXTINF:%.3f,\n", min(duration, total - start))
            text += "#EXT-X-TILES:RESOLUTION=\(track.thumbnails.width)x\(track.thumbnails.height),LAYOUT=\(track.layout),"
                + String(format: "DURATION=%.3f\n", track.thumbnails.interval)
            text += spriteURL(number) + "\n"
        }
        return text + "#EXT-X-ENDLIST\n"
    }
}
