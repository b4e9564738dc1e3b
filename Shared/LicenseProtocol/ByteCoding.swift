import Foundation

/// Builds the protocol's binary messages: big-endian integers and raw bytes.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func append(_ other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }

    mutating func appendUInt32(_ value: Int) {
        let v = UInt32(truncatingIfNeeded: value)
        bytes += [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }
}

/// Reads the protocol's binary messages; every read checks the remaining length.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func read(_ count: Int, _ what: String) throws(LicenseProtocolError) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw LicenseProtocolError(.malformed, "truncated \(what)") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func readUInt32(_ what: String) throws(LicenseProtocolError) -> Int {
        let b = try read(4, what)
        return Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
    }

    /// Reads and checks a 4-byte magic and the version byte.
    mutating func expectHeader(magic: [UInt8], version: UInt8, _ what: String) throws(LicenseProtocolError) {
        guard try read(4, what) == magic else { throw LicenseProtocolError(.malformed, "not a \(what) (bad magic)") }
        guard try read(1, what) == [version] else { throw LicenseProtocolError(.malformed, "unsupported \(what) version") }
    }
}

/// Milliseconds since 1970 ⇄ `Date`, the protocol's only time unit.
enum Milliseconds {
    /// How far from 1970 a time (or a duration) read from a message may be, either way:
    /// ECMAScript's Date range, 100,000,000 days. `from` traps on a date near Int64.max
    /// milliseconds, so readers refuse what they could not write again.
    static let limit: Int64 = 8_640_000_000_000_000

    static func from(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
    static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(ms) / 1000) }
    /// `date(ms)`, or nil beyond `limit`: for values read from a message.
    static func checkedDate(_ ms: Int64) -> Date? { (-limit ... limit).contains(ms) ? date(ms) : nil }
}

/// JSON coders used for every protocol document: sorted keys so bytes are reproducible.
enum ProtocolJSON {
    static func encode(_ value: some Encodable) throws(LicenseProtocolError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return Array(try encoder.encode(value)) } catch {
            throw LicenseProtocolError(.invalidPayload, "cannot encode: \(error)", underlying: error)
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], _ what: String) throws(LicenseProtocolError) -> T {
        do { return try JSONDecoder().decode(type, from: Data(bytes)) } catch {
            throw LicenseProtocolError(.invalidPayload, "\(what) is not valid: \(error)", underlying: error)
        }
    }
}
