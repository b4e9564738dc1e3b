public import Foundation

/// The license rules, written once on the terms they read: the server's policy issues terms
/// with them and the device enforces them with them, so the two cannot disagree. Pure
/// functions of the terms, a first play the device may know of before the server does, and an
/// instant. A new term gets its rule here (docs/license-protocol.md, "Adding a term").
extension LicenseTerms {
    /// How long a streaming (online-only) license lives after its issue.
    public static let streamingLifetime: TimeInterval = 5 * 60

    /// When a license of `kind` ends: never for a purchase; a streaming license
    /// `streamingLifetime` after its issue; a rental at its end, or at first play + play
    /// duration if that is earlier. What the server writes into `expiresAt`.
    public static func expiry(kind: LicenseKind, issuedAt: Date, rentalEnd: Date?, playDuration: TimeInterval?, firstPlay: Date?) -> Date? {
        switch kind {
        case .purchase: return nil
        case .streaming: return issuedAt.addingTimeInterval(streamingLifetime)
        case .rental:
            guard let firstPlay, let playDuration else { return rentalEnd }
            let playEnd = firstPlay.addingTimeInterval(playDuration)
            return rentalEnd.map { min($0, playEnd) } ?? playEnd
        }
    }

    /// The first play that counts: the earlier of the server's and `local` (the device's, which
    /// the server may not have heard of yet).
    public func effectiveFirstPlay(local: Date?) -> Date? {
        switch (firstPlay, local) {
        case (let server?, let local?): min(server, local)
        case (let server?, nil): server
        case (nil, let local): local
        }
    }

    /// When the license ends, given the device's first play: the signed expiry, shortened by the
    /// play window from the first play that counts. Nil: never.
    public func expiry(localFirstPlay: Date?) -> Date? {
        guard kind == .rental else { return expiresAt }
        // The rental rule of `expiry(kind:…)`, ending no later than what was signed.
        return Self.expiry(kind: .rental, issuedAt: issuedAt, rentalEnd: expiresAt ?? rentalEnd, playDuration: playDuration,
                           firstPlay: effectiveFirstPlay(local: localFirstPlay))
    }

    /// Whether opening the video now starts its play window (a rental with a play duration
    /// not yet played anywhere): the first play must be recorded, then reported.
    public func startsPlayWindow(localFirstPlay: Date?) -> Bool {
        kind == .rental && playDuration != nil && effectiveFirstPlay(local: localFirstPlay) == nil
    }

    /// Whether the license has ended at `date` (by its signed expiry alone).
    public func isExpired(at date: Date) -> Bool { expiresAt.map { date >= $0 } ?? false }

    /// What the rules say of playing at `now`.
    public enum Verdict: Sendable, Equatable {
        /// It plays; `until` is when it ends (nil: never).
        case playable(until: Date?)
        /// It ended at that instant.
        case expired(at: Date)
    }

    /// The verdict at `now`, with the device's first play.
    public func verdict(at now: Date, localFirstPlay: Date?) -> Verdict {
        let end = expiry(localFirstPlay: localFirstPlay)
        if let end, now >= end { return .expired(at: end) }
        return .playable(until: end)
    }

    /// These terms with their first play recorded at `now` (kept if there was one) and the
    /// expiry it implies: what the server signs when told of a first play.
    public func firstPlayed(at now: Date) -> LicenseTerms {
        var terms = self
        terms.firstPlay = firstPlay ?? now
        terms.expiresAt = Self.expiry(kind: kind, issuedAt: issuedAt, rentalEnd: rentalEnd, playDuration: playDuration, firstPlay: terms.firstPlay)
        return terms
    }
}
