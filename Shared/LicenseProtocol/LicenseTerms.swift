public import Foundation

/// The kind of a license, as the terms carry it. Raw values are persisted: never change them.
public enum LicenseKind: String, Sendable, Codable, CaseIterable {
    /// Bought: never expires.
    case purchase
    /// Rented: ends at the rental end, or earlier once the play duration runs out.
    case rental
    /// Online playback only: short-lived, not persistable.
    case streaming
}

/// The signed terms inside a CKC (docs/license-protocol.md, "Terms JSON").
public struct LicenseTerms: Sendable, Equatable, Codable {
    /// The server's id for the license, kept across renewals.
    public var licenseID: String
    /// Purchase, rental or streaming.
    public var kind: LicenseKind
    /// The account.
    public var accountID: String
    /// The video (its numeric id).
    public var videoID: String
    /// The content key id.
    public var contentKeyID: String
    /// The device the license was issued to.
    public var deviceID: String
    /// When these terms were issued.
    public var issuedAt: Date
    /// Rentals: the absolute expiration.
    public var rentalEnd: Date?
    /// Rentals: the window that starts at the first playback, in seconds.
    public var playDuration: TimeInterval?
    /// When the server learnt of the first playback.
    public var firstPlay: Date?
    /// When the license ends; nil means never (a purchase).
    public var expiresAt: Date?
    /// Whether the client may store the license for offline playback.
    public var persistable: Bool
    /// The nonce of the SPC this CKC answers.
    public var requestNonce: [UInt8]

    /// Creates terms.
    public init(licenseID: String, kind: LicenseKind, accountID: String, videoID: String, contentKeyID: String, deviceID: String,
                issuedAt: Date, rentalEnd: Date? = nil, playDuration: TimeInterval? = nil, firstPlay: Date? = nil,
                expiresAt: Date?, persistable: Bool, requestNonce: [UInt8]) {
        self.licenseID = licenseID
        self.kind = kind
        self.accountID = accountID
        self.videoID = videoID
        self.contentKeyID = contentKeyID
        self.deviceID = deviceID
        self.issuedAt = issuedAt
        self.rentalEnd = rentalEnd
        self.playDuration = playDuration
        self.firstPlay = firstPlay
        self.expiresAt = expiresAt
        self.persistable = persistable
        self.requestNonce = requestNonce
    }

    // MARK: JSON (times in milliseconds, snake_case members, version 1)

    enum CodingKeys: String, CodingKey {
        case version, kind
        case licenseID = "license_id", accountID = "account_id", videoID = "video_id", contentKeyID = "content_key_id"
        case deviceID = "device_id", issuedAt = "issued_at", rentalEnd = "rental_end", playDuration = "play_duration"
        case firstPlay = "first_play", expiresAt = "expires_at", persistable, requestNonce = "request_nonce"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard try c.decode(Int.self, forKey: .version) == 1 else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: c, debugDescription: "unsupported terms version")
        }
        func date(_ key: CodingKeys) throws -> Date? {
            guard let ms = try c.decodeIfPresent(Int64.self, forKey: key) else { return nil }
            guard let date = Milliseconds.checkedDate(ms) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "\(key.stringValue) is out of range")
            }
            return date
        }
        licenseID = try c.decode(String.self, forKey: .licenseID)
        kind = try c.decode(LicenseKind.self, forKey: .kind)
        accountID = try c.decode(String.self, forKey: .accountID)
        videoID = try c.decode(String.self, forKey: .videoID)
        contentKeyID = try c.decode(String.self, forKey: .contentKeyID)
        deviceID = try c.decode(String.self, forKey: .deviceID)
        guard let issued = try date(.issuedAt) else {
            throw DecodingError.dataCorruptedError(forKey: .issuedAt, in: c, debugDescription: "issued_at is required")
        }
        issuedAt = issued
        rentalEnd = try date(.rentalEnd)
        playDuration = try date(.playDuration)?.timeIntervalSince1970  // milliseconds too, with the same bounds
        firstPlay = try date(.firstPlay)
        expiresAt = try date(.expiresAt)
        persistable = try c.decode(Bool.self, forKey: .persistable)
        guard let nonce = Data(base64Encoded: try c.decode(String.self, forKey: .requestNonce)) else {
            throw DecodingError.dataCorruptedError(forKey: .requestNonce, in: c, debugDescription: "request_nonce is not base64")
        }
        requestNonce = Array(nonce)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(1, forKey: .version)
        try c.encode(licenseID, forKey: .licenseID)
        try c.encode(kind, forKey: .kind)
        try c.encode(accountID, forKey: .accountID)
        try c.encode(videoID, forKey: .videoID)
        try c.encode(contentKeyID, forKey: .contentKeyID)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(Milliseconds.from(issuedAt), forKey: .issuedAt)
        try c.encode(rentalEnd.map(Milliseconds.from), forKey: .rentalEnd)
        try c.encode(playDuration.map { Int64(($0 * 1000).rounded()) }, forKey: .playDuration)
        try c.encode(firstPlay.map(Milliseconds.from), forKey: .firstPlay)
        try c.encode(expiresAt.map(Milliseconds.from), forKey: .expiresAt)
        try c.encode(persistable, forKey: .persistable)
        try c.encode(Data(requestNonce).base64EncodedString(), forKey: .requestNonce)
    }
}

extension LicenseTerms {
    /// The terms JSON as the CKC carries it: the same members as `encode(to:)`, keys sorted,
    /// written directly (the CKC is built on every license request; JSONEncoder is slow).
    public func jsonBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        var first = true
        func key(_ name: String) {
            out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
            first = false
            string(name)
            out.append(UInt8(ascii: ":"))
        }
        func string(_ value: String) {
            out.append(UInt8(ascii: "\""))
            let utf8 = value.utf8
            if utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                for byte in utf8 {
                    switch byte {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), byte]
                    case 0..<0x20: out += Array(String(format: "\\u%04x", Int(byte)).utf8)
                    default: out.append(byte)
                    }
                }
            } else {
                out.append(contentsOf: utf8)  // nothing to escape: ids, base64, kinds
            }
            out.append(UInt8(ascii: "\""))
        }
        func number(_ value: Int64?) { out.append(contentsOf: (value.map(String.init) ?? "null").utf8) }
        key("account_id"); string(accountID)
        key("content_key_id"); string(contentKeyID)
        key("device_id"); string(deviceID)
        key("expires_at"); number(expiresAt.map(Milliseconds.from))
        key("first_play"); number(firstPlay.map(Milliseconds.from))
        key("issued_at"); number(Milliseconds.from(issuedAt))
        key("kind"); string(kind.rawValue)
        key("license_id"); string(licenseID)
        key("persistable"); out.append(contentsOf: (persistable ? "true" : "false").utf8)
        key("play_duration"); number(playDuration.map { Int64(($0 * 1000).rounded()) })
        key("rental_end"); number(rentalEnd.map(Milliseconds.from))
        key("request_nonce"); string(Data(requestNonce).base64EncodedString())
        key("version"); number(1)
        key("video_id"); string(videoID)
        out.append(UInt8(ascii: "}"))
        return out
    }
}
