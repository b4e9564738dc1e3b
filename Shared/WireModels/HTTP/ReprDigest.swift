public import Crypto
public import Foundation

/// A representation's SHA-256 digest as RFC 9530's `Repr-Digest` field carries it:
/// `Repr-Digest: sha-256=:BASE64:`. It describes the whole representation, so a `206` answer
/// to a range request carries the digest of the whole file, and a client that resumed a body
/// checks the file it assembled against it.
///
/// The mock sends it (and a strong `ETag` made from it) on every media body; the SDK checks
/// each body it keeps against it.
///
/// ```swift
/// let digest = ReprDigest(of: bytes)
/// headers.add("Repr-Digest", digest.headerValue)   // sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:
/// ReprDigest(headerValue: "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:") == digest
/// ```
public struct ReprDigest: Sendable, Hashable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256 digest.
    public let sha256: [UInt8]

    /// A digest from its 32 bytes; nil for any other length.
    public init?(sha256: [UInt8]) {
        guard sha256.count == SHA256.byteCount else { return nil }
        self.sha256 = sha256
    }

    /// The digest of `bytes`.
    public init(of bytes: some DataProtocol) {
        sha256 = Array(SHA256.hash(data: bytes))
    }

    /// The digest of `buffer`.
    public init(of buffer: UnsafeRawBufferPointer) {
        sha256 = Array(SHA256.hash(data: buffer))
    }

    /// The digest of a finished running hash.
    public init(_ hasher: consuming SHA256) {
        sha256 = Array(hasher.finalize())
    }

    /// The field's value: `sha-256=:BASE64:`.
    public var headerValue: String { "sha-256=:" + Data(sha256).base64EncodedString() + ":" }

    /// A strong entity tag made from the digest (quotes included): equal bytes, equal tag.
    public var etag: String { "\"sha256-" + hex.prefix(32) + "\"" }

    /// The digest as 64 lowercase hex digits (how the SDK's store keeps it).
    public var hex: String { Hex.lowercase(sha256) }

    /// A digest from 64 hex digits; nil for anything else.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = 0
        while index < 64 {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        sha256 = bytes
    }

    /// The `sha-256` member of a `Repr-Digest` (or `Content-Digest`) field value, an RFC 8941
    /// dictionary such as `sha-512=:…:, sha-256=:…:`; nil when the field names no well-formed
    /// sha-256 digest (other algorithms are skipped, as RFC 9530 lets a recipient do).
    public init?(headerValue: String) {
        for member in headerValue.split(separator: ",") {
            let trimmed = member.trimmingCharacters(in: .whitespaces)
            guard let equals = trimmed.firstIndex(of: "=") else { continue }
            guard trimmed[..<equals].lowercased() == "sha-256" else { continue }
            // A byte sequence, `:BASE64:`, possibly followed by parameters (`;…`).
            var value = trimmed[trimmed.index(after: equals)...]
            if let semicolon = value.firstIndex(of: ";") { value = value[..<semicolon] }
            guard value.count >= 2, value.first == ":", value.last == ":",
                  let bytes = Data(base64Encoded: String(value.dropFirst().dropLast())) else { return nil }
            self.init(sha256: Array(bytes))
            return
        }
        return nil
    }

    public var description: String { headerValue }
}
