import Foundation
import LicenseProtocol
import WireModels

/// Everything a license decision looks at, gathered by the route and the store.
struct LicenseRequest: Sendable {
    /// The opened SPC (kind, device, nonce, license id, creation time).
    var context: ServerPlaybackContext
    /// The video the key URL names.
    var videoID: String
    /// `X-BOLT-OFFLINE-LICENSE: true`.
    var offline: Bool
    /// `X-BC-CRT-CONFIG`: nil when absent, else what parsing it gave.
    var profile: Result<LicenseProfile, LicenseProtocolError>?
    /// The playback-restriction token's user, when a token with `uid` came along.
    var user: RestrictedUser?
    /// An acquisition's `Idempotency-Key` header: every try of one acquisition carries the same
    /// key (with a fresh SPC each time), so a retry after a lost answer gets the same license.
    var idempotencyKey: String? = nil

    /// The id an acquisition's license has: derived from the device, the video and the
    /// idempotency key when there is one (a retry names the license its first try made), else nil
    /// (a new time-ordered id). The store reads that license, if any, as the one the request names.
    var retriedLicenseID: String? {
        guard context.kind == .acquire, let key = idempotencyKey else { return nil }
        return StableID.uuid("acquire\u{1F}\(context.accountID)\u{1F}\(context.deviceID)\u{1F}\(videoID)\u{1F}\(key)")
    }

    /// The license the request names: its SPC's, or the one a retried acquisition made.
    var namedLicenseID: String? { context.licenseID ?? retriedLicenseID }
}

/// A token's user and device limit.
struct RestrictedUser: Sendable, Equatable {
    var userID: String
    /// `dlimit`; nil means no limit.
    var deviceLimit: Int?
}

/// The server's record of a license: its current terms and who holds it.
struct LicenseRecord: Sendable, Equatable {
    var terms: LicenseTerms
    /// The token user it was issued to, if any (the user whose device slot it holds).
    var userID: String?
    var releasedAt: Date?
    /// When an admin revoked it: renewals and first plays are refused from then on.
    var revokedAt: Date? = nil

    /// active, expired, released or revoked (the admin API's `state`).
    func state(at now: Date) -> String {
        if revokedAt != nil { return "revoked" }
        if releasedAt != nil { return "released" }
        return terms.isExpired(at: now) ? "expired" : "active"
    }
}

/// The devices a decision needs to know about.
struct DeviceState: Sendable, Equatable {
    /// Devices registered for the request's user (for release: the license's user).
    var registered: Set<String> = []
    /// Release only: unreleased offline licenses of that user on that device, besides this one.
    var otherLicensesOnDevice = 0
}

/// What to do.
enum LicenseDecision: Sendable, Equatable {
    /// Store `record` (new or replacing the license of the same id), log the request kind,
    /// register `registerDevice` for `record.userID`, and answer a CKC with `record.terms`.
    case issue(LicenseRecord, registerDevice: String?)
    /// Mark the license released at `at`; free `freeDevice` for `userID` if set.
    case release(licenseID: String, at: Date, userID: String?, freeDevice: String?)
    /// Answer the error, with its stable status, code and subcode (docs/license-protocol.md, "Errors").
    case refuse(HTTPError)
}

extension HTTPError {
    static func badRequest(_ subcode: String, _ message: String) -> HTTPError {
        HTTPError(400, PlaybackAPIErrorCode.badRequest, subcode, message)
    }
    static func denied(_ subcode: String, _ message: String) -> HTTPError {
        HTTPError(403, PlaybackAPIErrorCode.accessDenied, subcode, message)
    }
}

/// The license rules: one pure function of (request, existing license, devices, clock).
enum LicensePolicy {
    /// How old an SPC may be.
    static let spcMaximumAge: TimeInterval = 10 * 60
    /// How far in the future an SPC's creation time may be (clock skew).
    static let spcMaximumSkew: TimeInterval = 60

