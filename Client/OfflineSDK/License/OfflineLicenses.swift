import Crypto
import CurlTransfer
import Foundation
import LicenseProtocol
import WireModels

/// What the licenses need of the rest of the manager, as closures the manager sets once it
/// exists (`connect`), so a test can run the licenses without it.
struct LicenseSeams: Sendable {
    /// Refuses changes from a reader or a closed manager (`readOnly`); only an owner sends the
    /// queued reports.
    var requireOwner: @Sendable () throws(OfflineVideoError) -> Void
    /// The options in force (`allowsCellularPlayback` holds the reports back).
    var options: @Sendable () -> OfflineVideoManagerOptions
    /// A download's license changed: the cached video object (its license properties) is stale.
    var licenseChanged: @Sendable (OfflineVideoToken) -> Void
    /// Whether a playback session has the video open (an expired one is purged once it closes).
    var isPlaying: @Sendable (OfflineVideoToken) -> Bool
    /// Deletes a download whose license expired (the state machine's `purgeExpired`); nothing
    /// when it has moved meanwhile.
    var purgeExpired: @Sendable (OfflineVideoToken) async -> Void

    /// Seams of licenses no manager runs: nothing may change, nothing is open.
    static let detached = LicenseSeams(
        requireOwner: { () throws(OfflineVideoError) in throw OfflineVideoError(.invalidParameter, .readOnly, "No manager runs these licenses") },
        options: { OfflineVideoManagerOptions() }, licenseChanged: { _ in }, isPlaying: { _ in false },
        purgeExpired: { _ in })
}

