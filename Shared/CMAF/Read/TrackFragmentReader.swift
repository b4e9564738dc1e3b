/// Where one sample's encryption record (ISO/IEC 23001-7 7.2) lies in the input: in `senc`, or
/// where `saio` points, sized by `saiz`.
struct AuxiliaryRecord {
    /// The per-sample IV (`ivSize` bytes; 0 with a constant IV).
    var ivStart: Int
    var ivSize: Int
    /// The first subsample entry (6 bytes each, after the 16-bit count), and how many; a count
    /// of -1 means the record lists none (the whole sample is one protected range).
    var subsampleStart: Int
    var subsampleCount: Int
}

/// One `traf` as the decryptor needs it: every sample's bytes, its encryption record and the
/// encryption parameters that apply to it. Indices count in the input segment.
struct TrackFragmentPlan {
    /// Each sample's data.
    var samples: [Range<Int>] = []
    /// One per sample, or none when the fragment has no auxiliary information.
    var records: [AuxiliaryRecord] = []
    /// The parameters samples refer to: `tenc`'s defaults first, then the track's `seig`
    /// groups, then the fragment's own.
    var parameters: [SampleEncryptionDefaults] = []
    /// Each sample's index into `parameters`; nil when every sample has the defaults.
    var sampleParameters: [Int]?
    /// The fragment uses a sample entry that was clear: nothing to decrypt.
    var isClear = false
}

/// Reads a `traf` (ISO/IEC 14496-12 8.8) of a protected track: `tfhd`, the `trun`s, the
/// sample groups and `senc` (or `saiz`/`saio`), and records in `edits` what the clear segment
/// loses (`senc`, `saiz`/`saio` of encryption information, `seig` groups) and which offsets
/// and sizes must follow.
enum TrackFragmentReader {
    /// PIFF's sample encryption box (`uuid` A2394F52-5A9B-4F14-A244-6C427C648DF4, Smooth
    /// Streaming's `senc` before CENC), read the same way.
    static let piffSampleEncryption: [UInt8] = [0xA2, 0x39, 0x4F, 0x52, 0x5A, 0x9B, 0x4F, 0x14, 0xA2, 0x44, 0x6C, 0x42, 0x7C, 0x64, 0x8D, 0xF4]

