/// Joins the clear CMAF tracks of a package (one video, one or more audio, each a track file
/// of its own, usually all track 1) into one fragmented MP4, for an export: one header that
/// describes every track, then each track's fragments renumbered to it.
///
/// ```swift
/// var join = try FragmentedMP4Join(initSegments: [videoInit, audioInit], duration: 7_200_000, timescale: 1000)
/// var file = join.initSegment
/// for n in 0 ..< count {                       // interleaved, so a reader never seeks far
///     file += try join.segment(video[n], track: 0)
///     file += try join.segment(audio[n], track: 1)
/// }
/// ```
///
/// The header is `ftyp` then `moov`: the first input's `mvhd` (its timescale is the movie's)
/// with the total duration and next_track_ID N + 1, each input's one `trak` with `tkhd`
/// track_ID i + 1 (durations moved to the movie timescale when the input's differed; audio
/// tracks in one alternate group, the first of each kind enabled), and
/// `mvex` with an `mehd` of the total duration (what ffprobe reports for a fragmented file)
/// and each input's `trex`, renumbered. Segments lose `styp`, `sidx` and anything else
/// between fragments; each `moof` gets the next sequence number of the file and the track's id.
package struct FragmentedMP4Join: Sendable {
    /// The joined file's header: write it first.
    package let initSegment: [UInt8]
    /// How many tracks the header describes (track i is track_ID i + 1).
    package let trackCount: Int
    private var sequenceNumber: UInt32 = 0

    /// A join of the clear init segments `initSegments` (one track each, in the order the
    /// file numbers them) lasting `duration` ticks of `timescale` per second.
    package init(initSegments: [[UInt8]], duration: UInt64, timescale: UInt32) throws(CMAFError) {
        guard !initSegments.isEmpty else { throw CMAFError(.unsupportedStream, "a join needs at least one track") }
        guard timescale > 0 else { throw CMAFError(.unsupportedStream, "a duration needs a timescale above 0") }
        var movie: (header: [UInt8], timescale: UInt32)?
        var tracks: [[UInt8]] = []
        var handlers: Set<FourCC> = []
        var extends: [[UInt8]] = []
        for (index, bytes) in initSegments.enumerated() {
            let trackID = UInt32(index + 1)
            var top = BoxIterator(bytes)
            guard let moov = try top.first("moov") else { throw CMAFError(.malformedBox, "init segment \(index) has no 'moov'") }
            var header: (box: Box, timescale: UInt32)?
            var track: Box?
            var trackExtends: Box?
            var children = BoxIterator(bytes, in: moov.body)
            while let box = try children.next() {
                switch box.type {
                case "mvhd":
                    var reader = FieldReader(bytes, body: box)
                    header = (box, try reader.u32AfterTimes("timescale"))
                case "trak":
                    guard track == nil else { throw CMAFError(.unsupportedStream, "init segment \(index) describes more than one track") }
                    track = box
                case "mvex":
                    var inner = BoxIterator(bytes, in: box.body)
                    trackExtends = try inner.first("trex")
                default:
                    continue
                }
            }
            guard let header, header.timescale > 0 else { throw CMAFError(.malformedBox, "init segment \(index) has no usable 'mvhd'") }
            guard let track else { throw CMAFError(.malformedBox, "init segment \(index) has no 'trak'") }
            if movie == nil {
                movie = (try Self.movieHeader(bytes, header.box, duration: Self.rescale(duration, from: timescale, to: header.timescale),
                                              nextTrackID: UInt32(initSegments.count + 1)), header.timescale)
            }
            let movieTimescale = movie?.timescale ?? header.timescale
            let handler = try Self.handler(bytes, track)
            tracks.append(try Self.track(bytes, track, trackID: trackID, from: header.timescale, to: movieTimescale,
                                         enabled: handlers.insert(handler).inserted, alternateGroup: handler == "soun" ? 1 : 0))
            if let trackExtends {
                try FieldReader(bytes, body: trackExtends).need(8, "track_ID")
                extends.append(Self.copy(bytes, trackExtends, patching: [(trackExtends.body.lowerBound + 4, 4, UInt64(trackID))]))
            } else {
                var writer = BoxWriter()
                writer.fullBox("trex") { trex in
                    trex.u32(trackID); trex.u32(1); trex.u32(0); trex.u32(0); trex.u32(0)
                }
                extends.append(writer.bytes)
            }
        }
        let movieTimescale = movie?.timescale ?? timescale
        var writer = BoxWriter(capacity: 4096)
        writer.box("ftyp") { ftyp in
            ftyp.fourCC("iso6")
            ftyp.u32(0)
            for brand in ["iso6", "isom", "mp41"] { ftyp.fourCC(brand) }
        }
        writer.box("moov") { moov in
            moov.append(movie?.header ?? [])
            for track in tracks { moov.append(track) }
            moov.box("mvex") { mvex in
                mvex.fullBox("mehd", version: 1) { $0.u64(Self.rescale(duration, from: timescale, to: movieTimescale)) }
                for trex in extends { mvex.append(trex) }
            }
        }
        initSegment = writer.bytes
        trackCount = initSegments.count
    }

    /// Media segment `bytes` of track `track` (0 ..< trackCount) for the joined file: its
    /// `moof`/`mdat` pairs, each `moof` numbered on from the last one this join gave and each
    /// `tfhd` naming track `track + 1`. Segments must be clear (`ProtectionRemoval.clearSegment`)
    /// and their data offsets relative to the `moof` (CMAF's default-base-is-moof).
    package mutating func segment(_ bytes: [UInt8], track: Int) throws(CMAFError) -> [UInt8] {
        guard (0 ..< trackCount).contains(track) else { throw CMAFError(.unsupportedStream, "track \(track) of a join of \(trackCount)") }
        var edits = BoxEdits()
        var next = sequenceNumber
        var sawFragment = false
        var top = BoxIterator(bytes)
        while let box = try top.next() {
            switch box.type {
            case "moof":
                sawFragment = true
                next &+= 1
                var children = BoxIterator(bytes, in: box.body)
                while let child = try children.next() {
                    switch child.type {
                    case "mfhd":
                        try FieldReader(bytes, body: child).need(8, "sequence number")
                        edits.patch(at: child.body.lowerBound + 4, width: 4, .constant(UInt64(next)))
                    case "traf":
                        var fragment = BoxIterator(bytes, in: child.body)
                        guard let header = try fragment.first("tfhd") else { throw CMAFError(.malformedBox, "a 'traf' has no 'tfhd'") }
                        var reader = FieldReader(bytes, body: header)
                        let (_, flags) = try reader.versionAndFlags()
                        guard flags & 0x000001 == 0 else {
                            throw CMAFError(.unsupportedStream, "a 'tfhd' with a base data offset into its own file cannot be moved into another")
                        }
                        _ = try reader.u32("track_ID")
                        edits.patch(at: header.body.lowerBound + 4, width: 4, .constant(UInt64(track + 1)))
                    default:
                        continue
                    }
                }
            case "mdat":
                continue
            default:
                edits.remove(box.range)
            }
        }
        guard sawFragment else { throw CMAFError(.malformedBox, "the segment has no 'moof'") }
        let output = try edits.apply(to: bytes).bytes
        sequenceNumber = next
        return output
    }

    /// `mvhd` with `duration` (movie ticks) and `nextTrackID`.
    private static func movieHeader(_ bytes: [UInt8], _ box: Box, duration: UInt64, nextTrackID: UInt32) throws(CMAFError) -> [UInt8] {
        var reader = FieldReader(bytes, body: box)
        let (version, _) = try reader.versionAndFlags()
        let durationField = box.body.lowerBound + (version == 1 ? 24 : 16)
        try reader.need(version == 1 ? 108 : 96, "fields")
        return copy(bytes, box, patching: [(durationField, version == 1 ? 8 : 4, version == 1 ? duration : min(duration, UInt64(UInt32.max))),
                                           (box.end - 4, 4, UInt64(nextTrackID))])
    }

    /// The handler type (`vide`, `soun`…) of a `trak`.
    private static func handler(_ bytes: [UInt8], _ track: Box) throws(CMAFError) -> FourCC {
        var children = BoxIterator(bytes, in: track.body)
        guard let media = try children.first("mdia") else { throw CMAFError(.malformedBox, "a 'trak' has no 'mdia'") }
        var inner = BoxIterator(bytes, in: media.body)
        guard let handler = try inner.first("hdlr") else { throw CMAFError(.malformedBox, "an 'mdia' has no 'hdlr'") }
        var reader = FieldReader(bytes, body: handler)
        try reader.skip(8, "version, flags and pre_defined")
        return FourCC(try reader.u32("handler type"))
    }

    /// A `trak` renumbered to `trackID`, its `tkhd` and `elst` durations moved from the input's
    /// movie timescale to the joined file's. As ffmpeg's muxer marks them, audio tracks share
    /// alternate group 1 (a player plays one of them, not all mixed) and only the first track of
    /// each kind is enabled (the others are there to switch to).
    private static func track(_ bytes: [UInt8], _ box: Box, trackID: UInt32, from: UInt32, to: UInt32,
                              enabled: Bool, alternateGroup: UInt16) throws(CMAFError) -> [UInt8] {
        var fields: [Field] = []
        var sawHeader = false
        var children = BoxIterator(bytes, in: box.body)
        while let child = try children.next() {
            switch child.type {
            case "tkhd":
                sawHeader = true
                var reader = FieldReader(bytes, body: child)
                let (version, flags) = try reader.versionAndFlags()
                fields.append((child.body.lowerBound + 1, 3, UInt64(enabled ? flags | 1 : flags & ~1)))
                try reader.skipTimes(version: version)
                fields.append((reader.position, 4, UInt64(trackID)))
                try reader.skip(8, "track_ID and reserved")
                let durationField = reader.position
                let duration = version == 1 ? try reader.u64("duration") : UInt64(try reader.u32("duration"))
                if from != to {
                    fields.append((durationField, version == 1 ? 8 : 4, rescale(duration, from: from, to: to, width: version == 1 ? 8 : 4)))
                }
                try reader.skip(10, "reserved and layer")
                fields.append((reader.position, 2, UInt64(alternateGroup)))
                _ = try reader.u16("alternate group")
            case "edts" where from != to:
                var edit = BoxIterator(bytes, in: child.body)
                guard let list = try edit.first("elst") else { continue }
                var reader = FieldReader(bytes, body: list)
                let (version, _) = try reader.versionAndFlags()
                let count = Int(try reader.u32("entry count"))
                let width = version == 1 ? 8 : 4
                try reader.need(count * (2 * width + 4), "\(count) edits")
                for _ in 0 ..< count {
                    let field = reader.position
                    let duration = version == 1 ? try reader.u64() : UInt64(try reader.u32())
                    fields.append((field, width, rescale(duration, from: from, to: to, width: width)))
                    try reader.skip(width + 4)
                }
            default:
                continue
            }
        }
        guard sawHeader else { throw CMAFError(.malformedBox, "a 'trak' has no 'tkhd'") }
        return copy(bytes, box, patching: fields)
    }

    /// A field to overwrite: its offset in the input, its width in bytes, its new value.
    private typealias Field = (offset: Int, width: Int, value: UInt64)

    /// `box`'s bytes with `fields` (each inside it: read through a `FieldReader` first) overwritten, big-endian.
    private static func copy(_ bytes: [UInt8], _ box: Box, patching fields: [Field]) -> [UInt8] {
        var output = Array(bytes[box.range])
        for field in fields where field.offset >= box.start && field.offset + field.width <= box.end {
            for index in 0 ..< field.width {
                output[field.offset - box.start + index] = UInt8(truncatingIfNeeded: field.value >> UInt64(8 * (field.width - 1 - index)))
            }
        }
        return output
    }

    /// `value` ticks of `from` per second in ticks of `to`, rounded, clamped to `width` bytes.
    static func rescale(_ value: UInt64, from: UInt32, to: UInt32, width: Int = 8) -> UInt64 {
        let limit = width >= 8 ? UInt64.max : (UInt64(1) << UInt64(width * 8)) - 1
        guard from != to, from > 0 else { return min(value, limit) }
        if width == 4, value == UInt64(UInt32.max) { return value } // "unknown" stays unknown
        let (high, low) = value.multipliedFullWidth(by: UInt64(to))
        let (quotient, remainder) = UInt64(from) > high ? UInt64(from).dividingFullWidth((high, low)) : (UInt64.max, 0)
        let rounded = remainder * 2 >= UInt64(from) && quotient < UInt64.max ? quotient + 1 : quotient
        return min(rounded, limit)
    }
}
