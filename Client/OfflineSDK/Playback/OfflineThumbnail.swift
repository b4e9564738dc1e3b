public import Foundation

/// One scrubbing preview of a downloaded thumbnail track (``MediaSelections/thumbnails``): the
/// image to show while the playhead is between ``start`` and ``end``, a tile of a sprite file
/// in the package. The same track is served by the loopback server for a player's thumbnail
/// plugin (``OfflinePlayback/thumbnailTrackURL()``).
public struct OfflineThumbnail: Sendable, Equatable {
    /// A tile of a sprite image, in pixels from its top left corner (WebVTT's `#xywh=`).
    public struct Tile: Sendable, Equatable {
        /// Pixels from the image's left edge.
        public var x: Int
        /// Pixels from the image's top edge.
        public var y: Int
        /// The tile's width in pixels.
        public var width: Int
        /// The tile's height in pixels.
        public var height: Int

        /// Creates a tile.
        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// When the preview starts, in seconds from the video's start.
    public var start: TimeInterval
    /// When it ends (the next one's start).
    public var end: TimeInterval
    /// The sprite image file in the package (JPEG as Dynamic Delivery makes them).
    public var imageFile: URL
    /// The tile of `imageFile` to show; nil for the whole image.
    public var tile: Tile?

    /// Creates a thumbnail.
    public init(start: TimeInterval, end: TimeInterval, imageFile: URL, tile: Tile?) {
        self.start = start
        self.end = end
        self.imageFile = imageFile
        self.tile = tile
    }
}
