public import Crypto
public import Foundation

/// Why a `fastly_token` was refused: a stable `code`, a message, and for an expired token
/// its expiry.
public struct URLTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, stable.
    public let code: Code
    /// A sentence for logs.
    public let message: String
    /// When the token expired; set for `.expired` only.
    public let expiry: Date?

    /// Creates an error.
    public init(_ code: Code, _ message: String, expiry: Date? = nil) {
        self.code = code
        self.message = message
        self.expiry = expiry
    }

    /// The code and the message on one line.
    public var description: String { "\(code): \(message)" }

    /// The kinds of refusal. A struct over a private enum, so kinds can be added later
    /// without breaking anyone's exhaustive switch.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable { case malformed, expired, forged }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not base64 of `{8 hex}_{64 hex}`.
        public static let malformed = Code(.malformed)
        /// Well-formed and authentic, but its expiry (`URLTokenError.expiry`) has passed.
        public static let expired = Code(.expired)
        /// The HMAC does not match this path and secret.
        public static let forged = Code(.forged)

        /// The stable number of the kind (`NSError.code`): malformed 1, expired 2, forged 3.
        public var number: Int {
            switch base {
            case .malformed: 1
            case .expired: 2
            case .forged: 3
            }
        }

        /// The stable name of the kind, e.g. "expired".
        public var description: String { base.rawValue }
    }
}

/// Fastly-style signed URL tokens, the `fastly_token` query parameter of manifest, media and key URLs.
///
/// The token is standard base64 of the ASCII text `{expiry}_{hmac}`: `expiry` is the Unix time in
/// seconds as 8 lowercase hex digits, `hmac` is HMAC-SHA256 over `"{expiry}:{path}"` as 64
/// lowercase hex digits, where `path` is the URL's path exactly as written (no host, no query).
/// In a URL the token is percent-encoded (`+`, `/`, `=`).
///
/// A media token may instead cover every path under a prefix (what a DASH `SegmentTemplate`
/// needs: one token in the template, valid for each `$Number$`): `{expiry}_{hmac}_{prefix}`,
/// the HMAC over `"{expiry}:{prefix}"`, like Brightcove's three-part media tokens. The prefix
/// starts and ends with `/`, and a path with `.` or `..` segments or empty ones never matches it.
public enum URLToken {
    /// The query parameter name.
    public static let queryName = "fastly_token"

    /// Makes the token (base64, not yet percent-encoded) for `path`, valid until `expiresAt`.
    public static func make(path: String, expiresAt: Date, secret: SymmetricKey) -> String {
        Key(secret: secret).make(path: path, expiresAt: expiresAt)
    }

    /// Makes a token with a secret given as raw bytes.
    public static func make(path: String, expiresAt: Date, secret: some ContiguousBytes) -> String {
        make(path: path, expiresAt: expiresAt, secret: SymmetricKey(data: secret))
    }

    /// Checks that `token` was made for `path` with `secret` and has not expired at `now`; returns its expiry.
    ///
    /// The HMAC is compared in constant time, and before the expiry, so `.expired` is only ever
    /// reported for authentic tokens. A token is valid up to and including its expiry instant.
    @discardableResult
    public static func verify(
        _ token: String, path: String, secret: SymmetricKey, now: Date
    ) throws(URLTokenError) -> Date {
        try Key(secret: secret).verify(token, path: path, now: now)
    }

    /// One secret, keyed once, for making and checking tokens: a server signs every segment
    /// URL of a playlist and checks a token on every media request, and keying HMAC costs as
    /// much as the rest of either.
    public struct Key: Sendable {
        private let keyed: HMAC<SHA256>

        public init(secret: SymmetricKey) { keyed = HMAC(key: secret) }

        /// As `URLToken.make(path:expiresAt:secret:)`.
        public func make(path: String, expiresAt: Date) -> String {
            let expiryHex = URLToken.hex(URLToken.expirySeconds(expiresAt), width: 8)
            let text = expiryHex + "_" + mac(expiryHex: expiryHex, path: path).map { URLToken.hex(UInt64($0), width: 2) }.joined()
            return Data(text.utf8).base64EncodedString()
        }

        /// A token for every path under `prefix` (which starts and ends with `/`), valid until `expiresAt`.
        public func make(prefix: String, expiresAt: Date) -> String {
            precondition(prefix.hasPrefix("/") && prefix.hasSuffix("/"), "a token prefix starts and ends with /")
            let expiryHex = URLToken.hex(URLToken.expirySeconds(expiresAt), width: 8)
            let text = expiryHex + "_" + mac(expiryHex: expiryHex, path: prefix).map { URLToken.hex(UInt64($0), width: 2) }.joined() + "_" + prefix
            return Data(text.utf8).base64EncodedString()
        }

