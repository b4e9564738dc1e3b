/// The raw byte sequence payload (RBSP) of one NAL unit, as stored bytes with their
/// emulation-prevention bytes taken out, and where they were, so that a position found in
/// the RBSP (the end of a slice header) can be turned back into a count of stored bytes.
///
/// H.264 7.4.1 and HEVC 7.4.2: within a NAL unit every `00 00 03` has its `03` inserted
/// by the encoder (including a final one after a trailing `cabac_zero_word`); all of them
/// are removed here. The RBSP starts with the NAL unit header (which never contains one).
package struct RBSP: Sendable, Equatable {
    /// The unescaped bytes, NAL unit header first.
    package let bytes: [UInt8]
    /// For each removed emulation-prevention byte, the RBSP offset of the byte that came
    /// after it, ascending.
    package let removedBefore: [Int]

    /// Unescapes `nal` (stored bytes, no start code or length prefix). With `limit`, only
    /// its first `limit` stored bytes: for reading a header without copying a whole slice.
    package init(_ nal: ArraySlice<UInt8>, limit: Int = .max) {
        let end = nal.startIndex + min(nal.count, max(0, limit))
        var out: [UInt8] = []
        out.reserveCapacity(end - nal.startIndex)
        var removed: [Int] = []
        var zeros = 0
        var index = nal.startIndex
        while index < end {
            let byte = nal[index]
            index += 1
            if zeros >= 2, byte == 3 {
                removed.append(out.count)
                zeros = 0
                continue
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        bytes = out
        removedBefore = removed
    }

    /// `RBSP(_:limit:)` over a whole array.
    package init(_ nal: [UInt8], limit: Int = .max) { self.init(nal[...], limit: limit) }

    /// The number of stored (escaped) bytes that hold the first `rbspBytes` bytes of the
    /// RBSP: those bytes plus the emulation-prevention bytes found among them. An
    /// emulation-prevention byte right after the last of them is not counted (it belongs to
    /// what follows, as a reader that loads bytes only when it needs their bits sees it).
    package func storedByteCount(rbspBytes: Int) -> Int {
        // Binary search: how many removals came before RBSP byte `rbspBytes`.
        var low = 0, high = removedBefore.count
        while low < high {
            let middle = (low + high) / 2
            if removedBefore[middle] < rbspBytes { low = middle + 1 } else { high = middle }
        }
        return rbspBytes + low
    }

    /// The number of stored bytes from the start of the NAL unit through the byte holding
    /// RBSP bit `bit - 1`: `bit` rounded up to whole bytes, plus the emulation-prevention
    /// bytes skipped before that point.
    package func storedByteCount(throughBit bit: Int) -> Int { storedByteCount(rbspBytes: (bit + 7) / 8) }
}

/// Reads an RBSP bit by bit, most significant bit first, with the exp-Golomb codes of
/// H.264 9.1 and HEVC 9.2. Every read checks the bits are there and throws a `CMAFError`
/// of the code given at creation (so an SPS reports `malformedParameterSet`, a slice
/// header `malformedSlice`) naming the field it was reading; nothing traps on bad input.
package struct BitReader {
    private let bytes: [UInt8]
    /// Bits read so far, from the start of the RBSP (the first bit of the NAL header).
    package private(set) var position: Int = 0
    private let code: CMAFError.Code
    private let context: String

    /// A reader at bit 0 of `bytes` (an RBSP). `context` starts every error message
    /// ("H.264 SPS").
    package init(_ bytes: [UInt8], errorCode: CMAFError.Code, context: String) {
        self.bytes = bytes
        self.code = errorCode
        self.context = context
    }

    /// A reader of `rbsp`'s bytes.
    package init(_ rbsp: RBSP, errorCode: CMAFError.Code, context: String) {
        self.init(rbsp.bytes, errorCode: errorCode, context: context)
    }

    /// Bits not read yet.
    package var bitsLeft: Int { bytes.count * 8 - position }

    /// Whether the next bit starts a byte.
    package var isByteAligned: Bool { position & 7 == 0 }

    /// An error of this reader's code: `"<context>: <message>"`.
    package func error(_ message: String) -> CMAFError { CMAFError(code, "\(context): \(message)") }

    /// The next `count` bits (0…32) as an unsigned number.
    package mutating func bits(_ count: Int, _ field: StaticString = "a field") throws(CMAFError) -> Int {
        guard count >= 0, count <= 32 else { throw error("cannot read \(count) bits at once for \(field)") }
        guard count <= bitsLeft else { throw truncated(field, needing: count) }
        var value = 0
        var remaining = count
        while remaining > 0 {
            let byte = Int(bytes[position >> 3])
            let available = 8 - (position & 7)
            let take = min(available, remaining)
            value = value << take | (byte >> (available - take)) & (1 << take - 1)
            position += take
            remaining -= take
        }
        return value
    }

    /// The next bit as a flag.
    package mutating func flag(_ field: StaticString = "a flag") throws(CMAFError) -> Bool {
        guard bitsLeft > 0 else { throw truncated(field, needing: 1) }
        let bit = bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1
        position += 1
        return bit == 1
    }

    /// Skips `count` bits (any number, checked against what is left).
    package mutating func skip(_ count: Int, _ field: StaticString = "skipped bits") throws(CMAFError) {
        guard count >= 0 else { throw error("cannot skip \(count) bits for \(field)") }
        guard count <= bitsLeft else { throw truncated(field, needing: count) }
        position += count
    }

    /// ue(v): an unsigned exp-Golomb code. At most 31 leading zero bits are accepted (the
    /// value then fits 32 bits); a longer run is refused, never read on.
    package mutating func ue(_ field: StaticString = "a ue(v) field") throws(CMAFError) -> Int {
        let start = position
        var leadingZeros = 0
        while try !flag(field) {
            leadingZeros += 1
            if leadingZeros > 31 {
                throw error("exp-Golomb code for \(field) at bit \(start) has more than 31 leading zero bits")
            }
        }
        return (1 << leadingZeros) - 1 + (try bits(leadingZeros, field))
    }

    /// se(v): a signed exp-Golomb code (1, -1, 2, -2, … for codes 1, 2, 3, 4, …).
    package mutating func se(_ field: StaticString = "an se(v) field") throws(CMAFError) -> Int {
        let code = try ue(field)
        return code & 1 == 1 ? (code + 1) / 2 : -(code / 2)
    }

    /// ue(v) that must be at most `maximum`, else an error naming `field` and the range.
    package mutating func ue(max maximum: Int, _ field: StaticString) throws(CMAFError) -> Int {
        let value = try ue(field)
        guard value <= maximum else { throw error("\(field) is \(value); at most \(maximum) is allowed") }
        return value
    }

    /// se(v) that must lie in `range`, else an error naming `field` and the range.
    package mutating func se(in range: ClosedRange<Int>, _ field: StaticString) throws(CMAFError) -> Int {
        let value = try se(field)
        guard range.contains(value) else { throw error("\(field) is \(value); \(range.lowerBound)...\(range.upperBound) is allowed") }
        return value
    }

    /// more_rbsp_data() (H.264 7.2, HEVC 7.2): whether anything but the RBSP trailing bits
    /// (the last 1 bit and the zeros after it) is left.
    package func moreRBSPData() -> Bool {
        guard let last = bytes.lastIndex(where: { $0 != 0 }) else { return false }
        let stopBit = last * 8 + 7 - bytes[last].trailingZeroBitCount
        return position < stopBit
    }

    private func truncated(_ field: StaticString, needing count: Int) -> CMAFError {
        error("truncated at bit \(position) reading \(field) (\(count) bits needed, \(bitsLeft) left)")
    }
}

/// Ceil(Log2(value)) for value >= 1 (0 for 1): the bit width of an index into `value` things.
@inline(__always)
func ceilLog2(_ value: Int) -> Int {
    value <= 1 ? 0 : Int.bitWidth - (value - 1).leadingZeroBitCount
}
