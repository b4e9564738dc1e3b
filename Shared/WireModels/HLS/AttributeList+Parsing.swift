extension AttributeList {
    /// Parses `NAME=VALUE,…`; quoted values may contain commas and `=`.
    ///
    /// `line` is only used for the error. Duplicate names, names without a value, empty
    /// unquoted values and unterminated quoted strings are errors.
    public init(parsing text: String, line: Int = 1) throws(HLSParseError) {
        let bytes = Array(text.utf8)
        var index = 0
        var attributes: [Attribute] = []
        var seen: Set<String> = []
        func fail(_ message: String) -> HLSParseError { HLSParseError(line: line, message: message) }
        func string(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }

        while index < bytes.count {
            let nameStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), bytes[index] != UInt8(ascii: ",") {
                index += 1
            }
            let name = string(nameStart..<index)
            guard !name.isEmpty, name.utf8.allSatisfy(Self.isNameByte) else {
                throw fail("invalid attribute name \"\(name)\"")
            }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                throw fail("attribute \(name) has no value")
            }
            index += 1
            let value: String
            let quoted: Bool
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                let valueStart = index + 1
                guard let close = bytes[valueStart...].firstIndex(of: UInt8(ascii: "\"")) else {
                    throw fail("unterminated quoted string in attribute \(name)")
                }
                value = string(valueStart..<close)
                quoted = true
                index = close + 1
            } else {
                let valueStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
                value = string(valueStart..<index)
                quoted = false
                guard !value.isEmpty else { throw fail("attribute \(name) has an empty value") }
                guard !value.contains("\"") else { throw fail("stray quote in the value of attribute \(name)") }
            }
            if index < bytes.count {
                guard bytes[index] == UInt8(ascii: ",") else {
                    throw fail("expected ',' after the value of attribute \(name)")
                }
                index += 1
            }
            guard seen.insert(name).inserted else { throw fail("duplicate attribute \(name)") }
            attributes.append(Attribute(name: name, value: value, isQuoted: quoted))
        }
        self.init(attributes)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    // MARK: Checked accessors for the parsers: nil when absent, an error when malformed.

    func checkedInteger(_ name: String, line: Int) throws(HLSParseError) -> Int? {
        try checked(name, line: line, expected: "a decimal integer", HLSValue.decimalInteger)
    }

    func checkedFloat(_ name: String, line: Int) throws(HLSParseError) -> Double? {
        try checked(name, line: line, expected: "a decimal number", HLSValue.decimalFloat)
    }

    func checkedYesNo(_ name: String, line: Int) throws(HLSParseError) -> Bool? {
        try checked(name, line: line, expected: "YES or NO", HLSValue.yesNo)
    }

    func checkedResolution(_ name: String, line: Int) throws(HLSParseError) -> Resolution? {
        try checked(name, line: line, expected: "WIDTHxHEIGHT", Resolution.init(parsing:))
    }

    func checkedByteRange(_ name: String, line: Int) throws(HLSParseError) -> ByteRange? {
        try checked(name, line: line, expected: "LENGTH[@OFFSET]", ByteRange.init(parsing:))
    }

    func required(_ name: String, in tag: String, line: Int) throws(HLSParseError) -> String {
        guard let value = self[name] else { throw HLSParseError(line: line, message: "\(tag) without \(name)") }
        return value
    }

    private func checked<T>(
        _ name: String, line: Int, expected: String, _ parse: (String) -> T?
    ) throws(HLSParseError) -> T? {
        guard let text = self[name] else { return nil }
        guard let value = parse(text) else {
            throw HLSParseError(line: line, message: "\(name) must be \(expected), found \"\(text)\"")
        }
        return value
    }
}
