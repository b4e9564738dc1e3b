/// Writes bits most significant first, with exp-Golomb codes: the test side's way to make
/// parameter sets and slice headers with chosen values (written independently of the
/// reader under test, from H.264 9.1's definition of the codes).
struct BitWriter {
    private(set) var bits: [Bool] = []

    init() {}
    init(bits: [Bool]) { self.bits = bits }

    /// `value` in `count` bits.
    mutating func u(_ value: Int, _ count: Int) {
        for shift in stride(from: count - 1, through: 0, by: -1) { bits.append(value >> shift & 1 == 1) }
    }

    mutating func flag(_ value: Bool) { bits.append(value) }

    /// ue(v): codeNum + 1 in binary, preceded by as many zeros as it has bits after its first.
    mutating func ue(_ value: Int) {
        let code = value + 1
        let width = Int.bitWidth - code.leadingZeroBitCount
        u(0, width - 1)
        u(code, width)
    }

    /// se(v): k > 0 as codeNum 2k − 1, k ≤ 0 as −2k.
    mutating func se(_ value: Int) { ue(value > 0 ? 2 * value - 1 : -2 * value) }

    mutating func append(_ other: [Bool]) { bits += other }

    /// rbsp_trailing_bits(): a 1, then zeros to the byte boundary.
    mutating func trailingBits() {
        bits.append(true)
        while bits.count % 8 != 0 { bits.append(false) }
    }

    /// The bits as bytes, the last one padded with zeros.
    var bytes: [UInt8] {
        stride(from: 0, to: bits.count, by: 8).map { start in
            var byte: UInt8 = 0
            for index in 0 ..< 8 { byte = byte << 1 | (start + index < bits.count && bits[start + index] ? 1 : 0) }
            return byte
        }
    }

    /// The bits of `bytes`, most significant first.
    static func bits(of bytes: [UInt8]) -> [Bool] {
        bytes.flatMap { byte in (0 ..< 8).map { byte >> (7 - $0) & 1 == 1 } }
    }
}