    /// Decides what to do with `request`. `nonceAlreadyUsed`: the SPC's nonce was seen
    /// before; `existing` is the license the SPC names (if it names one and it exists);
    /// `newLicenseID` is used for an acquire.
    static func decide(_ request: LicenseRequest, nonceAlreadyUsed: Bool, existing: LicenseRecord?, devices: DeviceState,
                       now: Date, newLicenseID: String) -> LicenseDecision {
        do {
            return try decideOrThrow(request, nonceAlreadyUsed: nonceAlreadyUsed, existing: existing, devices: devices, now: now,
                                     newLicenseID: newLicenseID)
        } catch {
            return .refuse(error)
        }
    }

    private static func decideOrThrow(_ request: LicenseRequest, nonceAlreadyUsed: Bool, existing: LicenseRecord?, devices: DeviceState,
                                      now: Date, newLicenseID: String) throws(HTTPError) -> LicenseDecision {
        let context = request.context
        let age = now.timeIntervalSince(context.createdAt)
        guard age <= spcMaximumAge, age >= -spcMaximumSkew else {
            throw .badRequest("SPC_STALE", "The SPC was made at \(WireDate.string(from: context.createdAt)); the server's time is "
                              + "\(WireDate.string(from: now)) and SPCs are accepted up to 10 minutes old and 1 minute ahead")
        }
        guard !nonceAlreadyUsed else { throw .denied("SPC_REPLAYED", "This SPC was already used; make a new one per request") }

        switch context.kind {
        case .acquire:
            if let earlier = existing {
                // A retry of an acquisition the server already carried out (its answer was lost):
                // the same license again, never a second one, unless it has ended since.
                try checkNotRevoked(earlier)
                guard earlier.releasedAt == nil else {
                    throw HTTPError(409, "CONFLICT", "IDEMPOTENCY_KEY_REUSED",
                                    "License \(earlier.terms.licenseID), made under this Idempotency-Key, was released; use a new key")
                }
                guard earlier.terms.deviceID == context.deviceID, earlier.terms.videoID == request.videoID else {
                    throw .denied("LICENSE_MISMATCH", "License \(earlier.terms.licenseID) was issued for another device or video")
                }
            }
            let terms = try newTerms(request, licenseID: request.retriedLicenseID ?? newLicenseID, now: now, renewal: false)
            let registering = try checkDeviceLimit(request, devices)
            return .issue(LicenseRecord(terms: terms, userID: request.user?.userID, releasedAt: nil), registerDevice: registering)
        case .renew:
            let record = try held(request, existing)
            try checkNotRevoked(record)
            guard record.terms.kind != .streaming else {
                throw .badRequest("NOT_RENEWABLE", "A streaming license cannot be renewed; request a new one")
            }
            let terms = try newTerms(request, licenseID: record.terms.licenseID, now: now, renewal: true)
            let registering = try checkDeviceLimit(request, devices)
            return .issue(LicenseRecord(terms: terms, userID: record.userID, releasedAt: nil), registerDevice: registering)
        case .firstPlay:
            let record = try held(request, existing)
            try checkNotRevoked(record)
            guard !record.terms.isExpired(at: now) else {
                throw .denied("LICENSE_EXPIRED", "License \(record.terms.licenseID) expired at \(WireDate.string(from: record.terms.expiresAt ?? now))")
            }
            var terms = record.terms.firstPlayed(at: now)
            terms.requestNonce = context.nonce
            let registering = try checkDeviceLimit(request, devices)
            return .issue(LicenseRecord(terms: terms, userID: record.userID, releasedAt: nil), registerDevice: registering)
        case .release:
            let record = try held(request, existing)
            let free = record.userID != nil && devices.otherLicensesOnDevice == 0 ? record.terms.deviceID : nil
            return .release(licenseID: record.terms.licenseID, at: now, userID: record.userID, freeDevice: free)
        }
    }

