import Foundation
import WireModels

/// How the dashboard writes times, spans and offsets, and reads the clock form's offset.
/// The page's script writes spans the same way as it ticks (`span` there and here agree).
enum DashboardFormat {
    /// `2026-11-25 14:03:12 UTC`.
    static func time(_ date: Date) -> String {
        let wire = WireDate.string(from: date)  // 2026-11-25T14:03:12.345Z
        return wire.prefix(10) + " " + wire.dropFirst(11).prefix(8) + " UTC"
    }

    /// Milliseconds since 1970, for the script's `data-` attributes.
    static func milliseconds(_ date: Date) -> Int {
        Int((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// The two largest units of a span, whole seconds rounded down: `1d 2h`, `3h 5m`, `4m 10s`,
    /// `12s`; a second unit of 0 left out (`1h`).
    static func span(_ seconds: Double) -> String {
        var s = Int(abs(seconds).rounded(.down))
        let d = s / 86400; s %= 86400
        let h = s / 3600; s %= 3600
        let m = s / 60; s %= 60
        func two(_ big: Int, _ bigUnit: String, _ small: Int, _ smallUnit: String) -> String {
            small == 0 ? "\(big)\(bigUnit)" : "\(big)\(bigUnit) \(small)\(smallUnit)"
        }
        if d > 0 { return two(d, "d", h, "h") }
        if h > 0 { return two(h, "h", m, "m") }
        if m > 0 { return two(m, "m", s, "s") }
        return "\(s)s"
    }

    /// `in 59m 12s` or `expired 3m 4s ago` (the script keeps it ticking).
    static func countdown(to date: Date, now: Date) -> String {
        let left = date.timeIntervalSince(now)
        return left > 0 ? "in " + span(left) : "expired " + span(left) + " ago"
    }

    /// A clock offset exactly, from its largest unit to its smallest: `+1d 2h`, `-90m`,
    /// `+1d 0h 5m`… `none` at 0.
    static func offset(_ seconds: Double) -> String {
        guard seconds != 0 else { return "none" }
        var rest = abs(seconds)
        var parts: [(value: String, zero: Bool)] = []
        for (unit, size) in [("d", 86400.0), ("h", 3600.0), ("m", 60.0)] {
            let whole = (rest / size).rounded(.down)
            rest -= whole * size
            parts.append(("\(Int(whole))\(unit)", whole == 0))
        }
        parts.append(((rest.rounded() == rest ? "\(Int(rest))" : String(format: "%.3f", rest)) + "s", rest == 0))
        let kept = parts.drop { $0.zero }.reversed().drop { $0.zero }.reversed().map(\.value)
        return (seconds < 0 ? "-" : "+") + kept.joined(separator: " ")
    }

    /// A video's length as a player shows it: `0:12`, `2:00:00`.
    static func length(milliseconds: Int) -> String {
        let seconds = (milliseconds + 500) / 1000
        let h = seconds / 3600, m = seconds % 3600 / 60, s = seconds % 60
        return h > 0 ? "\(h):\(m < 10 ? "0" : "")\(m):\(s < 10 ? "0" : "")\(s)" : "\(m):\(s < 10 ? "0" : "")\(s)"
    }

    /// Seconds from the clock form: a number of seconds (`3600`, `-90.5`) or a duration in
    /// d, h, m and s (`+1d`, `-2h 30m`, `90m`). Nil when it is neither.
    static func seconds(_ text: String) -> Double? {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        var sign = 1.0
        if rest.first == "+" || rest.first == "-" {
            sign = rest.first == "-" ? -1 : 1
            rest = rest.dropFirst().drop { $0 == " " }
        }
        guard let first = rest.first, first.isASCII, first.isNumber || first == "." else { return nil }
        if let plain = Double(rest), plain.isFinite { return sign * plain }
        var total = 0.0
        var parts = 0
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            let size: Double? = switch rest.first {
            case "d": 86400
            case "h": 3600
            case "m": 60
            case "s": 1
            default: nil
            }
            guard let size else { return nil }
            total += value * size
            parts += 1
            rest = rest.dropFirst().drop { $0 == " " }
        }
        return parts > 0 ? sign * total : nil
    }
}
