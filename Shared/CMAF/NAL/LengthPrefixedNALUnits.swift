/// NAL units of a sample in MP4 form (ISO/IEC 14496-15): each preceded by its length as a
/// 4-byte big-endian number (lengthSizeMinusOne = 3, what avcC and hvcC declare here), no
/// start codes, bytes as stored (emulation-prevention bytes present).
package enum LengthPrefixedNALUnits {
    /// The size of a length prefix.
    package static let prefixSize = 4

    /// The byte ranges (indices of `sample`) of its NAL units, the length prefix left out,
    /// in order. A zero length gives an empty range. Throws `malformedSample` when a prefix
    /// is cut short or a length runs past the end of the sample.
    package static func units(in sample: ArraySlice<UInt8>) throws(CMAFError) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var index = sample.startIndex
        while index < sample.endIndex {
            guard sample.endIndex - index >= prefixSize else {
                throw CMAFError(.malformedSample, "\(sample.endIndex - index) bytes at offset \(index - sample.startIndex) are too few for a NAL unit length")
            }
            let length = Int(sample[index]) << 24 | Int(sample[index + 1]) << 16 | Int(sample[index + 2]) << 8 | Int(sample[index + 3])
            let start = index + prefixSize
            guard length <= sample.endIndex - start else {
                throw CMAFError(.malformedSample, "the NAL unit at offset \(index - sample.startIndex) declares \(length) bytes; \(sample.endIndex - start) are left in the sample")
            }
            ranges.append(start ..< start + length)
            index = start + length
        }
        return ranges
    }

    /// `units(in:)` of a whole array.
    package static func units(in sample: [UInt8]) throws(CMAFError) -> [Range<Int>] { try units(in: sample[...]) }
}
