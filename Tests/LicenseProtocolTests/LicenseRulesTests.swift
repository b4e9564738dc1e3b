import Foundation
import LicenseProtocol
import Testing

/// The license rules on `LicenseTerms` that the server issues with and the device enforces
/// with: one suite for both sides.
@Suite("LicenseProtocol: license rules (pure)")
struct LicenseRulesTests {
    static let issued = Date(timeIntervalSince1970: 1_796_000_000)
    static let hour: TimeInterval = 3600

    static func terms(_ kind: LicenseKind, rentalHours: Double? = nil, playHours: Double? = nil, serverFirstPlayHours: Double? = nil) -> LicenseTerms {
        let rentalEnd = rentalHours.map { issued.addingTimeInterval($0 * hour) }
        let playDuration = playHours.map { $0 * hour }
        let firstPlay = serverFirstPlayHours.map { issued.addingTimeInterval($0 * hour) }
        return LicenseTerms(licenseID: "l", kind: kind, accountID: "a", videoID: "v", contentKeyID: "k", deviceID: "d", issuedAt: issued,
                            rentalEnd: rentalEnd, playDuration: playDuration, firstPlay: firstPlay,
                            expiresAt: LicenseTerms.expiry(kind: kind, issuedAt: issued, rentalEnd: rentalEnd, playDuration: playDuration,
                                                           firstPlay: firstPlay),
                            persistable: kind != .streaming, requestNonce: [])
    }

    static func at(_ hours: Double) -> Date { issued.addingTimeInterval(hours * hour) }

    @Test("the expiry the server signs: purchase never, streaming 5 minutes after issue, rental at its end or first play + play duration if earlier")
    func signedExpiry() {
        #expect(Self.terms(.purchase).expiresAt == nil)
        #expect(Self.terms(.streaming).expiresAt == Self.issued.addingTimeInterval(300))
        #expect(Self.terms(.rental, rentalHours: 48).expiresAt == Self.at(48))
        #expect(Self.terms(.rental, rentalHours: 48, playHours: 6).expiresAt == Self.at(48), "not played: the rental end")
        #expect(Self.terms(.rental, rentalHours: 48, playHours: 6, serverFirstPlayHours: 1).expiresAt == Self.at(7))
        #expect(Self.terms(.rental, rentalHours: 48, playHours: 6, serverFirstPlayHours: 45).expiresAt == Self.at(48), "the rental end comes first")
        #expect(Self.terms(.rental, playHours: 6, serverFirstPlayHours: 2).expiresAt == Self.at(8), "no rental end: the play window alone")
    }

    @Test("the first play that counts is the earlier of the server's and the device's")
    func effectiveFirstPlay() {
        let played = Self.terms(.rental, rentalHours: 48, playHours: 6, serverFirstPlayHours: 3)
        #expect(played.effectiveFirstPlay(local: nil) == Self.at(3))
        #expect(played.effectiveFirstPlay(local: Self.at(2)) == Self.at(2))
        #expect(played.effectiveFirstPlay(local: Self.at(4)) == Self.at(3))
        #expect(Self.terms(.rental, rentalHours: 48, playHours: 6).effectiveFirstPlay(local: Self.at(5)) == Self.at(5))
        #expect(Self.terms(.rental, rentalHours: 48, playHours: 6).effectiveFirstPlay(local: nil) == nil)
    }

    @Test("the device's expiry: the signed one, shortened by a play window the server has not heard of yet")
    func deviceExpiry() {
        let rental = Self.terms(.rental, rentalHours: 48, playHours: 6)
        #expect(rental.expiry(localFirstPlay: nil) == Self.at(48))
        #expect(rental.expiry(localFirstPlay: Self.at(10)) == Self.at(16))
        #expect(rental.expiry(localFirstPlay: Self.at(45)) == Self.at(48))
        let reported = rental.firstPlayed(at: Self.at(10))
        #expect(reported.firstPlay == Self.at(10) && reported.expiresAt == Self.at(16), "what the server signs on the report")
        #expect(reported.expiry(localFirstPlay: Self.at(10)) == Self.at(16), "server and device agree")
        #expect(reported.firstPlayed(at: Self.at(12)).firstPlay == Self.at(10), "a second report keeps the first play")
        #expect(Self.terms(.purchase).expiry(localFirstPlay: Self.at(1)) == nil)
        #expect(Self.terms(.rental, rentalHours: 48).expiry(localFirstPlay: Self.at(1)) == Self.at(48), "no play duration: the rental end")
    }

    @Test("an open starts the play window only for an unplayed rental with a play duration")
    func startsPlayWindow() {
        #expect(Self.terms(.rental, rentalHours: 48, playHours: 6).startsPlayWindow(localFirstPlay: nil))
        #expect(!Self.terms(.rental, rentalHours: 48, playHours: 6).startsPlayWindow(localFirstPlay: Self.at(1)))
        #expect(!Self.terms(.rental, rentalHours: 48, playHours: 6, serverFirstPlayHours: 1).startsPlayWindow(localFirstPlay: nil))
        #expect(!Self.terms(.rental, rentalHours: 48).startsPlayWindow(localFirstPlay: nil))
        #expect(!Self.terms(.purchase).startsPlayWindow(localFirstPlay: nil))
    }

    @Test("the verdict at an instant: playable until the expiry, expired at it and after")
    func verdict() {
        let rental = Self.terms(.rental, rentalHours: 48, playHours: 6)
        #expect(rental.verdict(at: Self.at(5), localFirstPlay: nil) == .playable(until: Self.at(48)))
        #expect(rental.verdict(at: Self.at(15), localFirstPlay: Self.at(10)) == .playable(until: Self.at(16)))
        #expect(rental.verdict(at: Self.at(16), localFirstPlay: Self.at(10)) == .expired(at: Self.at(16)), "the end itself is expired")
        #expect(rental.verdict(at: Self.at(49), localFirstPlay: nil) == .expired(at: Self.at(48)))
        #expect(Self.terms(.purchase).verdict(at: Self.at(100_000), localFirstPlay: nil) == .playable(until: nil))
        #expect(Self.terms(.streaming).verdict(at: Self.issued.addingTimeInterval(300), localFirstPlay: nil) == .expired(at: Self.issued.addingTimeInterval(300)))
    }
}