/// The licenses of the offline videos, the part of the manager that Media3 keeps in its
/// `OfflineLicenseHelper` beside its `DownloadManager`: acquiring, renewing, invalidating and
/// releasing FairPlay licenses, first-play and release reports on their way to the server, the
/// trusted-time mark, the checks a license passes before it plays, expiry and auto-purge, and
/// application certificates.
///
/// Runs on the manager's queue (`SharesManagerQueue`): the manager and the playback path call
/// its checks synchronously where a decision and what follows from it must be one step. The
/// download records it changes are the store's; how a download's state moves is not its business
/// (a purge goes through `LicenseSeams.purgeExpired`).
actor OfflineLicenses: SharesManagerQueue {
    nonisolated let actorQueue: ActorQueue
    nonisolated var unownedExecutor: UnownedSerialExecutor { actorQueue.asUnownedSerialExecutor() }

    let store: OfflineStore
    /// The key exchange with the license server (certificates, SPCs, CKCs) and the device's keys.
    nonisolated let client: FairPlayLicenseClient
    let planner: DownloadPlanner
    let http: HTTPClient
    let hub: EventHub
    let clock: @Sendable () -> Date
    let clockTolerance: TimeInterval
    let network: any NetworkMonitor
    let packagesDirectory: URL
    private(set) var seams = LicenseSeams.detached
    /// The sending of queued first-play and release reports: one pass at a time, back-off.
    let reportOutbox: Outbox
    /// Purges expired downloads while `autoPurges` is on.
    var expiryWatcher: Task<Void, Never>?
    /// Whether downloads whose license expired are deleted (`OfflineVideoManager.setAutoPurgesExpiredDownloads`).
    private(set) var autoPurges = false

    init(actorQueue: ActorQueue, store: OfflineStore, client: FairPlayLicenseClient, planner: DownloadPlanner, http: HTTPClient,
         hub: EventHub, configuration: OfflineVideoManagerConfiguration) {
        self.actorQueue = actorQueue
        self.store = store
        self.client = client
        self.planner = planner
        self.http = http
        self.hub = hub
        clock = configuration.clock
        clockTolerance = configuration.clockTolerance
        network = configuration.network
        packagesDirectory = configuration.storageDirectory.appendingPathComponent("packages", isDirectory: true)
        reportOutbox = Outbox(initialDelay: configuration.retryInitialDelay)
    }

    /// Whether this process owns the storage folder now (the seams' owner check passes).
    var isOwner: Bool { (try? seams.requireOwner()) != nil }

    /// Wires the licenses to the rest of the manager; reports sent later (`passSoon`, after a
    /// back-off) go through this actor.
    func connect(_ seams: LicenseSeams) {
        self.seams = seams
        reportOutbox.startPass = { [weak self] in await self?.sendReports() }
    }

    /// Stops the expiry watcher and the report outbox (a report being sent is finished), and
    /// waits for both: nothing here writes the store afterwards.
    func close() async {
        let watcher = expiryWatcher
        watcher?.cancel()
        expiryWatcher = nil
        await reportOutbox.close()
        await watcher?.value
    }

    // MARK: Acquiring, renewing, giving back

    /// The offline license of `video` for content key `contentKeyID`, under `terms`.
    func acquire(_ terms: RequestedLicense, fairPlay: KeySystem, contentKeyID: String,
                 video: PlaybackVideo) async throws(OfflineVideoError) -> StoredLicense {
        try await client.offlineLicense(terms, fairPlay: fairPlay, contentKeyID: contentKeyID, accountID: video.accountID,
                                        authToken: video.origin?.authToken)
    }

    /// `OfflineVideoManager.renewFairPlayLicense`: the same token with a new license.
    func renew(_ token: OfflineVideoToken, video: PlaybackVideo, authToken: String?,
               parameters: DownloadParameters) async throws(OfflineVideoError) -> OfflineVideoToken {
        try seams.requireOwner()
        let terms = try ParameterRules.validateRenewal(parameters)
        let record = try store.existingDownload(token)
        // The reference allows a "substantially similar" video: same account, same FairPlay setup.
        guard video.accountID == record.accountID else {
            throw OfflineVideoError(.invalidParameter, .invalidParameter,
                                    "Video \(video.id) is from account \(video.accountID), not \(record.accountID) like \(token)")
        }
        guard let fairPlay = try planner.offlineSource(of: video).fairPlay else {
            throw OfflineVideoError(.unsupported, .license, "Video \(video.id) is not protected with FairPlay")
        }
        let renewed: StoredLicense
        // A license stored on another device (a copied folder) is not this device's to renew:
        // this one acquires its own, as for a license given back.
        let storedHere = (try? client.device.get().check(LicenseFields(record), stamp: record.licenseSeal)) != .otherDevice
        if let current = StoredLicense.terms(of: record), storedHere {
            do {
                renewed = try await client.offlineLicense(terms, fairPlay: fairPlay, contentKeyID: current.contentKeyID,
                                                          accountID: record.accountID, licenseID: current.licenseID,
                                                          authToken: authToken ?? video.origin?.authToken)
            } catch where error.reason == .licenseRevoked {
                forget(token)
                throw error
            }
        } else {
            // Given back: a new license for the same content key.
            let keyID = try await contentKeyID(of: record, video: video)
            renewed = try await client.offlineLicense(terms, fairPlay: fairPlay, contentKeyID: keyID, accountID: record.accountID,
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
        seams.licenseChanged(token)
        hub.emit(.licenseExpirationChanged(token, expiration: renewed.terms.expiry(localFirstPlay: nil) ?? .distantFuture))
        return token
    }

    /// The FairPlay content key id of a download: from its local master playlist, else (a
    /// preloaded license given back) from the video's master playlist online.
    private func contentKeyID(of record: DownloadRecord, video: PlaybackVideo) async throws(OfflineVideoError) -> String {
        let local = packagesDirectory.appendingPathComponent(record.token, isDirectory: true)
            .appendingPathComponent(PackageLayout.masterPlaylist).path
        if let body = FileManager.default.contents(atPath: local), let master = try? MasterPlaylist(parsing: String(decoding: body, as: UTF8.self)),
           let keyID = DownloadPlanner.fairPlayKeyID(master.sessionKeys) {
            return keyID
        }
        guard let keyID = DownloadPlanner.fairPlayKeyID(try await planner.master(of: video).playlist.sessionKeys) else {
            throw OfflineVideoError(.noKeyRequestURLForRendition, .license, "The master playlist of video \(video.id) has no skd:// session key")
        }
        return keyID
    }

    /// `OfflineVideoManager.invalidateFairPlayLicense`: the license goes, the server is told.
    func invalidate(_ token: OfflineVideoToken) throws(OfflineVideoError) {
        try seams.requireOwner()
        let record = try store.existingDownload(token)
        queueRelease(record)
        try drop(token, announce: record.license != nil)
    }

    /// Forgets the license of `token` the server revoked (nothing to release): playing fails
    /// with `invalidLicense` until `renewFairPlayLicense` acquires a new one.
    func forget(_ token: OfflineVideoToken) {
        guard let record = try? store.download(token), record.license != nil else { return }
        try? drop(token, announce: true)
    }

    private func drop(_ token: OfflineVideoToken, announce: Bool) throws(OfflineVideoError) {
        try storeCall {
            try store.update(token) { stored in
                stored.license = nil
                stored.licenseTerms = nil
                stored.licenseExpiresAt = nil
                stored.initialPlaybackAt = nil
            }
        }
        seams.licenseChanged(token)
        if announce { hub.emit(.licenseExpirationChanged(token, expiration: nil)) }
    }

    /// Adds (or, with nil, removes) an application certificate for `identifier`
    /// (`OfflineVideoManager.addFairPlayApplicationCertificate`).
    func addCertificate(_ certificate: [UInt8]?, identifier: String) throws(OfflineVideoError) {
        if let certificate {
            do { _ = try ApplicationCertificate(derEncoded: certificate) } catch {
                throw OfflineVideoError(.invalidParameter, .license, "That is not an X.509 application certificate: \(error)")
            }
        }
        try storeCall { try store.setCertificate(certificate.map { Data($0) }, identifier: identifier) }
    }

    /// A store an older SDK wrote (its license key inside it) becomes this device's: its
    /// licenses are sealed again with the device key and stamped (`OfflineStore.adoptLegacyDeviceKey`).
    func adoptLegacyStore() throws(OfflineVideoError) {
        guard let key = try? client.deviceKey() else { return }
        try storeCall(.open) {
            try store.adoptLegacyDeviceKey { sealed, legacy in
                guard let license = try? License(sealed: Array(sealed), deviceKey: SymmetricKey(data: legacy)) else { return nil }
                return (try? license.sealed(deviceKey: key)).map { Data($0) }
            }
        }
    }

    // MARK: Expiry

    /// When a record's license expires: `distantFuture` for a purchase or a video without
    /// FairPlay, nil when a FairPlay video holds no license; after the first play of a rental
    /// with a play duration, the earlier of its end and the play window's. The one answer every
    /// query gives (the manager's, a task's, the video object's).
    nonisolated static func expiration(of record: DownloadRecord) -> Date? {
        guard let video = try? record.video(), video.usesFairPlay else { return .distantFuture }
        guard let terms = StoredLicense.terms(of: record) else { return nil }
        return end(of: terms, record) ?? .distantFuture
    }

    /// When the license `terms` of `record` ends, with the record's first play; nil for a purchase.
    private nonisolated static func end(of terms: LicenseTerms, _ record: DownloadRecord) -> Date? {
        terms.expiry(localFirstPlay: record.initialPlaybackAt.map(Date.init(timeIntervalSince1970:)))
    }

    /// `OfflineVideoManager.fairPlayLicenseExpiration`: read with the trusted-time mark raised first.
    func expiration(_ token: OfflineVideoToken) throws(OfflineVideoError) -> Date? {
        _ = observeClock()
        return Self.expiration(of: try store.existingDownload(token))
    }

    /// Turns auto-purge on or off (`OfflineVideoManager.setAutoPurgesExpiredDownloads`).
    func setAutoPurges(_ on: Bool) throws(OfflineVideoError) {
        try seams.requireOwner()
        autoPurges = on
        if on, expiryWatcher == nil { watchExpiry() }
        if !on {
            expiryWatcher?.cancel()
            expiryWatcher = nil
        }
    }

    /// Deletes downloads whose license has expired, except those a playback session has open
    /// (purged once it closes), each through `LicenseSeams.purgeExpired`.
    func purgeExpired() async {
        let now = clock()
        for record in (try? store.allDownloads()) ?? [] where !seams.isPlaying(record.token) {
            guard let terms = StoredLicense.terms(of: record), let end = Self.end(of: terms, record), now >= end else { continue }
            await seams.purgeExpired(record.token)
        }
    }

    /// A playback session closed: with auto-purge on, an expired download waiting for it goes now.
    func playbackClosed() async {
        if autoPurges { await purgeExpired() }
    }

    /// The earliest license expiry still ahead, for the auto-purge watcher.
    func nextExpiry() -> Date? {
        let now = clock()
        return ((try? store.allDownloads()) ?? []).compactMap { record in
            StoredLicense.terms(of: record).flatMap { Self.end(of: $0, record) }
        }.filter { $0 > now }.min()
    }

    /// Purges expired downloads now and as licenses expire: it wakes at the next expiry, and at
    /// least once a minute (licenses acquired meanwhile, a clock that moved).
    private func watchExpiry() {
        expiryWatcher = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                await self.purgeExpired()
                let wait = await self.nextExpiry().map { $0.timeIntervalSince(self.clock()) } ?? 60
                try? await Task.sleep(for: .seconds(min(60, max(0.05, wait))))
            }
        }
    }
}
