/// The encryption records and sample groups of a `traf`: `senc` (or PIFF's), `saiz`/`saio`,
/// `sbgp`; each record located and bounds-checked in the input, never copied.
extension TrackFragmentReader {
    /// The IV size of sample `index`'s parameters.
    static func ivSize(_ plan: TrackFragmentPlan, _ index: Int) -> Int {
        plan.parameters[plan.sampleParameters?[index] ?? 0].perSampleIVSize
    }

    /// `senc` (23001-7 7.2.1) or PIFF's: one record per sample, IV then, with flag 2, subsamples.
    static func sampleEncryption(_ bytes: [UInt8], _ box: Box, piff: Bool, plan: TrackFragmentPlan) throws(CMAFError) -> [AuxiliaryRecord] {
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
    static func auxiliaryInformation(_ bytes: [UInt8], sizes: Box, offsets: Box, base: Int, runStarts: [Int],
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
    static func auxiliaryType(_ bytes: [UInt8], _ box: Box) throws(CMAFError) -> FourCC? {
        var reader = FieldReader(bytes, body: box)
        let (_, flags) = try reader.versionAndFlags()
        return flags & 1 != 0 ? FourCC(try reader.u32("auxiliary information type")) : nil
    }

    /// A `saio` of other auxiliary information, kept: its offsets follow what moves.
    static func keepAuxiliaryOffsets(_ bytes: [UInt8], _ box: Box, base: Int, edits: inout BoxEdits) throws(CMAFError) {
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
    static func groupIndices(_ bytes: [UInt8], _ box: Box, samples: Int, trackGroups: Int,
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
