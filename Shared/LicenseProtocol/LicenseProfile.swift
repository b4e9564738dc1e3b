public import Foundation
import WireModels

/// The `X-BC-CRT-CONFIG` header of an offline license request: base64 of
/// `{"profile":{"purchase":{}},"storeLicense":true}` or
/// `{"profile":{"rental":{"absoluteExpiration":"2026-12-01T00:00:00Z","playDuration":86400000}},"storeLicense":true}`.
public struct LicenseProfile: Sendable, Equatable {
    /// Purchase or rental.
    public enum Terms: Sendable, Equatable {
        /// Never expires.
        case purchase
        /// Ends at `absoluteExpiration`, or `playDuration` seconds after the first playback if earlier.
        case rental(absoluteExpiration: Date, playDuration: TimeInterval?)
    }

    /// What is asked for.
    public var terms: Terms
    /// `storeLicense`.
    public var storeLicense: Bool
    /// A `bitrate` member, if the profile carried one (refused at renewal).
    public var bitrate: Double?

    /// Creates a profile.
    public init(_ terms: Terms, storeLicense: Bool = true) {
        self.terms = terms
        self.storeLicense = storeLicense
        bitrate = nil
    }

    /// The header value: base64 of the JSON (times to the second, play duration in ms).
    public var headerValue: String {
        var profile: [String: Any] = [:]
        switch terms {
        case .purchase: profile["purchase"] = [String: Any]()
        case .rental(let end, let duration):
            var rental: [String: Any] = ["absoluteExpiration": Self.formatDate(end)]
            if let duration { rental["playDuration"] = Int64((duration * 1000).rounded()) }
            profile["rental"] = rental
        }
        var object: [String: Any] = ["profile": profile, "storeLicense": storeLicense]
        if let bitrate { object["bitrate"] = bitrate }
        let json = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return json.base64EncodedString()
    }

    /// Parses a header value. Exactly one of `purchase` and `rental`; a rental needs an
    /// `absoluteExpiration`; `playDuration` (ms, number or numeric string) must be > 0.
    public init(headerValue: String) throws(LicenseProtocolError) {
        func invalid(_ why: String) -> LicenseProtocolError { LicenseProtocolError(.invalidRentalProfile, why) }
        var text = headerValue.trimmingCharacters(in: .whitespaces)
        if text.count % 4 != 0 { text += String(repeating: "=", count: 4 - text.count % 4) }
        guard let data = Data(base64Encoded: text) else { throw invalid("X-BC-CRT-CONFIG is not base64") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw invalid("X-BC-CRT-CONFIG is not a base64 JSON object")
        }
        guard let profile = object["profile"] as? [String: Any] else { throw invalid("the CRT has no profile object") }
        let purchase = profile["purchase"], rental = profile["rental"]
        switch (purchase, rental) {
        case (nil, nil): throw invalid("the profile has neither purchase nor rental")
        case (.some, .some): throw invalid("the profile has both purchase and rental")
        case (.some(let p), nil):
            guard p is [String: Any] else { throw invalid("purchase must be an object") }
            terms = .purchase
        case (nil, .some(let r)):
            guard let r = r as? [String: Any] else { throw invalid("rental must be an object") }
            guard let endText = r["absoluteExpiration"] as? String, let end = WireDate.date(from: endText) else {
                throw invalid("rental needs absoluteExpiration as yyyy-MM-ddTHH:mm:ssZ")
            }
            var duration: TimeInterval?
            if let raw = r["playDuration"], !(raw is NSNull) {
                guard let ms = Self.number(raw), ms.isFinite, ms > 0, ms <= 100 * 365 * 86_400_000 else {
                    throw invalid("playDuration must be a positive number of milliseconds")
                }
                duration = ms / 1000
            }
            terms = .rental(absoluteExpiration: end, playDuration: duration)
        }
        if let store = object["storeLicense"] {
            guard let flag = store as? Bool ?? (store as? NSNumber)?.boolValue else { throw invalid("storeLicense must be a boolean") }
            storeLicense = flag
        } else {
            storeLicense = true
        }
        if let raw = object["bitrate"] ?? profile["bitrate"] {
            bitrate = Self.number(raw) ?? -1
        } else {
            bitrate = nil
        }
    }

    /// A JSON number (not a boolean), or a string holding one.
    private static func number(_ value: Any) -> Double? {
        if let s = value as? String { return Double(s.trimmingCharacters(in: .whitespaces)) }
        // Foundation hands JSON booleans over as NSNumber too; their type code is "c".
        guard let n = value as? NSNumber, String(cString: n.objCType) != "c" else { return nil }
        return n.doubleValue
    }

    static func formatDate(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
