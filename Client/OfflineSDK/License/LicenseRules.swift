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

/// The license rules the SDK enforces on the device, as pure functions of the signed terms,
/// the locally recorded first play and the clock.
enum LicenseRules {
    /// How far the wall clock may stand behind the trusted-time mark before playback is refused.
    static let defaultClockTolerance: TimeInterval = 600

    /// The first play that counts: the earlier of the local one and the server's.
    static func firstPlay(_ terms: LicenseTerms, localFirstPlay: Date?) -> Date? {
        switch (terms.firstPlay, localFirstPlay) {
        case (let server?, let local?): min(server, local)
        case (let server?, nil): server
        case (nil, let local): local
        }
    }

    /// When the license ends: the server's expiry, shortened by the play window from the first
    /// play the device knows of (the server's expiry may not include it yet). Nil: never.
    static func expiration(_ terms: LicenseTerms, localFirstPlay: Date?) -> Date? {
        guard terms.kind == .rental else { return terms.expiresAt }
        var end = terms.expiresAt ?? terms.rentalEnd
        if let duration = terms.playDuration, let first = firstPlay(terms, localFirstPlay: localFirstPlay) {
            let playEnd = first.addingTimeInterval(duration)
            end = end.map { min($0, playEnd) } ?? playEnd
        }
        return end
    }

    /// Whether opening the video now starts its play window (and so must record and report a first play).
    static func startsPlayWindow(_ terms: LicenseTerms, localFirstPlay: Date?) -> Bool {
        terms.kind == .rental && terms.playDuration != nil && firstPlay(terms, localFirstPlay: localFirstPlay) == nil
    }

    /// The license picture at `now`.
    static func info(_ terms: LicenseTerms, localFirstPlay: Date?, now: Date) -> OfflineLicenseInfo {
        let expiration = expiration(terms, localFirstPlay: localFirstPlay)
        let first = firstPlay(terms, localFirstPlay: localFirstPlay)
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
        if let end = expiration(terms, localFirstPlay: localFirstPlay), now >= end {
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
