public import Foundation

/// ISO-8601 timestamps as the Playback API writes them: UTC, milliseconds, `Z` (`2024-03-01T12:00:00.000Z`).
///
/// Hand-written rather than a `DateFormatter` so the output is identical on every platform and
/// locale, always carries exactly three fractional digits, and the functions are trivially `Sendable`.
public enum WireDate {
    /// Formats `date` as `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'` in UTC, rounded to the nearest millisecond.
    public static func string(from date: Date) -> String {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (seconds, milliseconds) = floorDivide(totalMilliseconds, 1000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civilDate(fromDays: days)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
            + "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay % 3600 / 60, 2) + ":" + pad(secondOfDay % 60, 2)
            + "." + pad(milliseconds, 3) + "Z"
    }

    /// Parses an ISO-8601 timestamp with or without fractional seconds, with `Z` or a `±hh:mm` offset;
    /// nil also for an instant outside the years 0000-9999 in UTC, which `string(from:)` cannot write.
    public static func date(from string: String) -> Date? {
        var scanner = DigitScanner(Array(string.utf8))
        guard let year = scanner.number(digits: 4), scanner.skip("-"),
              let month = scanner.number(digits: 2), scanner.skip("-"),
              let day = scanner.number(digits: 2), scanner.skip("T") || scanner.skip("t"),
              let hour = scanner.number(digits: 2), scanner.skip(":"),
              let minute = scanner.number(digits: 2), scanner.skip(":"),
              let second = scanner.number(digits: 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction: Int64 = 0
        var scale: Int64 = 1
        if scanner.skip(".") {
            var count = 0
            while let digit = scanner.digit() {
                count += 1
                // Nanoseconds are the most Date can hold meaningfully; ignore further digits.
                if count <= 9 {
                    fraction = fraction * 10 + digit
                    scale *= 10
                }
            }
            guard count > 0 else { return nil }
        }
        var offsetSeconds: Int64 = 0
        if scanner.skip("Z") || scanner.skip("z") {
            // UTC
        } else if let sign = scanner.sign() {
            guard let hours = scanner.number(digits: 2) else { return nil }
            _ = scanner.skip(":")
            guard let minutes = scanner.number(digits: 2), hours < 24, minutes < 60 else { return nil }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard scanner.isAtEnd else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        // One integer division keeps a millisecond value bit-identical to the literal it was written
        // from. A long fraction on a date far from 1970 overflows Int64 there: add it as a Double.
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: scale)
        let (total, carry) = scaled.addingReportingOverflow(fraction)
        let date = overflow || carry
            ? Date(timeIntervalSince1970: Double(seconds) + Double(fraction) / Double(scale))
            : Date(timeIntervalSince1970: Double(total) / Double(scale))
        // Only instants `string(from:)` writes back as they are read: years 0000-9999 in UTC once
        // rounded to the millisecond (an offset can move a local time past either end).
        guard (-62_167_219_200_000 ... 253_402_300_799_999).contains((date.timeIntervalSince1970 * 1000).rounded()) else {
            return nil
        }
        return date
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : (value - divisor + 1) / divisor
        return (quotient, value - quotient * divisor)
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar).
    private static func civilDate(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// A cursor over ASCII bytes for the timestamp parser.
private struct DigitScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index == bytes.count }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int64? {
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
        defer { index += 1 }
        return Int64(bytes[index] - UInt8(ascii: "0"))
    }

    mutating func number(digits count: Int) -> Int64? {
        var value: Int64 = 0
        for _ in 0..<count {
            guard let digit = digit() else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    mutating func sign() -> Int64? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }
}
