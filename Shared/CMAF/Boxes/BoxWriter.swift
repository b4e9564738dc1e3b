/// Writes ISO base media file format boxes (ISO/IEC 14496-12) into one byte array: a box's
/// 32-bit size is filled in when its body closes, so nested boxes are written in order.
/// Every multi-byte field is big-endian, as the format requires.
package struct BoxWriter: Sendable {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// The number of bytes written so far (an offset for a field patched later).
    package var count: Int { bytes.count }

    /// A box of `type` (four ASCII characters) around what `body` writes.
    package mutating func box(_ type: String, _ body: (inout BoxWriter) -> Void) {
        let start = bytes.count
        u32(0)
        fourCC(type)
        body(&self)
        patch32(at: start, UInt32(bytes.count - start))
    }

    /// A full box: a box whose body starts with a version byte and 24 bits of flags.
    package mutating func fullBox(_ type: String, version: UInt8 = 0, flags: UInt32 = 0, _ body: (inout BoxWriter) -> Void) {
        box(type) { writer in
            writer.u8(version)
            writer.u24(flags)
            body(&writer)
        }
    }

    package mutating func u8(_ value: UInt8) { bytes.append(value) }
    package mutating func u16(_ value: UInt16) { bytes.append(UInt8(value >> 8)); bytes.append(UInt8(value & 0xFF)) }
    package mutating func u24(_ value: UInt32) {
        bytes.append(UInt8((value >> 16) & 0xFF)); bytes.append(UInt8((value >> 8) & 0xFF)); bytes.append(UInt8(value & 0xFF))
    }
    package mutating func u32(_ value: UInt32) {
        bytes.append(UInt8(value >> 24)); bytes.append(UInt8((value >> 16) & 0xFF))
        bytes.append(UInt8((value >> 8) & 0xFF)); bytes.append(UInt8(value & 0xFF))
    }
    package mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    package mutating func u64(_ value: UInt64) { u32(UInt32(value >> 32)); u32(UInt32(value & 0xFFFF_FFFF)) }
    /// Four ASCII characters (a box type, a brand, a handler type).
    package mutating func fourCC(_ code: String) {
        let ascii = Array(code.utf8)
        precondition(ascii.count == 4, "a four-character code has four ASCII characters: '\(code)'")
        bytes.append(contentsOf: ascii)
    }
    package mutating func append<S: Sequence>(_ data: S) where S.Element == UInt8 { bytes.append(contentsOf: data) }
    package mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    /// Overwrites the 32-bit field at `offset` (a size or an offset known only later).
    package mutating func patch32(at offset: Int, _ value: UInt32) {
        bytes[offset] = UInt8(value >> 24); bytes[offset + 1] = UInt8((value >> 16) & 0xFF)
        bytes[offset + 2] = UInt8((value >> 8) & 0xFF); bytes[offset + 3] = UInt8(value & 0xFF)
    }
}
