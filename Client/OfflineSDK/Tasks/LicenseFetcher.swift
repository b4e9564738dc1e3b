import Foundation

/// A persistent FairPlay key as the device holds it.
public struct PersistentKey: Sendable, Equatable {
    /// The content key id (`skd://KEYID`).
    public var keyID: String
    /// The content id of the task it belongs to (else the video id).
    public var contentId: String
    public var videoID: String
    /// The offline video that holds it (a download, or a preloaded license alone).
    public var token: OfflineVideoToken
    /// Whether a download uses it (false: fetched ahead of a download, or its task was purged).
    public var hasDownload: Bool
    /// The whole picture: kind, rental end, play window, first play, effective expiry.
    public var license: OfflineLicenseInfo
}

/// Persistent keys on their own, decoupled from downloads, in the manner of Quickplay's
/// `LicenseFetcher`: fetch and persist a key before a download (the download then uses it),
/// renew it, delete it, and replace an expired one without downloading the video again.
///
/// ```swift
/// let key = try await downloads.licenseFetcher.fetchLicense(for: request)   // before the download
/// let task = try await downloads.enqueue(request: request).get()              // uses that key
/// ```
public struct LicenseFetcher: Sendable {
    let manager: OfflineVideoManager

    init(manager: OfflineVideoManager) {
        self.manager = manager
    }

    /// Fetches and persists the key of the request's content on the request's terms (its
    /// ``DownloadRequest/expiration`` and ``DownloadRequest/playbackExpiryDuration``; a purchase without them).
    /// With no download yet, the key waits for one; for a download whose key expired or was deleted, the new
    /// key replaces it and the download plays again, nothing downloaded again.
    ///
    /// Refused with ``OfflineVideoError/Reason/keyAlreadyHeld`` while the content's key has not expired
    /// (``renewLicense(forKeyID:with:)`` changes its terms), ``OfflineVideoError/Code/unsupported`` for clear
    /// content, ``OfflineVideoError/Code/invalidParameter`` when ``DownloadRequest/skd`` is not the content's
    /// key; the license server's refusals as
    /// ``OfflineVideoManager/requestVideoDownload(_:mediaSelections:parameters:)`` reports them.
    ///
    /// - Parameter request: The content whose key to fetch, with the terms: its ``DownloadRequest/expiration``
    ///   and ``DownloadRequest/playbackExpiryDuration`` (a purchase without them) and the key it expects
    ///   (``DownloadRequest/skd``).
    /// - Returns: The key as the device now holds it.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter``, with reason
    ///   ``OfflineVideoError/Reason/keyAlreadyHeld`` while the content's key has not expired,
    ///   ``OfflineVideoError/Reason/invalidParameter`` when ``DownloadRequest/skd`` is not the content's key
    ///   (or the request has no content id or title), or ``OfflineVideoError/Reason/invalidLicenseParameters``
    ///   for an expiration already past or a play window without one; code
    ///   ``OfflineVideoError/Code/unsupported`` for clear content; the license server's refusals as
    ///   ``OfflineVideoManager/requestVideoDownload(_:mediaSelections:parameters:)`` reports them: the license
    ///   exchange's failures with their own codes
    ///   (``OfflineVideoError/Code/applicationCertificateRequestFailed``,
    ///   ``OfflineVideoError/Code/contentKeyRequestFailed``,
    ///   ``OfflineVideoError/Code/contentKeyGenerationFailed``,
    ///   ``OfflineVideoError/Code/noKeyRequestURLForRendition``).
    @discardableResult
    public func fetchLicense(for request: DownloadRequest) async throws(OfflineVideoError) -> PersistentKey {
        try request.validate()
        let now = manager.configuration.clock()
        let video = try request.video(now: now)
        let parameters = DownloadParameters(license: try request.license(now: now))
        let token = try await manager.downloads.fetchKey(for: video, parameters: parameters, contentID: request.contentId, keyID: request.keyID)
        return try await key(of: token)
    }

