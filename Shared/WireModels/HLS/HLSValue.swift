/// A `RESOLUTION` value: width and height in pixels.
public struct Resolution: Sendable, Hashable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a resolution.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses `WIDTHxHEIGHT`.
    public init?(parsing text: String) {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = HLSValue.decimalInteger(parts[0]),
              let height = HLSValue.decimalInteger(parts[1]) else { return nil }
        self.init(width: width, height: height)
    }

    /// `WIDTHxHEIGHT`.
    public var description: String { "\(width)x\(height)" }
}

/// A byte range (`EXT-X-BYTERANGE`, `EXT-X-MAP`'s `BYTERANGE`): a length and an optional offset.
public struct ByteRange: Sendable, Hashable, CustomStringConvertible {
    /// Number of bytes.
    public var length: Int
    /// First byte; nil means "right after the previous range of the same resource".
    public var offset: Int?

    /// Creates a byte range.
    public init(length: Int, offset: Int? = nil) {
        self.length = length
        self.offset = offset
    }

    /// Parses `LENGTH[@OFFSET]`.
    public init?(parsing text: String) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let length = HLSValue.decimalInteger(parts[0]) else { return nil }
        var offset: Int?
        if parts.count == 2 {
            guard let value = HLSValue.decimalInteger(parts[1]) else { return nil }
            offset = value
        }
        self.init(length: length, offset: offset)
    }

    /// `LENGTH[@OFFSET]`.
    public var description: String { offset.map { "\(length)@\($0)" } ?? "\(length)" }
}

/// Parsing and formatting of HLS scalar values.
enum HLSValue {
    /// RFC 8216 decimal-integer: ASCII digits only.
    static func decimalInteger(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy(isDigit) else { return nil }
        return Int(text)
    }

    /// RFC 8216 decimal-floating-point: digits with at most one `.` (no sign, exponent, inf or nan).
    static func decimalFloat(_ text: some StringProtocol) -> Double? {
        var sawDigit = false
        var sawPoint = false
        for byte in text.utf8 {
            if isDigit(byte) {
                sawDigit = true
            } else if byte == UInt8(ascii: "."), !sawPoint {
                sawPoint = true
            } else {
                return nil
            }
        }
        return sawDigit ? Double(String(text)) : nil
    }

    /// `YES` or `NO`.
    static func yesNo(_ text: String) -> Bool? {
        switch text {
        case "YES": true
        case "NO": false
        default: nil
        }
    }

    /// `YES` or `NO`.
    static func yesNo(_ value: Bool) -> String { value ? "YES" : "NO" }

    /// `0x` followed by an even, non-zero number of hex digits.
    static func isHexadecimalSequence(_ text: String) -> Bool {
        guard text.hasPrefix("0x") || text.hasPrefix("0X") else { return false }
        let digits = text.utf8.dropFirst(2)
        return !digits.isEmpty && digits.allSatisfy { $0.isHexDigit }
    }

    /// `value` with exactly `decimals` fractional digits, rounded half away from zero, locale-free.
    static func fixed(_ value: Double, decimals: Int) -> String {
        var scale: Double = 1
        for _ in 0..<decimals { scale *= 10 }
        guard value.isFinite, abs(value * scale) < 9e15 else { return String(value) }
        let scaled = Int64((abs(value) * scale).rounded())
        let unit = Int64(scale)
        let fraction = String(scaled % unit)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        guard decimals > 0 else { return sign + String(scaled) }
        return sign + String(scaled / unit) + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

extension UInt8 {
    /// Whether the byte is an ASCII hexadecimal digit.
    var isHexDigit: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
             UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default:
            false
        }
    }
}
