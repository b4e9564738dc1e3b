import Foundation
import LicenseProtocol
import Testing
@testable import MockBackend

/// The license rules with a fixed clock, no I/O.
@Suite("License rules (LicensePolicy)")
struct LicensePolicyTests {
    static let t0 = Date(timeIntervalSince1970: 1_790_000_000)
    static let day: TimeInterval = 86400

    static func context(_ kind: LicenseRequestKind = .acquire, licenseID: String? = nil, device: String = "dev-1",
                        createdAt: Date = t0, nonce: UInt8 = 1) -> ServerPlaybackContext {
        ServerPlaybackContext(kind: kind, accountID: "acct", contentKeyID: "key-1", licenseID: licenseID, deviceID: device,
                              nonce: Array(repeating: nonce, count: 16), createdAt: createdAt, clientKey: [])
    }

    static func request(_ kind: LicenseRequestKind = .acquire, licenseID: String? = nil, device: String = "dev-1",
                        offline: Bool = true, profile: LicenseProfile? = LicenseProfile(.purchase),
                        user: RestrictedUser? = nil, createdAt: Date = t0) -> LicenseRequest {
        LicenseRequest(context: context(kind, licenseID: licenseID, device: device, createdAt: createdAt), videoID: "v1",
                       offline: offline, profile: profile.map { .success($0) }, user: user)
    }

    static func rental(days: Double = 30, playHours: Double? = 24) -> LicenseProfile {
        LicenseProfile(.rental(absoluteExpiration: t0.addingTimeInterval(days * day), playDuration: playHours.map { $0 * 3600 }))
    }

    static func decide(_ request: LicenseRequest, nonceAlreadyUsed: Bool = false, existing: LicenseRecord? = nil,
                       devices: DeviceState = DeviceState(), now: Date = t0) -> LicenseDecision {
        LicensePolicy.decide(request, nonceAlreadyUsed: nonceAlreadyUsed, existing: existing, devices: devices, now: now,
                             newLicenseID: "lic-new")
    }

