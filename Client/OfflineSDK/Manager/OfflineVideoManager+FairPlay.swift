public import Foundation
import LicenseProtocol
import WireModels

/// FairPlay licenses, as the manager's API gives them: each call goes to the licenses
/// (`OfflineLicenses`), but a preload, which makes a download record and so goes to the downloads.
extension OfflineVideoManager {
    /// Acquires the offline license of a FairPlay video before any download, and returns a token in state
    /// ``OfflineVideoDownloadState/licensePreloaded``. Takes the app's whole parameter set: the terms make the
    /// license; the bitrate and display name are kept for the download. A later
    /// ``requestVideoDownload(_:mediaSelections:parameters:)`` of the video with the same parameters, or none,
    /// uses this license, the kept bitrate and display name where it gives none, and returns the same token;
    /// one naming other terms is refused (``OfflineVideoError/Reason/invalidLicenseParameters``: renew the
    /// license first).
    ///
    /// ```swift
    /// let token = try await manager.preloadFairPlayLicense(video, parameters: DownloadParameters(license: .rental(duration: 86400)))
    /// ```
    ///
    /// - Parameters:
    ///   - video: The FairPlay video to license, found with ``PlaybackService``.
    ///   - parameters: The license terms (required), and the bitrate and display name the later download keeps.
    /// - Returns: The token of the offline video, in state ``OfflineVideoDownloadState/licensePreloaded``; a
    ///   later download of the video returns the same one.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/invalidLicenseParameters`` for missing or wrong terms,
    ///   ``OfflineVideoError/Reason/alreadyDownloaded`` when the video already has a license or a download, or
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/unsupported`` for a video that is not offline-enabled or not protected with
    ///   FairPlay; code ``OfflineVideoError/Code/downloadFailure`` when a playlist cannot be fetched or read;
    ///   the license exchange's failures with their own codes
    ///   (``OfflineVideoError/Code/applicationCertificateRequestFailed``,
    ///   ``OfflineVideoError/Code/contentKeyRequestFailed``,
    ///   ``OfflineVideoError/Code/contentKeyGenerationFailed``,
    ///   ``OfflineVideoError/Code/noKeyRequestURLForRendition``).
    public func preloadFairPlayLicense(_ video: PlaybackVideo, parameters: DownloadParameters) async throws(OfflineVideoError) -> OfflineVideoToken {
        try await downloads.preloadLicense(video, parameters: parameters, contentID: nil, expectedKeyID: nil)
    }

    /// Replaces the license of an offline video with new terms (a new rental duration, or a rental turned into
    /// a purchase), or, after ``invalidateFairPlayLicense(_:)``, acquires a new one for it: the video plays
    /// again without downloading it again. `video` is a fresh object from the Playback API (its license URL
    /// must be valid). No bitrate may be given. A renewed rental's play window starts again at its next first
    /// play. A license stored on another device (``OfflineVideoError/Reason/otherDevice``: the storage folder
    /// was copied) is replaced by a new one for this device. Returns the same token.
    ///
    /// - Parameters:
    ///   - token: The offline video's token.
    ///   - video: A fresh object of the same video from the Playback API (same account; its license URL valid).
    ///   - authToken: A playback-restriction JWT the license request sends; nil (the default) sends the one
    ///     `video` was found with, if any.
    ///   - parameters: The new license terms; no bitrate.
    /// - Returns: The same token.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has,
    ///   ``OfflineVideoError/Reason/invalidLicenseParameters`` for a bitrate or missing or wrong terms,
    ///   ``OfflineVideoError/Reason/invalidParameter`` for a video of another account, or
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/unsupported`` for a video not protected with FairPlay; the license exchange's
    ///   failures with their own codes (``OfflineVideoError/Code/applicationCertificateRequestFailed``,
    ///   ``OfflineVideoError/Code/contentKeyRequestFailed``,
    ///   ``OfflineVideoError/Code/contentKeyGenerationFailed``,
    ///   ``OfflineVideoError/Code/noKeyRequestURLForRendition``), reason
    ///   ``OfflineVideoError/Reason/licenseRevoked`` when the license server revoked the license.
    public func renewFairPlayLicense(_ token: OfflineVideoToken, video: PlaybackVideo, authToken: String? = nil,
                                     parameters: DownloadParameters) async throws(OfflineVideoError) -> OfflineVideoToken {
        try await licenses.renew(token, video: video, authToken: authToken, parameters: parameters)
    }

