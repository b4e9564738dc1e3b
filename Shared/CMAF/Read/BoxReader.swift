/// A four-character code (a box type, a scheme, a brand) as the 32-bit big-endian number it is
/// stored as, so the readers compare types without building strings.
package struct FourCC: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The four bytes, big-endian.
    package let value: UInt32

    /// The code stored as `value`.
    package init(_ value: UInt32) { self.value = value }

    /// `text` must be four ASCII characters: a literal in the code, never input.
    package init(stringLiteral text: String) {
        let ascii = Array(text.utf8)
        precondition(ascii.count == 4, "a four-character code has four ASCII characters: '\(text)'")
        value = ascii.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The four characters, with anything outside printable ASCII as `?` (for messages).
    package var description: String {
        String(decoding: (0 ..< 4).map { index -> UInt8 in
            let byte = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(index)))
            return (0x20 ... 0x7E).contains(byte) ? byte : 0x3F
        }, as: UTF8.self)
    }
}

/// One box (ISO/IEC 14496-12 4.2) found in a byte buffer: where it is, never a copy of it.
/// Every index counts in the buffer the reader was given.
package struct Box: Sendable, Equatable {
    package let type: FourCC
    /// The whole box, header included.
    package let range: Range<Int>
    /// 8, 16 with a 64-bit `largesize`, plus 16 for a `uuid` box's user type.
    package let headerSize: Int
    /// Whether the header has a 64-bit size (size field 1), which a rewriter must patch there.
    package let hasLargeSize: Bool
    /// Whether the size field was 0 (the box runs to the end of its parent): nothing to patch.
    package let extendsToEnd: Bool

    /// The box's payload, after its header.
    package var body: Range<Int> { range.lowerBound + headerSize ..< range.upperBound }
    /// The index of the box's first byte (its size field).
    package var start: Int { range.lowerBound }
    /// The index one past its last byte.
    package var end: Int { range.upperBound }
}

/// Iterates the boxes laid end to end in `range` of a buffer, checking each header against
/// the range, so a size past the end, a size smaller than the header or a truncated header
/// is a `malformedBox` error. Each step moves on by at least 8 bytes: it cannot loop.
package struct BoxIterator {
    private let bytes: [UInt8]
    private let end: Int
    private var position: Int

    /// The boxes of `bytes[range]` (the whole buffer when nil).
    package init(_ bytes: [UInt8], in range: Range<Int>? = nil) {
        self.bytes = bytes
        let range = range ?? 0 ..< bytes.count
        position = max(0, range.lowerBound)
        end = min(bytes.count, range.upperBound)
    }

    /// The next box, nil after the last; throws on a header that does not fit.
    package mutating func next() throws(CMAFError) -> Box? {
        guard position < end else { return nil }
        let start = position
        let available = end - start
        guard available >= 8 else { throw CMAFError(.malformedBox, "\(available) bytes at offset \(start) are too few for a box header") }
        let size32 = FieldReader.u32(bytes, at: start)
        let type = FourCC(FieldReader.u32(bytes, at: start + 4))
        var headerSize = 8
        var size: Int
        switch size32 {
        case 0:
            size = available
        case 1:
            guard available >= 16 else { throw CMAFError(.malformedBox, "the '\(type)' box at offset \(start) has a 64-bit size past the end") }
            let large = FieldReader.u64(bytes, at: start + 8)
            guard large <= UInt64(available) else {
                throw CMAFError(.malformedBox, "the '\(type)' box at offset \(start) claims \(large) bytes; \(available) are left")
            }
            size = Int(large)
            headerSize = 16
        default:
            size = Int(size32)
        }
        if type == "uuid" { headerSize += 16 }
        guard size >= headerSize, size <= available else {
            throw CMAFError(.malformedBox, "the '\(type)' box at offset \(start) claims \(size) bytes; its header needs \(headerSize) and \(available) are left")
        }
        position = start + size
        return Box(type: type, range: start ..< start + size, headerSize: headerSize, hasLargeSize: size32 == 1, extendsToEnd: size32 == 0)
    }

    /// The first box of `type` among the rest, nil when there is none.
    package mutating func first(_ type: FourCC) throws(CMAFError) -> Box? {
        while let box = try next() {
            if box.type == type { return box }
        }
        return nil
    }
}

