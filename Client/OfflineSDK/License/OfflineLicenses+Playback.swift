import Foundation
import LicenseProtocol
import WireModels

/// What a license passes before it plays: the trusted-time mark raised, the license opened with
/// the device key and its signature and stamp checked, its terms against the clock, and a
/// rental's play window started at the first play.
extension OfflineLicenses {
    /// The wall clock now, raising the trusted-time mark to it first, and the mark as it was
    /// before (a failure: the mark was edited or removed, cannot be read, or there is no device
    /// secret). Every wall time a license decision or query reads comes from here.
    func observeClock() -> (now: Date, mark: Result<Double?, OfflineVideoError>) {
        let now = clock()
        let mark = Result { () throws(OfflineVideoError) in
            try storeCall { try store.observeTime(now.timeIntervalSince1970) }
        }
        return (now, mark)
    }

    /// The content key a playback session of `record` decrypts with, and the license as the
    /// session shows it, once the license may play at `now` (the mark as `observeClock` read it
    /// before): 69304 `invalidLicense` for a missing, damaged, edited or foreign license or a
    /// clock set back behind the mark, 69303 `expiredLicense` past its end. The first play of a
    /// rental with a play window is recorded (with its report) before this returns.
    func playbackKey(_ record: DownloadRecord, now: Date,
                     mark: Result<Double?, OfflineVideoError>) throws(OfflineVideoError) -> PlaybackKey {
        let license = try verifiedLicense(record)
        var firstPlay = record.initialPlaybackAt.map(Date.init(timeIntervalSince1970:))
        // Fail closed: a mark that cannot be read or was edited refuses the open.
        let trusted = try mark.get().map(Date.init(timeIntervalSince1970:))
        try LicenseRules.checkPlayable(license.terms, localFirstPlay: firstPlay, now: now, trustedTime: trusted,
                                       tolerance: clockTolerance, token: record.token)
        if license.terms.startsPlayWindow(localFirstPlay: firstPlay) {
            try startPlayWindow(record, terms: license.terms, at: now)
            firstPlay = now
        }
        return PlaybackKey(key: license.contentKey, iv: license.iv, keyID: license.terms.contentKeyID,
                           info: LicenseRules.info(license.terms, localFirstPlay: firstPlay, now: now))
    }

    /// `OfflineVideoManager.licenseInfo`: nil without a license; a damaged one is `invalidLicense`.
    func info(_ token: OfflineVideoToken) throws(OfflineVideoError) -> OfflineLicenseInfo? {
        let now = observeClock().now
        let record = try store.existingDownload(token)
        guard record.license != nil else { return nil }
        let license = try verifiedLicense(record)
        return LicenseRules.info(license.terms, localFirstPlay: record.initialPlaybackAt.map(Date.init(timeIntervalSince1970:)), now: now)
    }

    /// The record's license, opened with the device key and its signature checked again: a
    /// missing, unreadable or edited license, or one for another video, is `invalidLicense`;
    /// so is a record whose license fields (terms, expiry, first play) were edited outside the
    /// SDK (`recordAltered`) or stored on another device (`otherDevice`: a copied folder).
    func verifiedLicense(_ record: DownloadRecord) throws(OfflineVideoError) -> License {
        guard let sealed = record.license else {
            throw OfflineVideoError(.invalidLicense, .license,
                                    "Offline video \(record.token) holds no license; renew it with renewFairPlayLicense")
        }
        switch try client.device.get().check(LicenseFields(record), stamp: record.licenseSeal) {
        case .valid: break
        case .otherDevice:
            throw OfflineVideoError(.invalidLicense, .otherDevice,
                                    "The license of offline video \(record.token) was stored on another device (a copied storage folder); "
                                        + "renew it on this one with renewFairPlayLicense")
        case .altered:
            throw OfflineVideoError(.invalidLicense, .recordAltered,
                                    "The license record of offline video \(record.token) was altered outside the SDK (its terms, expiry "
                                        + "or first play); renew the license with renewFairPlayLicense")
        }
        let license: License
        do { license = try License(sealed: Array(sealed), deviceKey: try client.deviceKey()) } catch {
            throw OfflineVideoError(.invalidLicense, .license, "The stored license of \(record.token) is damaged or was edited: \(error)")
        }
        guard license.terms.videoID == record.videoID, license.terms.accountID == record.accountID else {
            throw OfflineVideoError(.invalidLicense, .license,
                                    "The stored license of \(record.token) is for video \(license.terms.videoID), not \(record.videoID)")
        }
        return license
    }

    /// Records the first play (before any media byte is served) with its report in one
    /// transaction, announces the shortened expiry, and sends the report when the network allows.
    private func startPlayWindow(_ record: DownloadRecord, terms: LicenseTerms, at now: Date) throws(OfflineVideoError) {
        guard let report = report(.firstPlay, record: record, terms: terms) else {
            throw OfflineVideoError(.invalidLicense, .license, "Offline video \(record.token) has no FairPlay source to report its first play to")
        }
        let recorded = try storeCall { try store.recordFirstPlay(record.token, at: now.timeIntervalSince1970, report: report) }
        guard recorded else { return }
        seams.licenseChanged(record.token)
        hub.emit(.licenseExpirationChanged(record.token, expiration: terms.expiry(localFirstPlay: now) ?? .distantFuture))
        reportOutbox.passSoon()
    }
}

/// What a playback session of a FairPlay video gets from its license (`OfflineLicenses.playbackKey`).
struct PlaybackKey: Sendable {
    /// The clear content key and IV, in memory only.
    var key: [UInt8]
    var iv: [UInt8]
    /// The content key id the license is for.
    var keyID: String
    /// The license as the session shows it (first play included).
    var info: OfflineLicenseInfo
}
