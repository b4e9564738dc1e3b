import Foundation
import LicenseProtocol

/// The license transaction, written once for both stores: the SPC's nonce is consumed, the
/// users whose devices the decision reads are locked, the license and the devices are read,
/// `LicensePolicy` decides, and the decision is written, all inside one transaction of the
/// store (`steps` runs in it). So two requests at once, on any instances sharing the store,
/// never both take a user's last device slot, and a nonce is taken once.
enum LicenseTransaction {
    /// License requests between two prunings of expired nonces (`pruneNonces`).
    static let pruneEvery = 4096

    static func run(_ request: LicenseRequest, accountID: String, now: Date, pruneNonces: Bool,
                    in steps: some LicenseTransactionSteps) throws -> LicenseDecision {
        // Nonces of SPCs too old to be accepted anyway go now and then.
        if pruneNonces { try steps.pruneNonces(before: now) }
        if decidesOnNonceAlone(request) { return try decideOnNonceAlone([(request, now)], in: steps)[0] }
        let fresh = try steps.consumeNonce(request.context.nonce, until: nonceExpiry(request))
        var lockedUser = request.user?.userID
        if let user = lockedUser { try steps.lockUser(accountID: accountID, userID: user) }
        var existing = try request.namedLicenseID.flatMap { try steps.license(id: $0) }
        let deviceUser = request.context.kind == .release ? existing?.userID : request.user?.userID
        if let user = deviceUser, user != lockedUser {
            // A release names its user only through the license: lock that user, then read the license again.
            try steps.lockUser(accountID: accountID, userID: user)
            lockedUser = user
            existing = try request.namedLicenseID.flatMap { try steps.license(id: $0) }
        }
        var devices = DeviceState()
        if let user = deviceUser {
            devices.registered = try steps.devices(accountID: accountID, userID: user)
            if let existing {
                devices.otherLicensesOnDevice = try steps.otherLicensesOnDevice(accountID: accountID, userID: user,
                                                                                deviceID: existing.terms.deviceID,
                                                                                excluding: existing.terms.licenseID)
            }
        }
        let decision = LicensePolicy.decide(request, nonceAlreadyUsed: !fresh, existing: existing, devices: devices, now: now,
                                            newLicenseID: LicenseID.timeOrdered(now: now))
        switch decision {
        case .refuse: break
        case .issue(let record, let device):
            try steps.write(record, event: request.context.kind, registering: device, now: now)
        case .release(let licenseID, let at, let user, let device):
            try steps.release(licenseID: licenseID, at: at, userID: user, freeing: device)
        }
        return decision
    }

    /// Requests that decide on their nonce alone (`decidesOnNonceAlone`), taken together in
    /// one step of the store (one statement in PostgreSQL): each is decided first, as for a
    /// fresh nonce; then every nonce is recorded and, where it was fresh, its decision written.
    /// A replay, of an earlier request or of one before it in `requests`, is refused with
    /// nothing written.
    static func decideOnNonceAlone(_ requests: [(request: LicenseRequest, now: Date)],
                                   in steps: some LicenseTransactionSteps) throws -> [LicenseDecision] {
        var decisions: [LicenseDecision] = []
        var writes: [NonceWrite] = []
        var writeOfRequest: [Int?] = []  // its entry in `writes`; nil for a nonce met before in `requests`
        var seen: Set<[UInt8]> = []
        for (request, now) in requests {
            let decision = LicensePolicy.decide(request, nonceAlreadyUsed: false, existing: nil, devices: DeviceState(), now: now,
                                                newLicenseID: LicenseID.timeOrdered(now: now))
            decisions.append(decision)
            guard seen.insert(replayKey(nonce: request.context.nonce, until: nonceExpiry(request))).inserted else {
                writeOfRequest.append(nil)
                continue
            }
            let issued: (record: LicenseRecord, device: String?)?
            switch decision {
            case .refuse: issued = nil
            case .issue(let record, let device): issued = (record, device)
            case .release: preconditionFailure("a release names its license, so it is never decided on the nonce alone")
            }
            writeOfRequest.append(writes.count)
            writes.append(NonceWrite(nonce: request.context.nonce, until: nonceExpiry(request), issued: issued,
                                     event: request.context.kind, now: now))
        }
        let fresh = try steps.consumeNonces(writes)
        return requests.indices.map { index in
            if let write = writeOfRequest[index], fresh[write] { return decisions[index] }
            return LicensePolicy.decide(requests[index].request, nonceAlreadyUsed: true, existing: nil, devices: DeviceState(),
                                        now: requests[index].now, newLicenseID: "")
        }
    }

    /// Until when a request's nonce is kept: past it, its SPC is too old to be accepted anyway.
    private static func nonceExpiry(_ request: LicenseRequest) -> Date {
        request.context.createdAt.addingTimeInterval(LicensePolicy.spcMaximumAge)
    }

