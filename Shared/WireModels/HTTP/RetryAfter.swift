public import Foundation

/// The `Retry-After` field (RFC 9110 §10.2.3): a number of seconds, or an HTTP date.
///
/// ```swift
/// RetryAfter.delay(from: "2", now: now)                              // 2 s
/// RetryAfter.delay(from: "Fri, 27 Nov 2026 15:00:10 GMT", now: now) // until then (0 if past)
/// ```
public enum RetryAfter {
    /// The longest wait taken from a server: a larger value (or a date further ahead) is cut to it,
    /// so a misconfigured server cannot park a client for days.
    public static let longest: Duration = .seconds(600)

    /// The wait the field asks for at `now`, capped at `longest`; nil when the value is neither
    /// a non-negative integer nor an HTTP date.
    public static func delay(from value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            guard let seconds = Int(trimmed.prefix(9)) else { return nil }
            return min(.seconds(seconds), longest)
        }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        let seconds = max(0, date.timeIntervalSince(now))
        return min(.milliseconds(Int64(seconds * 1000)), longest)
    }
}
