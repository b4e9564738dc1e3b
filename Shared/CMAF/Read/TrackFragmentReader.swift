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

    /// The IV size of sample `index`'s parameters.
    private static func ivSize(_ plan: TrackFragmentPlan, _ index: Int) -> Int {
        plan.parameters[plan.sampleParameters?[index] ?? 0].perSampleIVSize
    }

    /// `senc` (23001-7 7.2.1) or PIFF's: one record per sample, IV then, with flag 2, subsamples.
    private static func sampleEncryption(_ bytes: [UInt8], _ box: Box, piff: Bool, plan: TrackFragmentPlan) throws(CMAFError) -> [AuxiliaryRecord] {
        var reader = FieldReader(bytes, body: box)
        let (_, flags) = try reader.versionAndFlags()
        var override: Int?
        if piff, flags & 1 != 0 {
            try reader.skip(3, "algorithm id")
            override = Int(try reader.u8("IV size"))
            try reader.skip(16, "key id")
        }
        let count = Int(try reader.u32("sample count"))
        guard count == plan.samples.count else {
            throw CMAFError(.malformedBox, "'senc' lists \(count) samples; the fragment has \(plan.samples.count)")
        }
        var records: [AuxiliaryRecord] = []
        records.reserveCapacity(count)
        for index in 0 ..< count {
            let size = override ?? ivSize(plan, index)
            let ivStart = reader.position
            try reader.skip(size, "IV of sample \(index)")
            var entries = -1
            if flags & 2 != 0 {
                entries = Int(try reader.u16("subsample count of sample \(index)"))
                try reader.need(entries * 6, "subsamples of sample \(index)")
            }
            records.append(AuxiliaryRecord(ivStart: ivStart, ivSize: size, subsampleStart: reader.position, subsampleCount: entries))
            try reader.skip(max(0, entries) * 6)
        }
        return records
    }

    /// `saiz` (14496-12 8.7.8) and `saio` (8.7.9): the records where the offsets point,
    /// counted from the fragment's base, one run of records for the fragment or one per `trun`.
    private static func auxiliaryInformation(_ bytes: [UInt8], sizes: Box, offsets: Box, base: Int, runStarts: [Int],
                                             plan: TrackFragmentPlan) throws(CMAFError) -> [AuxiliaryRecord] {
        var sizeReader = FieldReader(bytes, body: sizes)
        let (_, sizeFlags) = try sizeReader.versionAndFlags()
        if sizeFlags & 1 != 0 { try sizeReader.skip(8, "auxiliary information type") }
        let defaultSize = Int(try sizeReader.u8("default sample info size"))
        let count = Int(try sizeReader.u32("sample count"))
        guard count == plan.samples.count else {
            throw CMAFError(.malformedBox, "'saiz' lists \(count) samples; the fragment has \(plan.samples.count)")
        }
        if defaultSize == 0 { try sizeReader.need(count, "sample info sizes") }

        var offsetReader = FieldReader(bytes, body: offsets)
        let (offsetVersion, offsetFlags) = try offsetReader.versionAndFlags()
        if offsetFlags & 1 != 0 { try offsetReader.skip(8, "auxiliary information type") }
        let entries = Int(try offsetReader.u32("entry count"))
        guard entries == 1 || entries == runStarts.count else {
            throw CMAFError(.malformedBox, "'saio' has \(entries) offsets for \(runStarts.count) runs")
        }
        var starts: [Int] = []
        for _ in 0 ..< entries {
            let offset = offsetVersion == 0 ? Int64(try offsetReader.u32("offset")) : Int64(bitPattern: try offsetReader.u64("offset"))
            guard offset >= -Int64(base), offset <= Int64(bytes.count - base) else {
                throw CMAFError(.malformedBox, "the auxiliary information offset \(offset) lies outside the segment")
            }
            starts.append(base + Int(offset))
        }

        var records: [AuxiliaryRecord] = []
        records.reserveCapacity(count)
        var position = starts.first ?? 0
        var run = 0
        for index in 0 ..< count {
            if entries > 1, run < runStarts.count, runStarts[run] == index {
                position = starts[run]
                run += 1
                while run < runStarts.count, runStarts[run] == index { run += 1 } // empty runs
            }
            let size = defaultSize != 0 ? defaultSize : Int(try sizeReader.u8())
            guard position + size <= bytes.count else {
                throw CMAFError(.malformedBox, "the auxiliary information of sample \(index) runs past the segment")
            }
            let iv = ivSize(plan, index)
            var record = AuxiliaryRecord(ivStart: position, ivSize: iv, subsampleStart: position + iv + 2, subsampleCount: -1)
            if size > iv {
                guard size >= iv + 2 else { throw CMAFError(.malformedBox, "the auxiliary information of sample \(index) is \(size) bytes") }
                let entries = Int(bytes[position + iv]) << 8 | Int(bytes[position + iv + 1])
                guard size == iv + 2 + 6 * entries else {
                    throw CMAFError(.malformedBox, "the auxiliary information of sample \(index) is \(size) bytes for \(entries) subsamples")
                }
                record.subsampleCount = entries
            } else if size < iv {
                throw CMAFError(.malformedBox, "the auxiliary information of sample \(index) is \(size) bytes, short of its \(iv)-byte IV")
            }
            records.append(record)
            position += size
        }
        return records
    }

    /// `aux_info_type` of a `saiz` or `saio`, nil when not given (then the scheme's own).
    private static func auxiliaryType(_ bytes: [UInt8], _ box: Box) throws(CMAFError) -> FourCC? {
        var reader = FieldReader(bytes, body: box)
        let (_, flags) = try reader.versionAndFlags()
        return flags & 1 != 0 ? FourCC(try reader.u32("auxiliary information type")) : nil
    }

    /// A `saio` of other auxiliary information, kept: its offsets follow what moves.
    private static func keepAuxiliaryOffsets(_ bytes: [UInt8], _ box: Box, base: Int, edits: inout BoxEdits) throws(CMAFError) {
        var reader = FieldReader(bytes, body: box)
        let (version, flags) = try reader.versionAndFlags()
        if flags & 1 != 0 { try reader.skip(8, "auxiliary information type") }
        let entries = Int(try reader.u32("entry count"))
        try reader.need(entries * (version == 0 ? 4 : 8), "offsets")
        for _ in 0 ..< entries {
            let field = reader.position
            let offset = version == 0 ? Int64(try reader.u32()) : Int64(bitPattern: try reader.u64())
            guard offset >= -Int64(base), offset <= Int64(bytes.count - base) else { continue }
            edits.patch(at: field, width: version == 0 ? 4 : 8, signed: version != 0, .distance(from: base, to: base + Int(offset)))
        }
    }

    /// Each sample's index into the plan's parameters, from `sbgp` (14496-12 8.9.2): 0 (no
    /// group) the defaults, 1 ... 0x10000 the track's groups, above that the fragment's.
    private static func groupIndices(_ bytes: [UInt8], _ box: Box, samples: Int, trackGroups: Int,
                                     fragmentGroups: Int) throws(CMAFError) -> [Int] {
        var reader = FieldReader(bytes, body: box)
        let (version, _) = try reader.versionAndFlags()
        try reader.skip(version == 1 ? 8 : 4, "grouping type")
        let entries = Int(try reader.u32("entry count"))
        try reader.need(entries * 8, "\(entries) entries")
        var indices: [Int] = []
        indices.reserveCapacity(samples)
        for _ in 0 ..< entries {
            let count = Int(try reader.u32())
            let description = Int(try reader.u32())
            let index: Int
            switch description {
            case 0: index = 0
            case 1 ... 0x10000 where description <= trackGroups: index = description
            case 0x10001... where description - 0x10000 <= fragmentGroups: index = trackGroups + description - 0x10000
            default: throw CMAFError(.malformedBox, "'sbgp' names sample group description \(description), which does not exist")
            }
            guard count <= samples - indices.count else { throw CMAFError(.malformedBox, "'sbgp' groups more samples than the fragment has") }
            indices.append(contentsOf: repeatElement(index, count: count))
        }
        indices.append(contentsOf: repeatElement(0, count: samples - indices.count))
        return indices
    }
}
