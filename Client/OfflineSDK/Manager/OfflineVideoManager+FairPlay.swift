import Foundation
import LicenseProtocol
import WireModels

/// FairPlay licenses: preloading, renewal, invalidation, expiry, application certificates.
extension OfflineVideoManager {
    /// Acquires the offline license of a FairPlay video before any download, and returns a
    /// token in state `licensePreloaded`. A later `requestVideoDownload` of the video with no
    /// license terms uses this license and returns the same token.
    ///
    /// ```swift
    /// let token = try await manager.preloadFairPlayLicense(video, parameters: DownloadParameters(license: .rental(duration: 86400)))
    /// ```
    public func preloadFairPlayLicense(_ video: PlaybackVideo, parameters: DownloadParameters) async throws(OfflineVideoError) -> OfflineVideoToken {
        try requireOwner()
        if parameters.requestedBitrate != nil {
            throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters, "A license preload takes no bitrate")
        }
        let terms = try ParameterRules.validateNewLicense(parameters.license)
        guard video.canBeDownloaded else {
            throw OfflineVideoError(.unsupported, .notEligible, "Video \(video.id) is not eligible for offline playback")
        }
        let source = try DownloadPlanner.offlineSource(of: video)
        guard let fairPlay = source.fairPlay else {
            throw OfflineVideoError(.unsupported, .license, "Preloading a license is only for FairPlay videos; video \(video.id) is not one")
        }
        _ = try reserve(video, refusingIn: DownloadStateMachine.holdsLicense, "already has a license or a download")
        defer { reservedVideos.remove(video.id) }
        let (_, master) = try await planner.master(of: video)
        guard let keyID = DownloadPlanner.fairPlayKeyID(master.sessionKeys) else {
            throw OfflineVideoError(.noKeyRequestURLForRendition, .license, "The master playlist of video \(video.id) has no skd:// session key")
        }
        let license = try await licenseClient.offlineLicense(terms, fairPlay: fairPlay, contentKeyID: keyID, accountID: video.accountID,
                                                             authToken: video.origin?.authToken)
        let token = UUID().uuidString.lowercased()
        let now = configuration.clock().timeIntervalSince1970
        let allowsCellular = options.allowsCellularDownload
        try storeCall {
            var record = try DownloadRecord.new(token: token, video: video, state: .licensePreloaded, parameters: parameters,
                                                requestedAt: now, allowsCellular: allowsCellular, sequence: try store.nextSequence())
            license.apply(to: &record)
            try store.insert(record, tracks: [], segments: [])
        }
        return token
    }

    /// Replaces the license of an offline video with new terms (a new rental duration, or a
    /// rental turned into a purchase). `video` is a fresh object from the Playback API (its
    /// license URL must be valid). No bitrate may be given. Returns the same token.
    public func renewFairPlayLicense(_ token: OfflineVideoToken, video: PlaybackVideo, authToken: String? = nil,
                                     parameters: DownloadParameters) async throws(OfflineVideoError) -> OfflineVideoToken {
        let terms = try ParameterRules.validateRenewal(parameters)
        let record = try existing(token)
        // The reference allows a "substantially similar" video: same account, same FairPlay setup.
        guard video.accountID == record.accountID else {
            throw OfflineVideoError(.invalidParameter, .invalidParameter,
                                    "Video \(video.id) is from account \(video.accountID), not \(record.accountID) like \(token)")
        }
        guard let fairPlay = try DownloadPlanner.offlineSource(of: video).fairPlay else {
            throw OfflineVideoError(.unsupported, .license, "Video \(video.id) is not protected with FairPlay")
        }
        guard let current = StoredLicense.terms(of: record) else {
            throw OfflineVideoError(.invalidLicense, .license, "Offline video \(token) holds no license to renew")
        }
        let renewed = try await licenseClient.offlineLicense(terms, fairPlay: fairPlay, contentKeyID: current.contentKeyID,
                                                             accountID: record.accountID, licenseID: current.licenseID,
                                                             authToken: authToken ?? video.origin?.authToken)
        try storeCall {
            try store.update(token) { stored in
                renewed.apply(to: &stored)
                stored.initialPlaybackAt = nil  // a renewed rental's play window starts again
            }
        }
        videoCache[token] = nil
        return token
    }

    /// Deletes the license of an offline video (the media stay); playing it then fails with
    /// `invalidLicense` until a new one is acquired with `renewFairPlayLicense`. The server
    /// is told (best effort) so the device slot is freed.
    public func invalidateFairPlayLicense(_ token: OfflineVideoToken) throws(OfflineVideoError) {
        let record = try existing(token)
        releaseOnServer(record)
        try storeCall {
            try store.update(token) { stored in
                stored.license = nil
                stored.licenseTerms = nil
                stored.licenseExpiresAt = nil
            }
        }
        videoCache[token] = nil
    }

    /// When the license of an offline video expires: `distantFuture` for a purchase or a
    /// video without FairPlay, nil when a FairPlay video holds no license.
    public func fairPlayLicenseExpiration(_ token: OfflineVideoToken) throws(OfflineVideoError) -> Date? {
        let record = try existing(token)
        guard let video = try? record.video(), video.usesFairPlay else { return .distantFuture }
        guard let terms = StoredLicense.terms(of: record) else { return nil }
        return terms.expiresAt ?? .distantFuture
    }

    /// Adds (or, with nil, removes) an application certificate for `identifier` (the
    /// certificate URL for Dynamic Delivery accounts). Kept in the offline store.
    public func addFairPlayApplicationCertificate(_ certificate: [UInt8]?, identifier: String) throws(OfflineVideoError) {
        if let certificate {
            do { _ = try ApplicationCertificate(derEncoded: certificate) } catch {
                throw OfflineVideoError(.invalidParameter, .license, "That is not an X.509 application certificate: \(error)")
            }
        }
        try storeCall { try store.setCertificate(certificate.map { Data($0) }, identifier: identifier) }
    }

    /// Gives the record's license back to the server, in the background; failures are
    /// ignored (an expired license URL, no network): the license is gone locally either way.
    func releaseOnServer(_ record: DownloadRecord) {
        guard let terms = StoredLicense.terms(of: record), terms.persistable,
              let video = try? record.video(),
              let fairPlay = try? DownloadPlanner.offlineSource(of: video).fairPlay
        else { return }
        let client = licenseClient
        Task.detached {
            try? await client.release(licenseID: terms.licenseID, fairPlay: fairPlay, contentKeyID: terms.contentKeyID,
                                      accountID: record.accountID, authToken: nil)
        }
    }
}
