/// A media playlist: the segments of one rendition.
///
/// Tags that apply from a segment onwards (`EXT-X-KEY`, `EXT-X-MAP`) are stored on the segment they
/// precede, so writing reproduces where they stood; `keyInEffect(forSegmentAt:)` answers which key
/// actually applies to a segment.
public struct MediaPlaylist: Sendable, Hashable {
    /// `EXT-X-VERSION`, if present.
    public var version: Int?
    /// `EXT-X-TARGETDURATION` in seconds.
    public var targetDuration: Int
    /// `EXT-X-MEDIA-SEQUENCE` (always written; 0 when the text had none).
    public var mediaSequence: Int
    /// `EXT-X-DISCONTINUITY-SEQUENCE`, if present.
    public var discontinuitySequence: Int?
    /// `EXT-X-PLAYLIST-TYPE`, if present.
    public var playlistType: PlaylistType?
    /// Whether `EXT-X-INDEPENDENT-SEGMENTS` is present.
    public var independentSegments: Bool
    /// The segments, in order.
    public var segments: [Segment]
    /// Tags after the last segment's URI (other than `EXT-X-ENDLIST`), as raw lines.
    public var trailingTags: [String]
    /// Whether `EXT-X-ENDLIST` is present (the playlist is complete).
    public var endList: Bool

    /// Creates a media playlist.
    public init(
        version: Int? = nil, targetDuration: Int, mediaSequence: Int = 0, discontinuitySequence: Int? = nil,
        playlistType: PlaylistType? = nil, independentSegments: Bool = false, segments: [Segment] = [],
        trailingTags: [String] = [], endList: Bool = false
    ) {
        self.version = version
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.playlistType = playlistType
        self.independentSegments = independentSegments
        self.segments = segments
        self.trailingTags = trailingTags
        self.endList = endList
    }

    /// The sum of the segment durations, in seconds.
    public var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }

    /// The `EXT-X-KEY` tags in effect for a segment: those on the closest segment at or before it that has any.
    ///
    /// Like the other `…forSegmentAt:` helpers, `index` must be a valid index of `segments`.
    public func keysInEffect(forSegmentAt index: Int) -> [EncryptionKey] {
        segments[...index].last { !$0.keys.isEmpty }?.keys ?? []
    }

    /// The key that encrypts a segment, or nil when it is clear (no key, or `METHOD=NONE`).
    public func keyInEffect(forSegmentAt index: Int) -> EncryptionKey? {
        keysInEffect(forSegmentAt: index).first { $0.method != .none }
    }

    /// The `EXT-X-MAP` in effect for a segment: the one on the closest segment at or before it.
    public func mapInEffect(forSegmentAt index: Int) -> InitializationSection? {
        segments[...index].last { $0.map != nil }?.map
    }

    /// A segment's byte range with the offset filled in (an omitted offset continues the previous range);
    /// nil without a byte range, or when the ranges before it add up past `Int.max`.
    public func resolvedByteRange(forSegmentAt index: Int) -> ByteRange? {
        guard let range = segments[index].byteRange else { return nil }
        if range.offset != nil { return range }
        // Walk back over the consecutive sub-ranges of the same resource until one states its offset.
        // Lengths and offsets are whatever the playlist says: add them without trapping.
        var offset = 0
        var overflow = false
        var previousIndex = index - 1
        while previousIndex >= 0, segments[previousIndex].uri == segments[index].uri,
              let previous = segments[previousIndex].byteRange {
            (offset, overflow) = offset.addingReportingOverflow(previous.length)
            if overflow { return nil }
            if let start = previous.offset {
                (offset, overflow) = offset.addingReportingOverflow(start)
                if overflow { return nil }
                break
            }
            previousIndex -= 1
        }
        return ByteRange(length: range.length, offset: offset)
    }
}

/// `EXT-X-PLAYLIST-TYPE`.
public enum PlaylistType: String, Sendable, Hashable, CaseIterable {
    /// The playlist never changes.
    case vod = "VOD"
    /// Segments are only ever appended.
    case event = "EVENT"
}

/// One media segment: its `EXTINF`, URI and the tags written before it.
public struct Segment: Sendable, Hashable {
    /// `EXTINF` duration in seconds (written with three decimals).
    public var duration: Double
    /// `EXTINF` title, if any.
    public var title: String?
    /// The segment URI.
    public var uri: String
    /// `EXT-X-BYTERANGE`, if the segment is a sub-range of `uri`.
    public var byteRange: ByteRange?
    /// Whether `EXT-X-DISCONTINUITY` precedes the segment.
    public var discontinuity: Bool
    /// `EXT-X-KEY` tags written right before this segment (usually one; several for several `KEYFORMAT`s).
    public var keys: [EncryptionKey]
    /// `EXT-X-MAP` written right before this segment.
    public var map: InitializationSection?
    /// Other tags written before this segment, as raw lines, in order.
    public var otherTags: [String]

    /// Creates a segment.
    public init(
        duration: Double, title: String? = nil, uri: String, byteRange: ByteRange? = nil,
        discontinuity: Bool = false, keys: [EncryptionKey] = [], map: InitializationSection? = nil,
        otherTags: [String] = []
    ) {
        self.duration = duration
        self.title = title
        self.uri = uri
        self.byteRange = byteRange
        self.discontinuity = discontinuity
        self.keys = keys
        self.map = map
        self.otherTags = otherTags
    }

    /// Creates a segment preceded by one `EXT-X-KEY`.
    public init(
        duration: Double, title: String? = nil, uri: String, byteRange: ByteRange? = nil,
        discontinuity: Bool = false, key: EncryptionKey?, map: InitializationSection? = nil, otherTags: [String] = []
    ) {
        self.init(
            duration: duration, title: title, uri: uri, byteRange: byteRange, discontinuity: discontinuity,
            keys: key.map { [$0] } ?? [], map: map, otherTags: otherTags)
    }

    /// The first `EXT-X-KEY` written before this segment; setting replaces them all.
    public var key: EncryptionKey? {
        get { keys.first }
        set { keys = newValue.map { [$0] } ?? [] }
    }
}
