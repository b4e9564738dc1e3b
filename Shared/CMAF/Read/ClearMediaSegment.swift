extension ProtectionRemoval {
    /// The media segment `bytes` in the clear: every sample decrypted with `key` (16 bytes)
    /// where it lies, and `senc`, `saiz`/`saio`, the `seig` groups and any `pssh` of each
    /// `moof` removed, with the `traf`, `moof` and `sidx` sizes and every data offset that
    /// depends on them patched. With `protection` nil (a clear track) `bytes` come back as
    /// they are, without a look.
    ///
    /// `bytes` is a segment file (`styp`, `sidx`, `emsg`… then `moof`/`mdat` pairs) or a bare
    /// fragment (a byte range of a single-file track). A `tfhd` explicit base data offset counts
    /// from the start of `bytes`, as it does in a segment file.
    package static func clearSegment(_ bytes: [UInt8], protection: ProtectedTrackInfo?, key: [UInt8]) throws(CMAFError) -> [UInt8] {
        guard let protection else { return bytes }
        return try clearSegment(bytes, protection: protection, cipher: SampleCipher(key: key))
    }

    /// `clearSegment(_:protection:key:)` with a cipher made once for the track.
    package static func clearSegment(_ bytes: [UInt8], protection: ProtectedTrackInfo, cipher: SampleCipher) throws(CMAFError) -> [UInt8] {
        var edits = BoxEdits()
        var plans: [TrackFragmentPlan] = []
        var media: [Range<Int>] = []
        var sawFragment = false
        var top = BoxIterator(bytes)
        while let box = try top.next() {
            switch box.type {
            case "moof":
                sawFragment = true
                var implicitBase = box.start
                var children = BoxIterator(bytes, in: box.body)
                while let child = try children.next() {
                    switch child.type {
                    case "traf":
                        let (plan, dataEnd) = try TrackFragmentReader.read(bytes, traf: child, moof: box, implicitBase: implicitBase,
                                                                           protection: protection, edits: &edits)
                        plans.append(plan)
                        implicitBase = dataEnd
                    case "pssh":
                        edits.remove(child.range)
                    default:
                        continue
                    }
                }
                edits.resize(box)
            case "mdat":
                media.append(box.body)
            case "sidx":
                try followSegmentIndex(bytes, box, &edits)
            default:
                continue
            }
        }
        guard sawFragment else { throw CMAFError(.malformedBox, "the segment has no 'moof'") }
        let applied = try edits.apply(to: bytes)
        var output = applied.bytes
        let layout = applied.layout
        let result: Result<Void, CMAFError> = output.withUnsafeMutableBytes { buffer in
            do throws(CMAFError) {
                var decryptor = SampleDecryptor(input: bytes, protection: protection, cipher: cipher)
                for plan in plans {
                    try decryptor.decrypt(plan, media: media, into: buffer, layout: layout)
                }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        return output
    }

    /// A `sidx` (14496-12 8.16.3) before the fragments: its first offset and reference sizes
    /// follow the bytes removed from the fragments they reference.
    private static func followSegmentIndex(_ bytes: [UInt8], _ box: Box, _ edits: inout BoxEdits) throws(CMAFError) {
        var reader = FieldReader(bytes, body: box)
        let (version, _) = try reader.versionAndFlags()
        try reader.skip(8, "reference id and timescale")
        try reader.skip(version == 0 ? 4 : 8, "earliest presentation time")
        let field = reader.position
        let firstOffset = version == 0 ? UInt64(try reader.u32("first offset")) : try reader.u64("first offset")
        _ = try reader.u16("reserved")
        let count = Int(try reader.u16("reference count"))
        try reader.need(count * 12, "\(count) references")
        // An index of fragments beyond any buffer this side could hold does not describe these bytes.
        guard firstOffset < UInt64(1) << 40 else { return }
        var position = box.end + Int(firstOffset)
        edits.patch(at: field, width: version == 0 ? 4 : 8, .distance(from: box.end, to: position))
        for _ in 0 ..< count {
            let reference = reader.position
            let size = Int(try reader.u32() & 0x7FFF_FFFF)
            try reader.skip(8)
            edits.patch(at: reference, width: 4, keepingTopBit: true, .distance(from: position, to: position + size))
            position += size
        }
    }
}
