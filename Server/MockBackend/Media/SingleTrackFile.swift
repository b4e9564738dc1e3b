import CMAF

/// The byte-range form of a CMAF rendition, one file per track as on-demand packagers write it
/// (`track.mp4`): its init segment, a `sidx` with one reference per media segment, then every
/// media segment in order, each byte for byte its `{n}.m4s`. HLS addresses it with
/// `EXT-X-MAP:BYTERANGE` and `EXT-X-BYTERANGE`, DASH with `SegmentBase` (`Initialization`,
/// `indexRange`).
///
/// Laid out, never written whole: the marathon's top rendition would be 700 MB. A range is made
/// from the segments it covers. A segment's size depends only on its place in a pass (the
/// sequence number and `tfdt` are fixed-width, the encryption keeps lengths and its auxiliary
/// information has the same shape in every pass), except a pass's last segment before the last
/// pass, which leaves out an audio frame (`RepeatedTrack`): so one pass's sizes and that one
/// shorter segment give every offset.
struct SingleTrackFile: Sendable {
    /// Its file name beside the rendition's segments.
    static let name = "track.mp4"

    /// The init segment followed by the `sidx`.
    let header: [UInt8]
    /// The init segment's length (the `sidx` follows it).
    let initLength: Int
    /// The size of each segment of a pass, as the last pass serves it.
    let passSizes: [Int]
    /// The size of a pass's last segment in the passes before the last (with one pass, unused).
    let shortenedLast: Int
    /// How many passes the file holds.
    let passCount: Int
    /// The whole file's length.
    let size: UInt64

    /// Lays out the file of a track of `passSizes.count * passCount` segments; `span(i)` is
    /// segment `i`'s duration on the timeline (what playlists list), in `timescale` ticks.
    init(initSegment: [UInt8], timescale: UInt32, earliestPresentationTime: UInt64, passSizes: [Int], shortenedLast: Int,
         passCount: Int, span: (Int) -> UInt64) {
        self.initLength = initSegment.count
        self.passSizes = passSizes
        self.shortenedLast = shortenedLast
        self.passCount = passCount
        let count = passSizes.count * passCount
        var references: [SegmentIndex.Reference] = []
        references.reserveCapacity(count)
        for index in 0 ..< count {
            let length = Self.length(index, passSizes: passSizes, shortenedLast: shortenedLast, passCount: passCount)
            references.append(SegmentIndex.Reference(size: UInt32(length), duration: UInt32(clamping: span(index))))
        }
        header = initSegment + SegmentIndex.bytes(timescale: timescale, earliestPresentationTime: earliestPresentationTime,
                                                  references: references)
        let passBytes = passSizes.reduce(0, +)
        size = UInt64(header.count) + UInt64(passBytes) * UInt64(passCount) - UInt64(passCount - 1) * UInt64((passSizes.last ?? 0) - shortenedLast)
    }

    /// How many media segments the file holds.
    var count: Int { passSizes.count * passCount }

    /// The `sidx`'s byte range (offset, length).
    var indexRange: (offset: UInt64, length: UInt64) { (UInt64(initLength), UInt64(header.count - initLength)) }

    /// Where segment `index` lies in the file (offset, length).
    func range(of index: Int) -> (offset: UInt64, length: UInt64) {
        let pass = index / passSizes.count, position = index % passSizes.count
        let offset = UInt64(header.count) + UInt64(pass) * UInt64(shortPassBytes) + UInt64(passSizes.prefix(position).reduce(0, +))
        return (offset, UInt64(Self.length(index, passSizes: passSizes, shortenedLast: shortenedLast, passCount: passCount)))
    }

    /// The segment that holds byte `offset` (at or past the header).
    func segment(at offset: UInt64) -> Int {
        let within = offset - UInt64(header.count)
        let pass = min(Int(within / UInt64(shortPassBytes)), passCount - 1)
        var rest = within - UInt64(pass) * UInt64(shortPassBytes)
        for position in passSizes.indices {
            let length = UInt64(Self.length(pass * passSizes.count + position, passSizes: passSizes, shortenedLast: shortenedLast,
                                            passCount: passCount))
            if rest < length { return pass * passSizes.count + position }
            rest -= length
        }
        return count - 1
    }

    /// The bytes of a pass before the last.
    private var shortPassBytes: Int { passSizes.reduce(0, +) - (passSizes.last ?? 0) + shortenedLast }

    private static func length(_ index: Int, passSizes: [Int], shortenedLast: Int, passCount: Int) -> Int {
        let position = index % passSizes.count
        return position == passSizes.count - 1 && index / passSizes.count < passCount - 1 ? shortenedLast : passSizes[position]
    }

    /// A run of bytes of the file: of the header (init segment and `sidx`), or of one media segment.
    enum Piece: Equatable {
        /// Bytes of `header`.
        case header(Range<Int>)
        /// `length` bytes from `offset` in media segment `index`.
        case segment(index: Int, offset: UInt64, length: UInt64)
    }

    /// The pieces bytes `lower ... upper` of the file are made of, in order.
    func pieces(_ lower: UInt64, _ upper: UInt64) -> [Piece] {
        var pieces: [Piece] = []
        var position = lower
        let headerEnd = UInt64(header.count)
        if position < headerEnd {
            pieces.append(.header(Int(position) ..< Int(min(upper + 1, headerEnd))))
            position = headerEnd
        }
        while position <= upper {
            let index = segment(at: position)
            let (offset, length) = range(of: index)
            let end = min(upper + 1, offset + length)
            pieces.append(.segment(index: index, offset: position - offset, length: end - position))
            position = end
        }
        return pieces
    }
}