    /// Deletes the license of an offline video (the media stay); playing it then fails with
    /// ``OfflineVideoError/Code/invalidLicense`` until a new one is acquired with
    /// ``renewFairPlayLicense(_:video:authToken:parameters:)``. The server is told so the device slot is freed:
    /// now when online, else queued and sent later.
    ///
    /// - Parameter token: The offline video's token.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has or
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/storageFailure`` with a storage reason when the offline store cannot be
    ///   written.
    public func invalidateFairPlayLicense(_ token: OfflineVideoToken) throws(OfflineVideoError) {
        try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.invalidate(token) }
    }

    /// When the license of an offline video expires: `distantFuture` for a purchase or a
    /// video without FairPlay, nil when a FairPlay video holds no license. After the first
    /// play of a rental with a play duration, the earlier of its end and the play window's.
    ///
    /// - Parameter token: The offline video's token.
    /// - Returns: The effective expiry: `distantFuture` for a purchase or clear content, nil when a FairPlay
    ///   video holds no license.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has; code
    ///   ``OfflineVideoError/Code/storageFailure`` with a storage reason when the offline store cannot be read.
    public func fairPlayLicenseExpiration(_ token: OfflineVideoToken) throws(OfflineVideoError) -> Date? {
        try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.expiration(token) }
    }

    /// Turns auto-purge on or off while the manager runs (Quickplay's
    /// `downloadAutoPurgeOnExpiry`): on, downloads whose license expired are deleted now and as
    /// licenses expire, each with ``OfflineVideoEvent/downloadPurged(_:)``, except while a playback session has them
    /// open (they go when it closes). Refused on a reader or a closed manager.
    ///
    /// - Parameter on: Whether downloads whose license expired are deleted.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager.
    public func setAutoPurgesExpiredDownloads(_ on: Bool) throws(OfflineVideoError) {
        try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.setAutoPurges(on) }
    }

    /// Sends the queued first-play and release reports now, while the network policy allows,
    /// and returns how many are still queued (they go out at a later start, when the network
    /// comes back, or after a back-off when the server could not be reached). For a process
    /// about to end, before ``close()``: a command-line tool, whose releases would otherwise wait
    /// for its next run. Returns once a pass already under way has sent them too.
    ///
    /// - Returns: How many reports are still queued.
    public func sendPendingLicenseReports() async -> Int {
        await licenses.sendPending()
    }

    /// The identifier of a certificate for every account (legacy accounts), the last one looked for.
    public static let defaultFairPlayApplicationCertificateIdentifier = "BCOVDefaultFairPlayApplicationCertificateIdentifier"

    /// Adds (or, with nil, removes) an application certificate for `identifier`: the
    /// certificate URL (Dynamic Delivery), an account id (one of several legacy accounts), or
    /// ``defaultFairPlayApplicationCertificateIdentifier`` (all accounts). A license request looks
    /// them up in that order before fetching the certificate URL. Kept in the offline store.
    ///
    /// - Parameters:
    ///   - certificate: The DER bytes of the X.509 application certificate; nil removes the one kept for
    ///     `identifier`.
    ///   - identifier: The certificate URL, an account id, or
    ///     ``defaultFairPlayApplicationCertificateIdentifier``.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with reason
    ///   ``OfflineVideoError/Reason/license`` for bytes that are not an X.509 application certificate; code
    ///   ``OfflineVideoError/Code/storageFailure`` with a storage reason when the offline store cannot be
    ///   written.
    public func addFairPlayApplicationCertificate(_ certificate: [UInt8]?, identifier: String) throws(OfflineVideoError) {
        try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.addCertificate(certificate, identifier: identifier) }
    }
}
