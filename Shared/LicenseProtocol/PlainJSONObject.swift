/// The members of a JSON object in its plainest form, read in one pass without Codable: the
/// fast path of the two objects every license request carries (the request body and the SPC
/// payload), whose decoding with `JSONDecoder` was 5 % of a license's CPU.
///
/// It reads only what cannot be read two ways: one object whose members are strings of
/// printable ASCII without escapes, integers of at most 18 digits (`-?(0|[1-9][0-9]*)`) or
/// `null`, each name once, JSON whitespace around the tokens. Anything else (an escape, a
/// non-ASCII byte, a fraction or exponent, `true`, a nested value, a repeated name, any
/// malformation) makes `init` fail, and the caller decodes the bytes with `JSONDecoder` as
/// before: so the result, or the error, is always `JSONDecoder`'s, only faster for the
/// bodies clients send.
struct PlainJSONObject {
    enum Value: Equatable {
        case string(String)
        case integer(Int64)
        case null
    }

    private(set) var members: [(name: String, value: Value)] = []

    init?(_ bytes: [UInt8]) {
        var index = 0
        let end = bytes.count

        func skipWhitespace() {
            while index < end, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
        }
        func expect(_ byte: UInt8) -> Bool {
            guard index < end, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        /// A string of printable ASCII without escapes, its opening quote already read.
        func string() -> String? {
            let start = index
            while index < end {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    defer { index += 1 }
                    return String(decoding: bytes[start..<index], as: UTF8.self)
                }
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            return nil
        }
        func integer() -> Int64? {
            let negative = expect(UInt8(ascii: "-"))
            let start = index
            while index < end, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            let digits = index - start
            guard digits >= 1, digits <= 18, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            // A fraction or an exponent goes to JSONDecoder.
            if index < end, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                return nil
            }
            var value: Int64 = 0
            for byte in bytes[start..<index] { value = value * 10 + Int64(byte - UInt8(ascii: "0")) }
            return negative ? -value : value
        }
        func value() -> Value? {
            guard index < end else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return string().map(Value.string)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return integer().map(Value.integer)
            case UInt8(ascii: "n"):
                guard end - index >= 4, bytes[index + 1] == UInt8(ascii: "u"), bytes[index + 2] == UInt8(ascii: "l"),
                      bytes[index + 3] == UInt8(ascii: "l")
                else { return nil }
                index += 4
                return .null
            default:
                return nil
            }
        }

        skipWhitespace()
        guard expect(UInt8(ascii: "{")) else { return nil }
        skipWhitespace()
        if !expect(UInt8(ascii: "}")) {
            repeat {
                skipWhitespace()
                guard expect(UInt8(ascii: "\"")), let name = string() else { return nil }
                guard !members.contains(where: { $0.name == name }) else { return nil }
                skipWhitespace()
                guard expect(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                guard let value = value() else { return nil }
                members.append((name, value))
                skipWhitespace()
            } while expect(UInt8(ascii: ","))
            guard expect(UInt8(ascii: "}")) else { return nil }
        }
        skipWhitespace()
        guard index == end else { return nil }
    }

    /// The member named `name`, nil when there is none.
    subscript(name: String) -> Value? { members.first { $0.name == name }?.value }

    /// A required string member; nil (go to `JSONDecoder`) when it is missing or not a string.
    func string(_ name: String) -> String? {
        guard case .string(let value) = self[name] else { return nil }
        return value
    }

    /// An optional string member: `.some(nil)` when it is missing or null, nil (go to
    /// `JSONDecoder`) when it is anything but a string.
    func optionalString(_ name: String) -> String?? {
        switch self[name] {
        case nil, .null: return .some(nil)
        case .string(let value): return .some(value)
        case .integer: return nil
        }
    }

    /// A required integer member; nil (go to `JSONDecoder`) when it is missing or not an integer.
    func integer(_ name: String) -> Int64? {
        guard case .integer(let value) = self[name] else { return nil }
        return value
    }
}