    /// Renews the key `keyID` on the request's terms (a longer rental, a purchase); the request
    /// names the content (a fresh video object, whose license URL is valid). A renewed rental's
    /// play window starts again at its next first play.
    ///
    /// - Parameters:
    ///   - keyID: The key: `skd://KEYID` or the key id alone.
    ///   - request: The content (a fresh video object, whose license URL is valid) and the new terms.
    /// - Returns: The renewed key.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownKey`` when the device holds no such key; what
    ///   ``OfflineVideoManager/renewFairPlayLicense(_:video:authToken:parameters:)`` throws.
    @discardableResult
    public func renewLicense(forKeyID keyID: String, with request: DownloadRequest) async throws(OfflineVideoError) -> PersistentKey {
        let now = manager.configuration.clock()
        let holder = try await manager.downloads.keyHolder(LicenseFetcher.keyID(keyID))
        let video = try request.video(now: now)
        let token = try await manager.renewFairPlayLicense(holder.token, video: video,
                                                           parameters: DownloadParameters(license: try request.license(now: now)))
        return try await key(of: token)
    }

    /// Deletes the key `keyID` and tells the license server (now, or once online). A key
    /// fetched ahead of a download goes with its record; a download's media stay, and playing
    /// it fails with ``OfflineVideoError/Code/invalidLicense`` until ``fetchLicense(for:)`` gets a new key.
    ///
    /// - Parameter keyID: The key: `skd://KEYID` or the key id alone.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownKey`` when the device holds no such key, or
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager.
    public func deleteLicense(forKeyID keyID: String) async throws(OfflineVideoError) {
        try await manager.downloads.deleteKey(LicenseFetcher.keyID(keyID))
    }

    /// The key `keyID` (`skd://KEYID` or the id alone); nil when the device holds none.
    ///
    /// - Parameter keyID: The key: `skd://KEYID` or the key id alone.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/storageFailure`` with a storage reason
    ///   when the offline store cannot be read; code ``OfflineVideoError/Code/invalidLicense`` for a damaged
    ///   license.
    public func persistentKey(forKeyID keyID: String) async throws(OfflineVideoError) -> PersistentKey? {
        try await persistentKeys().first { $0.keyID == LicenseFetcher.keyID(keyID) }
    }

    /// Every key the device holds, in the order their content was requested.
    ///
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/storageFailure`` with a storage reason
    ///   when the offline store cannot be read; code ``OfflineVideoError/Code/invalidLicense`` for a damaged
    ///   license.
    public func persistentKeys() async throws(OfflineVideoError) -> [PersistentKey] {
        var keys: [PersistentKey] = []
        for snapshot in try await manager.downloads.taskSnapshots().snapshots where snapshot.keyID != nil {
            if let key = try await persistentKey(snapshot) { keys.append(key) }
        }
        return keys
    }

    private func key(of token: OfflineVideoToken) async throws(OfflineVideoError) -> PersistentKey {
        guard let snapshot = try await manager.downloads.taskSnapshot(token).snapshot, let key = try await persistentKey(snapshot) else {
            throw OfflineVideoError(.invalidLicense, .license, "Offline video \(token) holds no key")
        }
        return key
    }

    private func persistentKey(_ snapshot: TaskSnapshot) async throws(OfflineVideoError) -> PersistentKey? {
        guard let keyID = snapshot.keyID, let info = try await manager.licenseInfo(snapshot.token) else { return nil }
        return PersistentKey(keyID: keyID, contentId: snapshot.contentID, videoID: snapshot.videoID, token: snapshot.token,
                             hasDownload: snapshot.state != .licensePreloaded, license: info)
    }

    /// `skd://KEYID` → `KEYID`.
    static func keyID(_ skd: String) -> String {
        skd.hasPrefix("skd://") ? String(skd.dropFirst("skd://".count)) : skd
    }
}
