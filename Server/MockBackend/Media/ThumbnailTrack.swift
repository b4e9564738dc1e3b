import Foundation

/// The thumbnail track of a video (Dynamic Delivery's scrubbing previews, the Playback API's
/// `text_tracks` entry labelled `thumbnails`): a WebVTT file of one cue per tile, each cue an
/// image URL with a `#xywh=` fragment picking the tile out of its sprite, over the whole video
/// (the asset's tiles again for every pass). The sprites are public, like posters; tile URLs
/// name the sprite by its number within a pass, so a player fetches each sprite once.
///
/// HLS v7 and DASH also list the sprites as an image track (Roku's `EXT-X-IMAGE-STREAM-INF`
/// image playlist, DASH-IF's `thumbnail_tile` adaptation set), which needs sprites that follow
/// one another on the timeline: offered when the video plays its asset once or a pass is a
/// whole number of sprites, as the fixture's is.
struct ThumbnailTrack: Sendable {
    var video: CatalogVideo
    var thumbnails: MediaAsset.Thumbnails

    init?(_ video: CatalogVideo) {
        guard let thumbnails = video.asset.thumbnails else { return nil }
        self.video = video
        self.thumbnails = thumbnails
    }

    /// Tiles in one pass: one per `interval` seconds of it.
    var tilesPerPass: Int { max(1, Int((video.asset.duration / thumbnails.interval).rounded(.up))) }
    /// Sprites in one pass.
    var spritesPerPass: Int { (tilesPerPass + thumbnails.tilesPerSprite - 1) / thumbnails.tilesPerSprite }
    /// Whether sprites follow one another on the video's timeline (see the type's note).
    var hasImageStream: Bool { video.repeatCount == 1 || tilesPerPass % thumbnails.tilesPerSprite == 0 }
    /// Seconds one sprite covers.
    var spriteDuration: Double { thumbnails.interval * Double(thumbnails.tilesPerSprite) }
    /// Sprites over the whole video, numbered from 1 (DASH's startNumber, the image playlist's sequence).
    var spriteCount: Int { hasImageStream ? spritesPerPass * video.repeatCount : spritesPerPass }
    /// A sprite's size in pixels.
    var spriteWidth: Int { thumbnails.width * thumbnails.columns }
    var spriteHeight: Int { thumbnails.height * thumbnails.rows }
    /// `3x2`.
    var layout: String { "\(thumbnails.columns)x\(thumbnails.rows)" }

    /// The asset's sprite file behind sprite `number` (1-based, over the video's timeline).
    func spritePath(number: Int) -> String? {
        guard number >= 1, number <= spriteCount else { return nil }
        let index = (number - 1) % spritesPerPass
        return index < thumbnails.spritePaths.count ? thumbnails.spritePaths[index] : nil
    }

    /// The bits per second of the sprites, as the Playback API's `bandwidth` and the manifests give it.
    var bandwidth: Int {
        let seconds = video.asset.duration
        return seconds > 0 ? Int((Double(thumbnails.spriteBytes * 8) / seconds).rounded(.up)) : 0
    }

    /// The WebVTT body; `spriteURL` gives a sprite's URL from its number.
    func webVTT(spriteURL: (Int) -> String) -> String {
        var text = "WEBVTT\n"
        let pass = video.asset.duration
        for passIndex in 0 ..< video.repeatCount {
            for tile in 0 ..< tilesPerPass {
                let start = Double(passIndex) * pass + Double(tile) * thumbnails.interval
                let end = min(start + thumbnails.interval, Double(passIndex + 1) * pass)
                let sprite = tile / thumbnails.tilesPerSprite + 1
                let position = tile % thumbnails.tilesPerSprite
                let x = position % thumbnails.columns * thumbnails.width, y = position / thumbnails.columns * thumbnails.height
                text += "\n\(ThumbnailTrack.time(start)) --> \(ThumbnailTrack.time(end))\n"
                text += "\(spriteURL(sprite))#xywh=\(x),\(y),\(thumbnails.width),\(thumbnails.height)\n"
            }
        }
        return text
    }

    /// `HH:MM:SS.mmm`.
    static func time(_ seconds: Double) -> String {
        let ms = Int((seconds * 1000).rounded())
        return String(format: "%02d:%02d:%02d.%03d", ms / 3_600_000, ms / 60000 % 60, ms / 1000 % 60, ms % 1000)
    }
}
