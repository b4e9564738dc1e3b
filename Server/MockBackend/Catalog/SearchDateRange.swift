import Foundation

/// The date range of a search term on a date field (`created_at:2018-01-01..2018-02-01`), as
/// the CMS search syntax writes it; both ends inclusive, either end open.
///
/// An end is a date (`2018-01-01`: from the start of that UTC day as a lower end, to its end as
/// an upper end), a time (`2012-08-01T00:00:00Z`, seconds and fraction optional, `Z` or an offset,
/// UTC without one), `NOW` (the backend clock's), or a time relative to it (`-1d`, `-2days`,
/// `-4hours`, `-60minutes`; `d`/`day`/`days`, `h`/`hour`/`hours`, `minute`/`minutes`). A range
/// is `A..B`, `A..` or `..B`; one end alone is a date's day, a time's instant, or from a
/// relative time (or `NOW`) until `NOW`. Anything else is not a date range (400 `ILLEGAL_QUERY`).
struct SearchDateRange: Sendable, Equatable {
    var lower: Date?
    var upper: Date?

    /// The range from `lower` to `upper`, nil for an open end.
    init(lower: Date?, upper: Date?) {
        self.lower = lower
        self.upper = upper
    }

    /// Parses `text` (case-insensitive) with `now` as `NOW`; nil when it is not a date range.
    init?(_ text: String, now: Date) {
        let text = text.lowercased()
        if let dots = text.range(of: "..") {
            let from = String(text[..<dots.lowerBound]), to = String(text[dots.upperBound...])
            guard !(from.isEmpty && to.isEmpty) else { return nil }
            var lower: Date?, upper: Date?
            if !from.isEmpty {
                guard let end = Self.end(from, now: now) else { return nil }
                lower = end.first
            }
            if !to.isEmpty {
                guard let end = Self.end(to, now: now) else { return nil }
                upper = end.last
            }
            self.lower = lower
            self.upper = upper
        } else {
            guard let end = Self.end(text, now: now) else { return nil }
            lower = end.first
            upper = end.isRelative ? now : end.last
        }
    }

    /// Whether `date` lies in the range; a missing date (no schedule) never does.
    func contains(_ date: Date?) -> Bool {
        guard let date else { return false }
        return (lower.map { date >= $0 } ?? true) && (upper.map { date <= $0 } ?? true)
    }

    /// One end: the first and last instant it names (a day's, or one instant twice).
    private struct End { var first: Date; var last: Date; var isRelative: Bool }

    private static func end(_ text: String, now: Date) -> End? {
        if text == "now" { return End(first: now, last: now, isRelative: true) }
        // Regex values are not Sendable, so they are made here rather than kept in statics.
        if let match = text.wholeMatch(of: /-([0-9]{1,6})(d|days?|h|hours?|minutes?)/), let amount = Double(match.1) {
            let unit: Double = switch match.2 {
            case "d", "day", "days": 86_400
            case "h", "hour", "hours": 3_600
            default: 60
            }
            let date = now.addingTimeInterval(-amount * unit)
            return End(first: date, last: date, isRelative: true)
        }
        let absolute = /([0-9]{4})-([0-9]{2})-([0-9]{2})(?:t([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?(z|[+-][0-9]{2}:?[0-9]{2})?)?/
        guard let match = text.wholeMatch(of: absolute) else { return nil }
        var components = DateComponents(calendar: calendar, timeZone: utc, year: Int(match.1), month: Int(match.2), day: Int(match.3))
        guard let hour = match.4 else {
            guard components.isValidDate, let day = components.date else { return nil }
            return End(first: day, last: day.addingTimeInterval(86_400 - 0.001), isRelative: false)
        }
        components.hour = Int(hour)
        components.minute = match.5.flatMap { Int($0) }
        components.second = match.6.flatMap { Int($0) } ?? 0
        guard components.isValidDate, var date = components.date else { return nil }
        if let fraction = match.7 { date.addTimeInterval(Double("0." + fraction) ?? 0) }
        if let zone = match.8, zone != "z" {
            let digits = zone.dropFirst().filter(\.isNumber)
            guard let hours = Int(digits.prefix(2)), let minutes = Int(digits.suffix(2)), hours < 24, minutes < 60 else { return nil }
            let offset = Double(hours * 3600 + minutes * 60)
            date.addTimeInterval(zone.hasPrefix("+") ? -offset : offset)
        }
        return End(first: date, last: date, isRelative: false)
    }

    private static let utc = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? .current
    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = utc
        return calendar
    }()
}