    /// The plan of `traf` in `moof`, and where its data ends (the next `traf`'s base when
    /// that one names none). `implicitBase` is this one's base when `tfhd` names none: the
    /// `moof`'s start for the first `traf`, the previous one's data end after it.
    static func read(_ bytes: [UInt8], traf: Box, moof: Box, implicitBase: Int, protection: ProtectedTrackInfo,
                     edits: inout BoxEdits) throws(CMAFError) -> (plan: TrackFragmentPlan, dataEnd: Int) {
        var header: Box?
        var runs: [Box] = []
        var encryption: Box?
        var piff = false
        var sizes: [Box] = [], offsets: [Box] = [], groupings: [Box] = [], descriptions: [Box] = []
        var children = BoxIterator(bytes, in: traf.body)
        while let box = try children.next() {
            switch box.type {
            case "tfhd": header = box
            case "trun": runs.append(box)
            case "senc":
                if encryption == nil || piff { encryption = box; piff = false }
                edits.remove(box.range)
            case "uuid" where bytes[box.start + box.headerSize - 16 ..< box.start + box.headerSize].elementsEqual(piffSampleEncryption):
                if encryption == nil { encryption = box; piff = true }
                edits.remove(box.range)
            case "saiz": sizes.append(box)
            case "saio": offsets.append(box)
            case "sbgp":
                if try ProtectionRemoval.isEncryptionGrouping(bytes, box) { groupings.append(box); edits.remove(box.range) }
            case "sgpd":
                if try SampleEncryptionDefaults.sampleGroupEntries(bytes, sgpd: box) != nil { descriptions.append(box); edits.remove(box.range) }
            default: continue
            }
        }
        edits.resize(traf)
        guard let header else { throw CMAFError(.malformedBox, "a 'traf' at offset \(traf.start) has no 'tfhd'") }

        // tfhd (8.8.7): the track, the base of the data offsets, the defaults.
        var reader = FieldReader(bytes, body: header)
        let (_, headerFlags) = try reader.versionAndFlags()
        let trackID = try reader.u32("track_ID")
        guard trackID == protection.trackID else {
            throw CMAFError(.unsupportedStream, "a fragment of track \(trackID); the init segment describes track \(protection.trackID)")
        }
        var base = headerFlags & 0x020000 != 0 ? moof.start : implicitBase
        if headerFlags & 0x000001 != 0 {
            let field = reader.position
            let explicit = try reader.u64("base data offset")
            guard explicit <= UInt64(bytes.count) else {
                throw CMAFError(.malformedBox, "the base data offset \(explicit) lies past the segment's \(bytes.count) bytes")
            }
            base = Int(explicit)
            edits.patch(at: field, width: 8, .distance(from: 0, to: base))
        }
        let descriptionIndex = headerFlags & 0x000002 != 0 ? try reader.u32("sample description index") : protection.defaultDescriptionIndex
        if headerFlags & 0x000008 != 0 { _ = try reader.u32("default sample duration") }
        let defaultSize = headerFlags & 0x000010 != 0 ? try reader.u32("default sample size") : protection.defaultSampleSize

        // trun (8.8.8): each sample's place in the data.
        var plan = TrackFragmentPlan()
        var runStarts: [Int] = []
        var dataEnd = base
        for (index, run) in runs.enumerated() {
            var reader = FieldReader(bytes, body: run)
            let (_, flags) = try reader.versionAndFlags()
            let count = Int(try reader.u32("sample count"))
            var start = index == 0 ? base : dataEnd
            if flags & 0x000001 != 0 {
                let field = reader.position
                let offset = Int(Int32(bitPattern: try reader.u32("data offset")))
                start = base + offset
                edits.patch(at: field, width: 4, signed: true, .distance(from: base, to: start))
            } else {
                edits.requireFixedDistance(from: index == 0 ? base : dataEnd, to: start, "a 'trun' data offset")
            }
            if flags & 0x000004 != 0 { _ = try reader.u32("first sample flags") }
            let fields = [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count
            // A sample takes at least one byte of the segment or 4 of the run: more is malformed, not a long loop.
            try reader.need(count * 4 * fields, "\(count) samples")
            guard plan.samples.count + count <= bytes.count else {
                throw CMAFError(.malformedBox, "a 'trun' of \(count) samples in a segment of \(bytes.count) bytes")
            }
            guard start >= 0 else { throw CMAFError(.malformedBox, "a 'trun' data offset points before the segment") }
            runStarts.append(plan.samples.count)
            var position = start
            for _ in 0 ..< count {
                if flags & 0x100 != 0 { _ = try reader.u32() }
                let size = flags & 0x200 != 0 ? try reader.u32() : defaultSize
                if flags & 0x400 != 0 { _ = try reader.u32() }
                if flags & 0x800 != 0 { _ = try reader.u32() }
                guard Int(size) <= bytes.count - position else {
                    throw CMAFError(.malformedBox, "sample \(plan.samples.count) (\(size) bytes at offset \(position)) runs past the segment")
                }
                plan.samples.append(position ..< position + Int(size))
                position += Int(size)
            }
            dataEnd = position
        }

        plan.isClear = protection.clearDescriptionIndices.contains(descriptionIndex)
        plan.parameters = [protection.defaults] + protection.sampleGroups
        var fragmentGroups: [SampleEncryptionDefaults] = []
        for box in descriptions { fragmentGroups += try SampleEncryptionDefaults.sampleGroupEntries(bytes, sgpd: box) ?? [] }
        plan.parameters += fragmentGroups
        if let grouping = groupings.first {
            plan.sampleParameters = try groupIndices(bytes, grouping, samples: plan.samples.count,
                                                     trackGroups: protection.sampleGroups.count, fragmentGroups: fragmentGroups.count)
        }

        // The encryption records: senc first, else saiz/saio; the boxes of other auxiliary information stay.
        let schemes: Set<FourCC> = ["cenc", "cbcs", "cens", "cbc1"]
        var auxiliarySizes: Box?, auxiliaryOffsets: Box?
        for box in sizes {
            if try auxiliaryType(bytes, box).map(schemes.contains) ?? true {
                auxiliarySizes = auxiliarySizes ?? box
                edits.remove(box.range)
            }
        }
        for box in offsets {
            if try auxiliaryType(bytes, box).map(schemes.contains) ?? true {
                auxiliaryOffsets = auxiliaryOffsets ?? box
                edits.remove(box.range)
            } else {
                try keepAuxiliaryOffsets(bytes, box, base: base, edits: &edits)
            }
        }
        if let encryption {
            plan.records = try sampleEncryption(bytes, encryption, piff: piff, plan: plan)
        } else if let auxiliarySizes, let auxiliaryOffsets {
            plan.records = try auxiliaryInformation(bytes, sizes: auxiliarySizes, offsets: auxiliaryOffsets, base: base,
                                                    runStarts: runStarts, plan: plan)
        }
        return (plan, dataEnd)
    }
}