    static func issued(_ decision: LicenseDecision, sourceLocation: SourceLocation = #_sourceLocation) throws -> LicenseRecord {
        guard case .issue(let record, _) = decision else {
            Issue.record("expected a license, got \(decision)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        return record
    }

    static func refusal(_ decision: LicenseDecision) -> String? {
        if case .refuse(let refusal) = decision { return refusal.subcode }
        return nil
    }

    @Test("a purchase never expires and is persistable")
    func purchase() throws {
        let record = try Self.issued(Self.decide(Self.request()))
        #expect(record.terms.kind == .purchase)
        #expect(record.terms.expiresAt == nil)
        #expect(record.terms.persistable)
        #expect(record.terms.licenseID == "lic-new")
        #expect(!record.terms.isExpired(at: Self.t0.addingTimeInterval(100 * 365 * Self.day)))
    }

    @Test("a rental ends at its absolute expiration")
    func rental() throws {
        let record = try Self.issued(Self.decide(Self.request(profile: Self.rental(days: 30, playHours: nil))))
        #expect(record.terms.kind == .rental)
        #expect(record.terms.expiresAt == Self.t0.addingTimeInterval(30 * Self.day))
        #expect(!record.terms.isExpired(at: Self.t0.addingTimeInterval(30 * Self.day - 1)))
        #expect(record.terms.isExpired(at: Self.t0.addingTimeInterval(30 * Self.day)))
    }

    @Test("the play duration starts at the reported first play: expiry = min(rental end, first play + duration)")
    func playDuration() throws {
        let acquired = try Self.issued(Self.decide(Self.request(profile: Self.rental(days: 30, playHours: 24))))
        #expect(acquired.terms.expiresAt == Self.t0.addingTimeInterval(30 * Self.day))
        let played = Self.t0.addingTimeInterval(2 * Self.day)
        let report = Self.request(.firstPlay, licenseID: "lic-new", createdAt: played)
        let first = try Self.issued(Self.decide(report, existing: acquired, now: played))
        #expect(first.terms.firstPlay == played)
        #expect(first.terms.expiresAt == played.addingTimeInterval(Self.day))
        // A later report does not move it.
        let later = Self.t0.addingTimeInterval(2 * Self.day + 3600)
        let again = try Self.issued(Self.decide(Self.request(.firstPlay, licenseID: "lic-new", createdAt: later), existing: first, now: later))
        #expect(again.terms.firstPlay == played)
        #expect(again.terms.expiresAt == played.addingTimeInterval(Self.day))
        // Played near the rental end: the rental end wins.
        let late = Self.t0.addingTimeInterval(29.5 * Self.day)
        let lateRecord = try Self.issued(Self.decide(Self.request(.firstPlay, licenseID: "lic-new", createdAt: late), existing: acquired, now: late))
        #expect(lateRecord.terms.expiresAt == Self.t0.addingTimeInterval(30 * Self.day))
    }

    @Test("a first-play report on an expired license is refused")
    func firstPlayExpired() throws {
        let acquired = try Self.issued(Self.decide(Self.request(profile: Self.rental(days: 1))))
        let after = Self.t0.addingTimeInterval(2 * Self.day)
        #expect(Self.refusal(Self.decide(Self.request(.firstPlay, licenseID: "lic-new", createdAt: after), existing: acquired, now: after))
                == "LICENSE_EXPIRED")
    }

    @Test("a renewal keeps the license id and replaces the terms; rental to purchase is allowed; an expired license may be renewed")
    func renewal() throws {
        let rented = try Self.issued(Self.decide(Self.request(profile: Self.rental(days: 1))))
        let later = Self.t0.addingTimeInterval(3 * Self.day)  // the rental has ended
        let renewed = try Self.issued(Self.decide(Self.request(.renew, licenseID: "lic-new", createdAt: later), existing: rented, now: later))
        #expect(renewed.terms.licenseID == "lic-new")
        #expect(renewed.terms.kind == .purchase)
        #expect(renewed.terms.expiresAt == nil)
        #expect(renewed.terms.issuedAt == later)
        let back = LicenseProfile(.rental(absoluteExpiration: later.addingTimeInterval(Self.day), playDuration: 3600))
        let rerented = try Self.issued(Self.decide(Self.request(.renew, licenseID: "lic-new", profile: back, createdAt: later),
                                                   existing: renewed, now: later))
        #expect(rerented.terms.kind == .rental)
        #expect(rerented.terms.firstPlay == nil)
        #expect(rerented.terms.playDuration == 3600)
    }

    @Test("a renewal with a bitrate, a malformed or missing profile, or of a streaming license is refused")
    func renewalRefusals() throws {
        let bought = try Self.issued(Self.decide(Self.request()))
        var withBitrate = LicenseProfile(.purchase)
        withBitrate.bitrate = 800_000
        #expect(Self.refusal(Self.decide(Self.request(.renew, licenseID: "lic-new", profile: withBitrate), existing: bought)) == "RENEWAL_BITRATE")
        var malformed = Self.request(.renew, licenseID: "lic-new")
        malformed.profile = .failure(LicenseProtocolError(.invalidRentalProfile, "bad"))
        #expect(Self.refusal(Self.decide(malformed, existing: bought)) == "INVALID_CRT")
        #expect(Self.refusal(Self.decide(Self.request(.renew, licenseID: "lic-new", profile: nil), existing: bought)) == "CRT_REQUIRED")
        #expect(Self.refusal(Self.decide(Self.request(.renew, licenseID: "lic-new", offline: false), existing: bought)) == "CRT_REQUIRED")
        let streaming = try Self.issued(Self.decide(Self.request(offline: false)))
        #expect(Self.refusal(Self.decide(Self.request(.renew, licenseID: "lic-new"), existing: streaming)) == "NOT_RENEWABLE")
        #expect(Self.refusal(Self.decide(Self.request(.renew, licenseID: "lic-new"), existing: nil)) == "LICENSE_NOT_FOUND")
        #expect(Self.refusal(Self.decide(Self.request(.renew, licenseID: "lic-new", device: "dev-2"), existing: bought)) == "LICENSE_MISMATCH")
    }

    @Test("without the offline header the license is a 5-minute, non-persistable streaming license")
    func streaming() throws {
        let record = try Self.issued(Self.decide(Self.request(offline: false, profile: nil)))
        #expect(record.terms.kind == .streaming)
        #expect(!record.terms.persistable)
        #expect(record.terms.expiresAt == Self.t0.addingTimeInterval(300))
    }

    @Test("CRT refusals: missing, malformed, rental in the past")
    func crtRefusals() {
        #expect(Self.refusal(Self.decide(Self.request(profile: nil))) == "CRT_REQUIRED")
        var malformed = Self.request()
        malformed.profile = .failure(LicenseProtocolError(.invalidRentalProfile, "neither purchase nor rental"))
        #expect(Self.refusal(Self.decide(malformed)) == "INVALID_CRT")
        #expect(Self.refusal(Self.decide(Self.request(profile: Self.rental(days: -1)))) == "RENTAL_IN_PAST")
        #expect(Self.refusal(Self.decide(Self.request(profile: Self.rental(days: 0)))) == "RENTAL_IN_PAST")
    }

    @Test("stale and replayed SPCs are refused")
    func staleAndReplayed() {
        #expect(Self.refusal(Self.decide(Self.request(createdAt: Self.t0.addingTimeInterval(-601)))) == "SPC_STALE")
        #expect(Self.refusal(Self.decide(Self.request(createdAt: Self.t0.addingTimeInterval(61)))) == "SPC_STALE")
        if case .issue = Self.decide(Self.request(createdAt: Self.t0.addingTimeInterval(-599))) {} else { Issue.record("fresh SPC refused") }
        #expect(Self.refusal(Self.decide(Self.request(), nonceAlreadyUsed: true)) == "SPC_REPLAYED")
    }

    @Test("device limits: registered devices pass, new ones are refused at the limit, lowering dlimit evicts nobody")
    func deviceLimits() throws {
        let user = RestrictedUser(userID: "u1", deviceLimit: 2)
        guard case .issue(_, let first) = Self.decide(Self.request(user: user)) else { Issue.record("refused"); return }
        #expect(first == "dev-1")
        let two = DeviceState(registered: ["dev-1", "dev-2"])
        guard case .issue(_, let again) = Self.decide(Self.request(user: user), devices: two) else { Issue.record("refused"); return }
        #expect(again == nil)
        #expect(Self.refusal(Self.decide(Self.request(device: "dev-3", user: user), devices: two)) == "DENIED_BY_DEVICE_LIMITING")
        let lowered = RestrictedUser(userID: "u1", deviceLimit: 1)
        if case .refuse = Self.decide(Self.request(device: "dev-2", user: lowered), devices: two) { Issue.record("evicted a registered device") }
        let unlimited = RestrictedUser(userID: "u1", deviceLimit: nil)
        guard case .issue(_, let free) = Self.decide(Self.request(device: "dev-9", user: unlimited), devices: two) else { Issue.record("refused"); return }
        #expect(free == "dev-9")
        guard case .issue(_, let anonymous) = Self.decide(Self.request(device: "dev-9"), devices: two) else { Issue.record("refused"); return }
        #expect(anonymous == nil)
    }

    @Test("a release frees the license and its device slot when the device holds no other license")
    func release() throws {
        var bought = try Self.issued(Self.decide(Self.request(user: RestrictedUser(userID: "u1", deviceLimit: 1))))
        #expect(bought.userID == "u1")
        #expect(Self.decide(Self.request(.release, licenseID: "lic-new"), existing: bought)
                == .release(licenseID: "lic-new", at: Self.t0, userID: "u1", freeDevice: "dev-1"))
        #expect(Self.decide(Self.request(.release, licenseID: "lic-new"), existing: bought, devices: DeviceState(otherLicensesOnDevice: 1))
                == .release(licenseID: "lic-new", at: Self.t0, userID: "u1", freeDevice: nil))
        bought.releasedAt = Self.t0
        #expect(Self.refusal(Self.decide(Self.request(.release, licenseID: "lic-new"), existing: bought)) == "LICENSE_RELEASED")
        #expect(Self.refusal(Self.decide(Self.request(.renew, licenseID: "lic-new"), existing: bought)) == "LICENSE_RELEASED")
        #expect(Self.refusal(Self.decide(Self.request(.release, licenseID: nil), existing: nil)) == "LICENSE_ID_REQUIRED")
    }
}
