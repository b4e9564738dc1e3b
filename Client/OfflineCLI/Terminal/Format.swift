import Foundation
import OfflineSDK
import LicenseProtocol

/// Numbers and times as a person reads them.
enum Format {
    /// `4.1 MB`, `812 KB`, `1.25 GB` (powers of 1,000, as download tools show them).
    static func bytes(_ count: Int64) -> String {
        let value = Double(count)
        switch value {
        case ..<1_000: return "\(count) B"
        case ..<1_000_000: return String(format: "%.0f KB", value / 1_000)
        case ..<1_000_000_000: return String(format: "%.1f MB", value / 1_000_000)
        default: return String(format: "%.2f GB", value / 1_000_000_000)
        }
    }

    /// `2.4 MB/s`.
    static func rate(_ bytesPerSecond: Double) -> String {
        bytes(Int64(bytesPerSecond.rounded())) + "/s"
    }

    /// A duration in its largest sensible units: `45 s`, `12 min`, `6 h`, `47 h`, `3 d 4 h`.
    static func duration(_ seconds: TimeInterval) -> String {
        let s = Int(abs(seconds).rounded())
        switch s {
        case ..<90: return "\(s) s"
        case ..<(90 * 60): return "\(Int((Double(s) / 60).rounded())) min"
        case ..<(72 * 3600): return "\(Int((Double(s) / 3600).rounded())) h"
        default:
            let days = s / 86400, hours = Int((Double(s % 86400) / 3600).rounded())
            return hours == 0 ? "\(days) d" : "\(days) d \(hours) h"
        }
    }

    /// Time left as a clock: `0:42`, `12:05`, `1:02:10`.
    static func clock(_ seconds: TimeInterval) -> String {
        let s = max(0, Int(seconds.rounded()))
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }

    /// An ISO 8601 time in UTC.
    static func date(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// A media selection as a person names it: `video 640x360`, `audio fr`, `subtitles de`.
    static func selection(_ selection: OfflineMediaSelection) -> String {
        switch selection.kind {
        case .video: "video \(selection.name)"
        case .audio, .subtitles: "\(selection.kind.rawValue) \(selection.language ?? selection.name)"
        }
    }

    /// The license in one line: `purchase, never expires`, `rental, 47 h left, 6 h play window
    /// not started`, `rental, 47 h left, 5 h of the 6 h play window left`, `expired 2 h ago`,
    /// `no license`. `now` is the SDK's clock (the remaining times in `info` were taken at it).
    static func license(_ info: OfflineLicenseInfo?, fairPlay: Bool, now: Date) -> String {
        guard fairPlay else { return "clear, no license needed" }
        guard let info else { return "no license" }
        if info.isExpired, let end = info.expiration { return "expired \(duration(now.timeIntervalSince(end))) ago" }
        switch info.kind {
        case .purchase: return "purchase, never expires"
        case .streaming: return "streaming only"
        case .rental:
            var parts = ["rental"]
            if let left = info.rentalRemaining { parts.append("\(duration(left)) left") }
            if let window = info.playDuration {
                if info.firstPlay == nil {
                    parts.append("\(duration(window)) play window not started")
                } else if let remaining = info.playRemaining {
                    parts.append("\(duration(remaining)) of the \(duration(window)) play window left")
                }
            }
            return parts.joined(separator: ", ")
        }
    }
}