        /// As `URLToken.verify(_:path:secret:now:)`.
        @discardableResult
        public func verify(_ token: String, path: String, now: Date) throws(URLTokenError) -> Date {
            guard let parts = ParsedToken(token) else {
                throw URLTokenError(.malformed, "the token is not base64 of {8 hex digits}_{64 hex digits}, or of that and _{path prefix}")
            }
            if let prefix = parts.prefix {
                guard path.hasPrefix(prefix), !path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
                    .contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
                    throw URLTokenError(.forged, "the token covers the paths under \(prefix), not this one")
                }
            }
            guard mac(expiryHex: parts.expiryHex, path: parts.prefix ?? path) == parts.mac else {  // constant-time comparison
                throw URLTokenError(.forged, "the token's HMAC does not match this path")
            }
            guard now <= parts.expiry else {
                throw URLTokenError(.expired, "the token expired at \(parts.expiry)", expiry: parts.expiry)
            }
            return parts.expiry
        }

        /// HMAC-SHA256 over `"{expiry}:{path}"`.
        private func mac(expiryHex: String, path: String) -> HashedAuthenticationCode<SHA256> {
            var message: [UInt8] = []
            message.reserveCapacity(9 + path.utf8.count)
            message += expiryHex.utf8
            message.append(UInt8(ascii: ":"))
            message += path.utf8
            var hmac = keyed
            hmac.update(data: message)
            return hmac.finalize()
        }
    }

    /// Verifies a token with a secret given as raw bytes.
    @discardableResult
    public static func verify(
        _ token: String, path: String, secret: some ContiguousBytes, now: Date
    ) throws(URLTokenError) -> Date {
        try verify(token, path: path, secret: SymmetricKey(data: secret), now: now)
    }

    /// The expiry written in a token (base64 or percent-encoded), without checking its HMAC; nil if malformed.
    public static func expiry(of token: String) -> Date? {
        ParsedToken(token)?.expiry
    }

    /// The expiry of the `fastly_token` in a URL; nil if the URL has none or it is malformed.
    public static func expiry(ofURL url: String) -> Date? {
        token(inURL: url).flatMap(expiry(of:))
    }

    static func expirySeconds(_ date: Date) -> UInt64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds > 0 else { return 0 }
        return seconds >= Double(UInt32.max) ? UInt64(UInt32.max) : UInt64(seconds)
    }

    static func hex(_ value: UInt64, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

/// The parts of a well-formed token.
private struct ParsedToken {
    let expiryHex: String
    let expiry: Date
    let mac: [UInt8]
    /// The path prefix a three-part token covers (starts and ends with `/`, no `.`/`..`/empty segments).
    let prefix: String?

    init?(_ token: String) {
        // Tolerate a still percent-encoded token, and a query parser that turned '+' into ' '.
        // (Checked byte-wise first: this runs on every media request, and Foundation's string
        // search costs more than the HMAC.)
        let utf8 = token.utf8
        var base64 = utf8.contains(UInt8(ascii: "%")) ? (token.removingPercentEncoding ?? token) : token
        if base64.utf8.contains(UInt8(ascii: " ")) { base64 = base64.replacingOccurrences(of: " ", with: "+") }
        guard let data = Data(base64Encoded: base64) else { return nil }
        let bytes = Array(data)
        guard bytes.count >= 8 + 1 + 64, bytes[8] == UInt8(ascii: "_"),
              bytes[..<8].allSatisfy(Self.isLowercaseHex), bytes[9 ..< 73].allSatisfy(Self.isLowercaseHex)
        else { return nil }
        if bytes.count == 73 {
            prefix = nil
        } else {
            guard bytes[73] == UInt8(ascii: "_"), bytes.count > 75, let text = String(validating: bytes[74...], as: UTF8.self),
                  text.hasPrefix("/"), text.hasSuffix("/"),
                  !text.dropFirst().dropLast().split(separator: "/", omittingEmptySubsequences: false)
                      .contains(where: { $0.isEmpty || $0 == "." || $0 == ".." })
            else { return nil }
            prefix = text
        }
        expiryHex = String(decoding: bytes[..<8], as: UTF8.self)
        guard let seconds = UInt32(expiryHex, radix: 16) else { return nil }
        expiry = Date(timeIntervalSince1970: TimeInterval(seconds))
        mac = stride(from: 9, to: 73, by: 2).map { Self.nibble(bytes[$0]) << 4 | Self.nibble(bytes[$0 + 1]) }
    }

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func nibble(_ byte: UInt8) -> UInt8 {
        byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : byte - UInt8(ascii: "a") + 10
    }
}

/// The message as `localizedDescription`; `(error as NSError).code` is `code.number`.
extension URLTokenError: LocalizedError, CustomNSError {
    /// The domain of every `URLTokenError`; it never changes.
    public static let errorDomain = "WireModels.URLTokenError"
    /// `code.number`.
    public var errorCode: Int { code.number }
    /// The message (swift-corelibs-foundation reads it only from here).
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
    /// The message.
    public var errorDescription: String? { message }
}
