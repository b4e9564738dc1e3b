/// An `EXT-X-KEY` (media playlist) or `EXT-X-SESSION-KEY` (master playlist): how segments are encrypted.
public struct EncryptionKey: Sendable, Hashable {
    /// `KEYFORMAT` of FairPlay Streaming.
    public static let fairPlayKeyFormat = "com.apple.streamingkeydelivery"
    /// `KEYFORMAT` meaning a plain 16-byte key fetched from `URI` (the default).
    public static let identityKeyFormat = "identity"

    /// `METHOD`.
    public var method: KeyMethod
    /// `URI` of the key (`skd://…` for FairPlay); nil only for `METHOD=NONE`.
    public var uri: String?
    /// `IV` as written, `0x` followed by 32 hex digits.
    public var iv: String?
    /// `KEYFORMAT`.
    public var keyFormat: String?
    /// `KEYFORMATVERSIONS`.
    public var keyFormatVersions: String?
    /// Any other attributes, written after the ones above.
    public var otherAttributes: AttributeList

    /// Creates a key description.
    public init(
        method: KeyMethod, uri: String? = nil, iv: String? = nil, keyFormat: String? = nil,
        keyFormatVersions: String? = nil, otherAttributes: AttributeList = AttributeList()
    ) {
        self.method = method
        self.uri = uri
        self.iv = iv
        self.keyFormat = keyFormat
        self.keyFormatVersions = keyFormatVersions
        self.otherAttributes = otherAttributes
    }

    /// The IV as bytes, or nil when absent or not valid hex.
    public var ivBytes: [UInt8]? {
        guard let iv, HLSValue.isHexadecimalSequence(iv) else { return nil }
        let digits = Array(iv.utf8.dropFirst(2))
        guard digits.count.isMultiple(of: 2) else { return nil }
        return stride(from: 0, to: digits.count, by: 2).compactMap { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)
        }
    }

    /// Formats bytes as an `IV` value: `0x` and lowercase hex digits.
    public static func ivString(_ bytes: some Sequence<UInt8>) -> String {
        "0x" + Hex.lowercase(Array(bytes))
    }

    static let modelledNames: Set<String> = ["METHOD", "URI", "IV", "KEYFORMAT", "KEYFORMATVERSIONS"]

    /// The attribute list as written: METHOD, URI, IV, KEYFORMAT, KEYFORMATVERSIONS, then the others.
    public var attributes: AttributeList {
        var list = AttributeList()
        list["METHOD"] = method.rawValue
        list["URI"] = uri
        list["IV"] = iv
        list["KEYFORMAT"] = keyFormat
        list["KEYFORMATVERSIONS"] = keyFormatVersions
        for attribute in otherAttributes.attributes { list.set(attribute) }
        return list
    }

    /// Reads a key from a parsed attribute list; `tag` names the tag in error messages.
    init(attributes: AttributeList, tag: String, line: Int) throws(HLSParseError) {
        let method = KeyMethod(rawValue: try attributes.required("METHOD", in: tag, line: line))
        let uri = attributes["URI"]
        if method != .none, uri == nil {
            throw HLSParseError(line: line, message: "\(tag) with METHOD=\(method.rawValue) needs a URI")
        }
        let iv = attributes["IV"]
        if let iv, !HLSValue.isHexadecimalSequence(iv) {
            throw HLSParseError(line: line, message: "IV must be a hexadecimal sequence, found \"\(iv)\"")
        }
        self.init(
            method: method, uri: uri, iv: iv, keyFormat: attributes["KEYFORMAT"],
            keyFormatVersions: attributes["KEYFORMATVERSIONS"],
            otherAttributes: attributes.removing(Self.modelledNames))
    }
}

/// The `METHOD` of a key. Open-ended so an unknown method survives a round trip.
public struct KeyMethod: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// Segments are not encrypted.
    public static let none = KeyMethod(rawValue: "NONE")
    /// Whole segments encrypted with AES-128-CBC (HLSe).
    public static let aes128 = KeyMethod(rawValue: "AES-128")
    /// Elementary-stream samples encrypted per Apple's SAMPLE-AES (FairPlay, or a plain key).
    public static let sampleAES = KeyMethod(rawValue: "SAMPLE-AES")
    /// SAMPLE-AES with AES-CTR (CENC `cenc` scheme).
    public static let sampleAESCTR = KeyMethod(rawValue: "SAMPLE-AES-CTR")

    /// The value as written.
    public let rawValue: String

    /// Wraps a method value.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The value as written.
    public var description: String { rawValue }
}

/// An `EXT-X-MAP`: the media initialization section (e.g. an fMP4 `init.mp4`).
public struct InitializationSection: Sendable, Hashable {
    /// `URI` of the section.
    public var uri: String
    /// `BYTERANGE` within that resource.
    public var byteRange: ByteRange?
    /// Any other attributes, written after the ones above.
    public var otherAttributes: AttributeList

    /// Creates a map.
    public init(uri: String, byteRange: ByteRange? = nil, otherAttributes: AttributeList = AttributeList()) {
        self.uri = uri
        self.byteRange = byteRange
        self.otherAttributes = otherAttributes
    }

    /// The attribute list as written: URI, BYTERANGE, then the others.
    public var attributes: AttributeList {
        var list = AttributeList()
        list["URI"] = uri
        list["BYTERANGE"] = byteRange?.description
        for attribute in otherAttributes.attributes { list.set(attribute) }
        return list
    }

    /// Reads a map from a parsed attribute list.
    init(attributes: AttributeList, line: Int) throws(HLSParseError) {
        self.init(
            uri: try attributes.required("URI", in: "EXT-X-MAP", line: line),
            byteRange: try attributes.checkedByteRange("BYTERANGE", line: line),
            otherAttributes: attributes.removing(["URI", "BYTERANGE"]))
    }
}