    /// What makes an SPC one request, the key of both stores' used SPCs (`used_spc`): its
    /// nonce's expiry (its `created_at` plus 10 minutes) in milliseconds, 8 bytes big-endian,
    /// then the nonce. A replay (the same SPC again) has the same key; so the rule is "an SPC
    /// is accepted once". Time first, so the keys of new requests sort after the kept ones and
    /// each insert lands at the end of the index instead of at a random page of it: keyed by
    /// the random nonce alone, every license dirtied a page of its own, and a database holding
    /// a few hundred thousand nonces wrote and checkpointed four times as much per license.
    /// The stores' migrations to this key ("v9", PostgreSQL 7) compute it too: a change to it
    /// needs a migration of its own.
    static func replayKey(nonce: [UInt8], until: Date) -> [UInt8] {
        let milliseconds = UInt64(bitPattern: Int64((until.timeIntervalSince1970 * 1000).rounded(.down)))
        return (0..<8).reversed().map { UInt8(truncatingIfNeeded: milliseconds >> UInt64($0 * 8)) } + nonce
    }

    /// Whether the decision reads nothing from the store but whether the nonce is fresh: no
    /// user whose devices count, no license named (by the SPC or a retried acquisition's key).
    /// Such a request (an acquisition without a restriction token's user or an idempotency key)
    /// needs no transaction of several statements: a store runs its one step on its own.
    static func decidesOnNonceAlone(_ request: LicenseRequest) -> Bool {
        request.user == nil && request.namedLicenseID == nil
    }
}

/// What the license transaction needs of a store, each step a statement or two in the store's
/// SQL dialect, all run inside the one transaction `LicenseTransaction.run` is given. A license
/// is stored as its signed terms (one value, `LicenseTerms`' JSON) beside the columns that are
/// queried (ids, user, device, issue time, persistable, released and revoked times): a new term
/// inside the signed terms needs no column and no migration.
protocol LicenseTransactionSteps {
    /// Forgets nonces that could no longer be accepted.
    func pruneNonces(before: Date) throws
    /// Records an SPC as used until `until` (its nonce's expiry), keyed by
    /// `LicenseTransaction.replayKey`; false when it was recorded already (a replayed SPC).
    func consumeNonce(_ nonce: [UInt8], until: Date) throws -> Bool
    /// Records each SPC as `consumeNonce` does and, only where it was fresh, stores what it
    /// issued as `write` does; for each, false when it was recorded already (then nothing of it
    /// is written). Their replay keys are distinct. One statement where the store can.
    func consumeNonces(_ writes: [NonceWrite]) throws -> [Bool]
    /// Holds, until the transaction ends, the lock of one user's licenses and devices (nothing
    /// to do in a store with one writer at a time).
    func lockUser(accountID: String, userID: String) throws
    /// A license by id, locked for the rest of the transaction where the store locks rows.
    func license(id: String) throws -> LicenseRecord?
    /// The devices registered for a user.
    func devices(accountID: String, userID: String) throws -> Set<String>
    /// How many other persistable, unreleased licenses the user holds on the device.
    func otherLicensesOnDevice(accountID: String, userID: String, deviceID: String, excluding licenseID: String) throws -> Int
    /// Stores an issued license (new, or replacing the one with its id: a renewal, a first
    /// play), its history entry, and the device it registers.
    func write(_ record: LicenseRecord, event: LicenseRequestKind, registering device: String?, now: Date) throws
    /// Marks a license released, with its history entry, and frees the device it names.
    func release(licenseID: String, at: Date, userID: String?, freeing device: String?) throws
}

/// A nonce to record and what its request issued (nil for a refusal), written only if the nonce is fresh.
struct NonceWrite {
    let nonce: [UInt8]
    let until: Date
    let issued: (record: LicenseRecord, device: String?)?
    let event: LicenseRequestKind
    let now: Date

    /// The SPC's key among the used ones (`LicenseTransaction.replayKey`).
    var replayKey: [UInt8] { LicenseTransaction.replayKey(nonce: nonce, until: until) }
}

extension LicenseTransactionSteps {
    func consumeNonces(_ writes: [NonceWrite]) throws -> [Bool] {
        try writes.map { write in
            guard try consumeNonce(write.nonce, until: write.until) else { return false }
            if let issued = write.issued { try self.write(issued.record, event: write.event, registering: issued.device, now: write.now) }
            return true
        }
    }
}

extension LicenseRecord {
    /// The signed terms as stored (the CKC's terms JSON).
    static func storedTerms(_ terms: LicenseTerms) -> String {
        String(decoding: terms.jsonBytes(), as: UTF8.self)
    }

    /// A stored license: its signed terms and the columns kept beside them.
    init(storedTerms: String, userID: String?, releasedAt: Date?, revokedAt: Date?) throws {
        self.init(terms: try JSONDecoder().decode(LicenseTerms.self, from: Data(storedTerms.utf8)), userID: userID,
                  releasedAt: releasedAt, revokedAt: revokedAt)
    }
}
