public import Foundation
public import LicenseProtocol

/// The whole picture of an offline video's license at one moment: what the app shows ("rental,
/// 47 h left, 6 h play window not started") and what playback enforces.
public struct OfflineLicenseInfo: Sendable, Equatable {
    /// Purchase or rental (streaming licenses are never stored).
    public var kind: LicenseKind
    /// The server's id for the license, kept across renewals.
    public var licenseID: String
    /// When the current terms were issued (a renewal issues new ones).
    public var issuedAt: Date
    /// Rentals: the absolute end of the rental.
    public var rentalEnd: Date?
    /// Rentals with dual expiry: the window that starts at the first playback, in seconds.
    public var playDuration: TimeInterval?
    /// When the video was first played on this device (or, if earlier, as the server recorded
    /// it); nil until then.
    public var firstPlay: Date?
    /// When the license ends: min(rental end, first play + play duration); nil for a purchase.
    public var expiration: Date?
    /// Seconds until the rental end (negative once past); nil for a purchase.
    public var rentalRemaining: TimeInterval?
    /// Seconds left in the play window: the whole window until the first play, then what is
    /// left of it (negative once past); nil without a play duration.
    public var playRemaining: TimeInterval?
    /// Whether the license has ended at the moment this was made.
    public var isExpired: Bool
}

/// What the device adds to the license rules (which live on `LicenseTerms`, shared with the
/// server): the picture an app shows, the clock-rollback rule, and a verdict as its error.
enum LicenseRules {
    /// How far the wall clock may stand behind the trusted-time mark before playback is refused.
    static let defaultClockTolerance: TimeInterval = 600

    /// The license picture at `now`.
    static func info(_ terms: LicenseTerms, localFirstPlay: Date?, now: Date) -> OfflineLicenseInfo {
        let expiration = terms.expiry(localFirstPlay: localFirstPlay)
        let first = terms.effectiveFirstPlay(local: localFirstPlay)
        let playRemaining = terms.playDuration.map { duration in
            first.map { $0.addingTimeInterval(duration).timeIntervalSince(now) } ?? duration
        }
        return OfflineLicenseInfo(
            kind: terms.kind, licenseID: terms.licenseID, issuedAt: terms.issuedAt, rentalEnd: terms.rentalEnd,
            playDuration: terms.playDuration, firstPlay: first, expiration: expiration,
            rentalRemaining: terms.kind == .rental ? (terms.rentalEnd ?? expiration)?.timeIntervalSince(now) : nil,
            playRemaining: playRemaining, isExpired: expiration.map { now >= $0 } ?? false)
    }

    /// Refuses playback of a license at `now`: expired (69303), then a wall clock more than
    /// `tolerance` behind the trusted-time mark (turning the clock back cannot extend a rental).
    static func checkPlayable(_ terms: LicenseTerms, localFirstPlay: Date?, now: Date, trustedTime: Date?,
                              tolerance: TimeInterval, token: OfflineVideoToken) throws(OfflineVideoError) {
        if case .expired(let end) = terms.verdict(at: now, localFirstPlay: localFirstPlay) {
            throw OfflineVideoError(.expiredLicense, .licenseExpired,
                                    "The license of offline video \(token) expired at \(Self.format(end))")
        }
        if let trustedTime, now < trustedTime.addingTimeInterval(-tolerance) {
            throw OfflineVideoError(.invalidLicense, .clockRollback,
                                    "The device clock (\(Self.format(now))) is behind the latest trusted time (\(Self.format(trustedTime))): "
                                        + "set the clock right to play licensed videos")
        }
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
