/// An HLS attribute list (`NAME=VALUE,NAME="quoted value",…`), kept in its original order.
///
/// Values are stored without quotes. Whether a value is written quoted follows the attribute's
/// name (RFC 8216 quoted-string attributes are always quoted, enumerated/decimal/hex/resolution
/// values never); for names this type does not know, the quoting seen on input is kept.
public struct AttributeList: Sendable, Hashable, CustomStringConvertible {
    /// One `NAME=VALUE` pair.
    public struct Attribute: Sendable, Hashable {
        /// The attribute name, e.g. `BANDWIDTH`.
        public let name: String
        /// The value, without surrounding quotes.
        public let value: String
        /// Whether the value is written as a quoted string.
        public let isQuoted: Bool

        /// Creates an attribute; `isQuoted` only matters for names whose quoting is not fixed by RFC 8216.
        public init(name: String, value: String, isQuoted: Bool = false) {
            self.name = name
            self.value = value
            self.isQuoted = AttributeList.requiredQuoting(name: name, value: value) ?? isQuoted
        }

        /// `NAME=VALUE` or `NAME="VALUE"`.
        public var formatted: String { isQuoted ? "\(name)=\"\(value)\"" : "\(name)=\(value)" }
    }

    /// Attribute names whose values are quoted strings.
    public static let quotedStringNames: Set<String> = [
        "URI", "GROUP-ID", "LANGUAGE", "ASSOC-LANGUAGE", "NAME", "CODECS", "AUDIO", "VIDEO", "SUBTITLES",
        "CLOSED-CAPTIONS", "KEYFORMAT", "KEYFORMATVERSIONS", "CHANNELS", "INSTREAM-ID", "CHARACTERISTICS",
        "BYTERANGE",
    ]

    /// Attribute names whose values are never quoted (enumerated, decimal, hexadecimal, resolution).
    public static let unquotedNames: Set<String> = [
        "BANDWIDTH", "AVERAGE-BANDWIDTH", "RESOLUTION", "FRAME-RATE", "HDCP-LEVEL", "VIDEO-RANGE",
        "PROGRAM-ID", "SCORE", "TYPE", "DEFAULT", "AUTOSELECT", "FORCED", "METHOD", "IV", "TIME-OFFSET", "PRECISE",
    ]

    /// The enumerated `CLOSED-CAPTIONS` value meaning "no closed captions"; written unquoted.
    public static let none = "NONE"

    /// Whether `name=value` must be quoted (true), must not be (false), or is up to the writer (nil).
    public static func requiredQuoting(name: String, value: String) -> Bool? {
        if name == "CLOSED-CAPTIONS" { return value != none }
        if quotedStringNames.contains(name) { return true }
        if unquotedNames.contains(name) { return false }
        return nil
    }

    /// The attributes in order.
    public private(set) var attributes: [Attribute]

    /// Creates a list from attributes, in the given order.
    public init(_ attributes: [Attribute] = []) {
        self.attributes = attributes
    }

    /// Whether the list is empty.
    public var isEmpty: Bool { attributes.isEmpty }

    /// The attribute names in order.
    public var names: [String] { attributes.map(\.name) }

    /// The value of `name`, or nil; setting replaces it in place (or appends), setting nil removes it.
    public subscript(name: String) -> String? {
        get { attributes.first { $0.name == name }?.value }
        set {
            let index = attributes.firstIndex { $0.name == name }
            switch (index, newValue) {
            case let (index?, value?): attributes[index] = Attribute(name: name, value: value)
            case let (index?, nil): attributes.remove(at: index)
            case let (nil, value?): attributes.append(Attribute(name: name, value: value))
            case (nil, nil): break
            }
        }
    }

    /// Appends an attribute (replacing any attribute of the same name in place).
    public mutating func set(_ attribute: Attribute) {
        if let index = attributes.firstIndex(where: { $0.name == attribute.name }) {
            attributes[index] = attribute
        } else {
            attributes.append(attribute)
        }
    }

    /// Removes and returns the attribute named `name`.
    @discardableResult
    public mutating func remove(_ name: String) -> Attribute? {
        guard let index = attributes.firstIndex(where: { $0.name == name }) else { return nil }
        return attributes.remove(at: index)
    }

    /// The attributes not named in `names`, in order.
    public func removing(_ names: Set<String>) -> AttributeList {
        AttributeList(attributes.filter { !names.contains($0.name) })
    }

    /// The list as written in a tag: `NAME=VALUE,NAME="VALUE"`.
    public var description: String { attributes.map(\.formatted).joined(separator: ",") }

    // MARK: Typed accessors (nil when absent or malformed)

    /// A decimal-integer value.
    public func decimalInteger(_ name: String) -> Int? { self[name].flatMap(HLSValue.decimalInteger) }

    /// A decimal-floating-point value.
    public func decimalFloat(_ name: String) -> Double? { self[name].flatMap(HLSValue.decimalFloat) }

    /// A `YES`/`NO` value.
    public func yesNo(_ name: String) -> Bool? { self[name].flatMap(HLSValue.yesNo) }

    /// A decimal-resolution value (`1280x720`).
    public func resolution(_ name: String) -> Resolution? { self[name].flatMap(Resolution.init(parsing:)) }

    /// A byte-range value (`length[@offset]`).
    public func byteRange(_ name: String) -> ByteRange? { self[name].flatMap(ByteRange.init(parsing:)) }
}
