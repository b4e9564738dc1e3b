public import Foundation
import LicenseProtocol
import WireModels

/// FairPlay licenses: preloading, renewal, invalidation, expiry, application certificates.
extension OfflineVideoManager {
    /// Acquires the offline license of a FairPlay video before any download, and returns a
    /// token in state `licensePreloaded`. Takes the app's whole parameter set: the terms make the
    /// license; the bitrate and display name are kept for the download. A later
    /// `requestVideoDownload` of the video with the same parameters, or none, uses this license,
    /// the kept bitrate and display name where it gives none, and returns the same token; one
    /// naming other terms is refused (`invalidLicenseParameters`: renew the license first).
    ///
    /// ```swift
    /// let token = try await manager.preloadFairPlayLicense(video, parameters: DownloadParameters(license: .rental(duration: 86400)))
    /// ```
    public func preloadFairPlayLicense(_ video: PlaybackVideo, parameters: DownloadParameters) async throws(OfflineVideoError) -> OfflineVideoToken {
        try await preloadLicense(video, parameters: parameters, contentID: nil, expectedKeyID: nil)
    }

    /// `preloadFairPlayLicense`, with the content id of the download task that will use it
    /// (`LicenseFetcher`; the same id may not name another video's key) and the key id the app
    /// expects (refused, before any license request, when the video's is another).
    func preloadLicense(_ video: PlaybackVideo, parameters: DownloadParameters, contentID: String?,
                        expectedKeyID: String?) async throws(OfflineVideoError) -> OfflineVideoToken {
        try requireOwner()
        try ParameterRules.validateBitrate(parameters.requestedBitrate)
        let terms = try ParameterRules.validateNewLicense(parameters.license)
        guard video.canBeDownloaded else {
            throw OfflineVideoError(.unsupported, .notEligible, "Video \(video.id) is not eligible for offline playback")
        }
        let source = try DownloadPlanner.offlineSource(of: video)
        guard let fairPlay = source.fairPlay else {
            throw OfflineVideoError(.unsupported, .license, "Preloading a license is only for FairPlay videos; video \(video.id) is not one")
        }
        _ = try reserve(video, refusingIn: DownloadStateMachine.holdsLicense, "already has a license or a download", contentID: contentID)
        defer { unreserve(video, contentID: contentID) }
        let (_, master) = try await planner.master(of: video)
        guard let keyID = DownloadPlanner.fairPlayKeyID(master.sessionKeys) else {
            throw OfflineVideoError(.noKeyRequestURLForRendition, .license, "The master playlist of video \(video.id) has no skd:// session key")
        }
        if let expectedKeyID, expectedKeyID != keyID {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "Video \(video.id) is protected with key \(keyID), not \(expectedKeyID)")
        }
        let license = try await licenseClient.offlineLicense(terms, fairPlay: fairPlay, contentKeyID: keyID, accountID: video.accountID,
                                                             authToken: video.origin?.authToken)
        let token = UUID().uuidString.lowercased()
        let now = configuration.clock().timeIntervalSince1970
        let allowsCellular = options.allowsCellularDownload
        let born = DownloadStateMachine.birth(.preload)
        let record = try storeCall(.download) { () throws -> DownloadRecord in
            var record = try DownloadRecord.new(token: token, video: video, state: born.state, parameters: parameters,
                                                requestedAt: now, allowsCellular: allowsCellular, sequence: try store.nextSequence())
            license.apply(to: &record)
            record.contentID = contentID
            try store.insert(record, tracks: [], segments: [])
            return record
        }
        await announceBirth(record, born)
        return token
    }

    /// Replaces the license of an offline video with new terms (a new rental duration, or a
    /// rental turned into a purchase), or, after `invalidateFairPlayLicense`, acquires a new
    /// one for it: the video plays again without downloading it again. `video` is a fresh
    /// object from the Playback API (its license URL must be valid). No bitrate may be given.
    /// A renewed rental's play window starts again at its next first play. A license stored on
    /// another device (`otherDevice`: the storage folder was copied) is replaced by a new one
    /// for this device. Returns the same token.
    public func renewFairPlayLicense(_ token: OfflineVideoToken, video: PlaybackVideo, authToken: String? = nil,
                                     parameters: DownloadParameters) async throws(OfflineVideoError) -> OfflineVideoToken {
        try requireOwner()
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
        let renewed: StoredLicense
        // A license stored on another device (a copied folder) is not this device's to renew:
        // this one acquires its own, as for a license given back.
        let storedHere = (try? licenseClient.device.get().check(LicenseFields(record), stamp: record.licenseSeal)) != .otherDevice
        if let current = StoredLicense.terms(of: record), storedHere {
            do {
                renewed = try await licenseClient.offlineLicense(terms, fairPlay: fairPlay, contentKeyID: current.contentKeyID,
                                                                 accountID: record.accountID, licenseID: current.licenseID,
                                                                 authToken: authToken ?? video.origin?.authToken)
            } catch where error.reason == .licenseRevoked {
                forgetLicense(token)
                throw error
            }
        } else {
            // Given back: a new license for the same content key.
            let keyID = try await contentKeyID(of: record, video: video)
            renewed = try await licenseClient.offlineLicense(terms, fairPlay: fairPlay, contentKeyID: keyID, accountID: record.accountID,
                                                             authToken: authToken ?? video.origin?.authToken)
        }
        try storeCall {
            try store.update(token, freshLicense: true) { stored in
                renewed.apply(to: &stored)
                stored.initialPlaybackAt = nil  // a renewed rental's play window starts again
                // The terms a later request after a preload must name are the renewed ones.
                if var asked = try? JSONDecoder().decode(DownloadParameters.self, from: stored.parameters) {
                    asked.license = terms
                    stored.parameters = (try? JSONEncoder().encode(asked)) ?? stored.parameters
                }
            }
        }
        videoCache[token] = nil
        hub.emit(.licenseExpirationChanged(token, expiration: renewed.terms.expiry(localFirstPlay: nil) ?? .distantFuture))
        return token
    }

    /// The FairPlay content key id of a download: from its local master playlist, else (a
    /// preloaded license given back) from the video's master playlist online.
    private func contentKeyID(of record: DownloadRecord, video: PlaybackVideo) async throws(OfflineVideoError) -> String {
        let local = packageFolder(record.token).appendingPathComponent(PackageLayout.masterPlaylist).path
        if let body = FileManager.default.contents(atPath: local),
           let master = try? MasterPlaylist(parsing: String(decoding: body, as: UTF8.self)),
           let keyID = DownloadPlanner.fairPlayKeyID(master.sessionKeys) {
            return keyID
        }
        guard let keyID = DownloadPlanner.fairPlayKeyID(try await planner.master(of: video).playlist.sessionKeys) else {
            throw OfflineVideoError(.noKeyRequestURLForRendition, .license, "The master playlist of video \(video.id) has no skd:// session key")
        }
        return keyID
    }

    /// Deletes the license of an offline video (the media stay); playing it then fails with
    /// `invalidLicense` until a new one is acquired with `renewFairPlayLicense`. The server is
    /// told so the device slot is freed: now when online, else queued and sent later.
    public func invalidateFairPlayLicense(_ token: OfflineVideoToken) throws(OfflineVideoError) {
        try requireOwner()
        let record = try existing(token)
        releaseOnServer(record)
        try dropLicense(token, announce: record.license != nil)
    }

    /// Forgets the license of `token` the server revoked (nothing to release): playing fails
    /// with `invalidLicense` until `renewFairPlayLicense` acquires a new one.
    func forgetLicense(_ token: OfflineVideoToken) {
        guard let record = try? store.download(token), record.license != nil else { return }
        try? dropLicense(token, announce: true)
    }

    private func dropLicense(_ token: OfflineVideoToken, announce: Bool) throws(OfflineVideoError) {
        try storeCall {
            try store.update(token) { stored in
                stored.license = nil
                stored.licenseTerms = nil
                stored.licenseExpiresAt = nil
                stored.initialPlaybackAt = nil
            }
        }
        videoCache[token] = nil
        if announce { hub.emit(.licenseExpirationChanged(token, expiration: nil)) }
    }

    /// When the license of an offline video expires: `distantFuture` for a purchase or a
    /// video without FairPlay, nil when a FairPlay video holds no license. After the first
    /// play of a rental with a play duration, the earlier of its end and the play window's.
    public func fairPlayLicenseExpiration(_ token: OfflineVideoToken) throws(OfflineVideoError) -> Date? {
        _ = observeClock()
        return licenseExpiration(of: try existing(token))
    }

    /// Deletes downloads whose license has expired (`autoPurgesExpiredDownloads`), except those
    /// a playback session has open (purged once it closes), with `.downloadPurged` for each.
    func purgeExpiredDownloads() async {
        let now = configuration.clock()
        for record in (try? store.allDownloads()) ?? [] where openSessions[record.token] == nil {
            guard let terms = StoredLicense.terms(of: record),
                  let end = terms.expiry(localFirstPlay: record.initialPlaybackAt.map(Date.init(timeIntervalSince1970:))),
                  now >= end else { continue }
            _ = try? await applyUnlessMoved(.purgeExpired, to: record.token)
        }
    }

    /// The earliest license expiry still ahead, for the auto-purge watcher.
    func nextLicenseExpiry() -> Date? {
        let now = configuration.clock()
        return ((try? store.allDownloads()) ?? []).compactMap { record -> Date? in
            guard let terms = StoredLicense.terms(of: record) else { return nil }
            return terms.expiry(localFirstPlay: record.initialPlaybackAt.map(Date.init(timeIntervalSince1970:)))
        }.filter { $0 > now }.min()
    }

    /// Turns auto-purge on or off while the manager runs (Quickplay's
    /// `downloadAutoPurgeOnExpiry`): on, downloads whose license expired are deleted now and as
    /// licenses expire, each with `.downloadPurged`, except while a playback session has them
    /// open (they go when it closes). Refused on a reader or a closed manager.
    public func setAutoPurgesExpiredDownloads(_ on: Bool) throws(OfflineVideoError) {
        try requireOwner()
        autoPurgesExpiredDownloads = on
        if on, expiryWatcher == nil { watchLicenseExpiry() }
        if !on {
            expiryWatcher?.cancel()
            expiryWatcher = nil
        }
    }

    /// Purges expired downloads now and as licenses expire: it wakes at the next expiry, and at
    /// least once a minute (licenses acquired meanwhile, a clock that moved).
    private func watchLicenseExpiry() {
        expiryWatcher = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                await self.purgeExpiredDownloads()
                let wait = await self.nextLicenseExpiry().map { $0.timeIntervalSince(self.configuration.clock()) } ?? 60
                try? await Task.sleep(for: .seconds(min(60, max(0.05, wait))))
            }
        }
    }

    /// The identifier of a certificate for every account (legacy accounts), the last one looked for.
    public static let defaultFairPlayApplicationCertificateIdentifier = "BCOVDefaultFairPlayApplicationCertificateIdentifier"

    /// Adds (or, with nil, removes) an application certificate for `identifier`: the
    /// certificate URL (Dynamic Delivery), an account id (one of several legacy accounts), or
    /// `defaultFairPlayApplicationCertificateIdentifier` (all accounts). A license request looks
    /// them up in that order before fetching the certificate URL. Kept in the offline store.
    public func addFairPlayApplicationCertificate(_ certificate: [UInt8]?, identifier: String) throws(OfflineVideoError) {
        if let certificate {
            do { _ = try ApplicationCertificate(derEncoded: certificate) } catch {
                throw OfflineVideoError(.invalidParameter, .license, "That is not an X.509 application certificate: \(error)")
            }
        }
        try storeCall { try store.setCertificate(certificate.map { Data($0) }, identifier: identifier) }
    }
}
