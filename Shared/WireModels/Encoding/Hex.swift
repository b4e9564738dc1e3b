/// Lowercase hexadecimal text of bytes: the one encoder for ids, digests, IVs and nonces.
public enum Hex {
    @usableFromInline static let digits = Array("0123456789abcdef".utf8)

    /// Two lowercase hex digits per byte. Inlinable, so each caller gets a copy for its own
    /// collection type (unspecialized, the license writer's UUIDs were 7 % of its time).
    @inlinable
    public static func lowercase(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var index = 0
            for byte in bytes {
                out[index] = digits[Int(byte >> 4)]
                out[index + 1] = digits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }

    /// `count` bytes from the system's random generator, as lowercase hex: a secret or an id.
    public static func random(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return lowercase((0 ..< count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// 16 bytes as a lowercase UUID (`8-4-4-4-12` hex digits).
    @inlinable
    public static func uuid(_ bytes: some Collection<UInt8>) -> String {
        precondition(bytes.count == 16, "a UUID is 16 bytes, not \(bytes.count)")
        return String(unsafeUninitializedCapacity: 36) { out in
            var index = 0
            for (position, byte) in bytes.enumerated() {
                if position == 4 || position == 6 || position == 8 || position == 10 {
                    out[index] = UInt8(ascii: "-")
                    index += 1
                }
                out[index] = digits[Int(byte >> 4)]
                out[index + 1] = digits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }
}