/// Reads big-endian fields of one box's body in order, each checked against the body's end,
/// so a field past the end is a `malformedBox` error naming the box.
package struct FieldReader {
    private let bytes: [UInt8]
    /// The next field's index in the buffer.
    package private(set) var position: Int
    package let end: Int
    private let box: FourCC

    /// A reader of `bytes[range]`, in the box `box` (named in errors).
    package init(_ bytes: [UInt8], _ range: Range<Int>, box: FourCC) {
        self.bytes = bytes
        position = range.lowerBound
        end = min(range.upperBound, bytes.count)
        self.box = box
    }

    /// A reader of `box`'s body.
    package init(_ bytes: [UInt8], body box: Box) { self.init(bytes, box.body, box: box.type) }

    /// Bytes left before the end.
    package var remaining: Int { end - position }

    /// Throws unless `count` more bytes are there.
    package func need(_ count: Int, _ what: @autoclosure () -> String) throws(CMAFError) {
        guard count >= 0, count <= end - position else {
            throw CMAFError(.malformedBox, "the '\(box)' box ends before its \(what()) (\(count) bytes needed at offset \(position), \(end - position) left)")
        }
    }

    /// Moves past `count` bytes (a field this reader does not need).
    package mutating func skip(_ count: Int, _ what: @autoclosure () -> String = "fields") throws(CMAFError) {
        try need(count, what())
        position += count
    }

    /// The next 8-bit field; `what` names it in the error.
    package mutating func u8(_ what: @autoclosure () -> String = "fields") throws(CMAFError) -> UInt8 {
        try need(1, what())
        defer { position += 1 }
        return bytes[position]
    }

    /// The next 16-bit field.
    package mutating func u16(_ what: @autoclosure () -> String = "fields") throws(CMAFError) -> UInt16 {
        try need(2, what())
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }

    /// The next 24-bit field.
    package mutating func u24(_ what: @autoclosure () -> String = "fields") throws(CMAFError) -> UInt32 {
        try need(3, what())
        defer { position += 3 }
        return UInt32(bytes[position]) << 16 | UInt32(bytes[position + 1]) << 8 | UInt32(bytes[position + 2])
    }

    /// The next 32-bit field.
    package mutating func u32(_ what: @autoclosure () -> String = "fields") throws(CMAFError) -> UInt32 {
        try need(4, what())
        defer { position += 4 }
        return Self.u32(bytes, at: position)
    }

    /// The next 64-bit field.
    package mutating func u64(_ what: @autoclosure () -> String = "fields") throws(CMAFError) -> UInt64 {
        try need(8, what())
        defer { position += 8 }
        return Self.u64(bytes, at: position)
    }

    /// `count` bytes as an array (key ids, IVs: small and kept).
    package mutating func bytes(_ count: Int, _ what: @autoclosure () -> String = "fields") throws(CMAFError) -> [UInt8] {
        try need(count, what())
        defer { position += count }
        return Array(bytes[position ..< position + count])
    }

    /// A full box's version and flags.
    package mutating func versionAndFlags() throws(CMAFError) -> (version: UInt8, flags: UInt32) {
        let word = try u32("version and flags")
        return (UInt8(word >> 24), word & 0x00FF_FFFF)
    }

    /// Skips the creation and modification times of an `mvhd`, `tkhd` or `mdhd` (32 or 64 bits
    /// each, by `version`): the field after them (`timescale`, `track_ID`) is next.
    package mutating func skipTimes(version: UInt8) throws(CMAFError) {
        try skip(version == 1 ? 16 : 8, "times")
    }

    /// The version and flags, the times skipped, then the 32-bit field after them: the
    /// `timescale` of an `mvhd` or `mdhd`, the `track_ID` of a `tkhd`.
    package mutating func u32AfterTimes(_ what: @autoclosure () -> String) throws(CMAFError) -> UInt32 {
        let (version, _) = try versionAndFlags()
        try skipTimes(version: version)
        return try u32(what())
    }

    /// The 32-bit big-endian value at `offset` (the caller checked the bounds).
    static func u32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// The 64-bit big-endian value at `offset` (the caller checked the bounds).
    static func u64(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        UInt64(u32(bytes, at: offset)) << 32 | UInt64(u32(bytes, at: offset + 4))
    }
}