    /// The terms an acquire or a renewal asks for.
    private static func newTerms(_ request: LicenseRequest, licenseID: String, now: Date, renewal: Bool) throws(HTTPError) -> LicenseTerms {
        let context = request.context
        func terms(_ kind: LicenseKind, rentalEnd: Date? = nil, playDuration: TimeInterval? = nil) -> LicenseTerms {
            LicenseTerms(licenseID: licenseID, kind: kind, accountID: context.accountID, videoID: request.videoID,
                         contentKeyID: context.contentKeyID, deviceID: context.deviceID, issuedAt: now,
                         rentalEnd: rentalEnd, playDuration: playDuration, firstPlay: nil,
                         expiresAt: LicenseTerms.expiry(kind: kind, issuedAt: now, rentalEnd: rentalEnd, playDuration: playDuration, firstPlay: nil),
                         persistable: kind != .streaming, requestNonce: context.nonce)
        }
        guard request.offline else {
            if renewal { throw .badRequest("CRT_REQUIRED", "A renewal needs X-BOLT-OFFLINE-LICENSE: true and X-BC-CRT-CONFIG") }
            return terms(.streaming)
        }
        guard let parsed = request.profile else {
            throw .badRequest("CRT_REQUIRED", "An offline license request needs X-BC-CRT-CONFIG (purchase or rental)")
        }
        let profile: LicenseProfile
        switch parsed {
        case .success(let p): profile = p
        case .failure(let error): throw .badRequest("INVALID_CRT", "X-BC-CRT-CONFIG: \(error.message)")
        }
        if renewal, profile.bitrate != nil {
            throw .badRequest("RENEWAL_BITRATE", "A renewal may not name a bitrate")
        }
        switch profile.terms {
        case .purchase:
            return terms(.purchase)
        case .rental(let end, let duration):
            guard end > now else {
                throw .badRequest("RENTAL_IN_PAST", "absoluteExpiration \(WireDate.string(from: end)) is not after \(WireDate.string(from: now))")
            }
            return terms(.rental, rentalEnd: end, playDuration: duration)
        }
    }

    /// The existing license the SPC names, checked to be live and this device's.
    private static func held(_ request: LicenseRequest, _ existing: LicenseRecord?) throws(HTTPError) -> LicenseRecord {
        let context = request.context
        guard let id = context.licenseID, !id.isEmpty else {
            throw .badRequest("LICENSE_ID_REQUIRED", "\(context.kind.rawValue) needs the license id in the SPC")
        }
        guard let record = existing, record.terms.licenseID == id else {
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, "LICENSE_NOT_FOUND", "No license \(id)")
        }
        guard record.releasedAt == nil else {
            throw HTTPError(410, "GONE", "LICENSE_RELEASED", "License \(id) was released")
        }
        guard record.terms.deviceID == context.deviceID, record.terms.videoID == request.videoID,
              record.terms.contentKeyID == context.contentKeyID, record.terms.accountID == context.accountID
        else { throw .denied("LICENSE_MISMATCH", "License \(id) was issued for another device or video") }
        return record
    }

    private static func checkNotRevoked(_ record: LicenseRecord) throws(HTTPError) {
        if let revokedAt = record.revokedAt {
            throw .denied("LICENSE_REVOKED", "License \(record.terms.licenseID) was revoked at \(WireDate.string(from: revokedAt))")
        }
    }

    /// The device to register, or a refusal when the user is at their limit. Devices
    /// already registered always pass, whatever the limit is now.
    private static func checkDeviceLimit(_ request: LicenseRequest, _ devices: DeviceState) throws(HTTPError) -> String? {
        guard let user = request.user else { return nil }
        let device = request.context.deviceID
        if devices.registered.contains(device) { return nil }
        if let limit = user.deviceLimit, devices.registered.count >= limit {
            throw .denied("DENIED_BY_DEVICE_LIMITING",
                          "User \(user.userID) already holds licenses on \(devices.registered.count) devices (limit \(limit))")
        }
        return device
    }
}
