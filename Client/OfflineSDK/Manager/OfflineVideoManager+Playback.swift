import Foundation
import LicenseProtocol
import WireModels

/// Offline playback, as the manager's API gives it: each call goes to the playback sessions
/// (`OfflinePlaybackSessions`), a license question to the licenses.
extension OfflineVideoManager {
    /// Opens a playback session of an offline video, the way the source material hands an
    /// offline video to a playback controller. A completed download plays with no network at
    /// all; one still downloading plays what is on disk and fetches (or waits for) the rest.
    ///
    /// Checks, in this order, each a stable error: an unknown token
    /// (``OfflineVideoError/Reason/unknownToken``); missing files (``OfflineVideoError/Reason/filesMissing``: a
    /// completed download becomes stale and ``OfflineVideoManagerDelegate/offlineVideoStorageDidChange()``
    /// fires; nothing downloaded is ``OfflineVideoError/Reason/notDownloaded``); for FairPlay, a license that
    /// is missing, unreadable or edited (69304 ``OfflineVideoError/Code/invalidLicense``), expired (69303
    /// ``OfflineVideoError/Code/expiredLicense``), or a wall clock set back behind the trusted time (69304,
    /// ``OfflineVideoError/Reason/clockRollback``). Clear packages need no license.
    ///
    /// The first open of a rental with a play duration starts its play window: the first play
    /// is stored before any media byte is served, then reported to the license server (queued
    /// while offline); the license's expiry becomes min(rental end, first play + play duration)
    /// and ``OfflineVideoManagerDelegate/offlineVideoToken(_:didChangeLicenseExpirationTo:)`` fires.
    ///
    /// ```swift
    /// let playback = try await manager.openPlayback(token)
    /// let url = try playback.serve()   // hand it to any HLS player
    /// ```
    ///
    /// `options.subtitleLanguage` names the downloaded subtitles to show (a sideband file or a subtitle track):
    /// the loopback master marks them `DEFAULT=YES,AUTOSELECT=YES` and every other subtitle rendition
    /// `DEFAULT=NO`. A language not downloaded is refused (``OfflineVideoError/Code/invalidParameter``,
    /// ``OfflineVideoError/Reason/noMatchingRendition``).
    ///
    /// - Parameters:
    ///   - token: The offline video's token.
    ///   - options: How the session is opened: the subtitle language to show; by default none chosen (the
    ///     playlist's defaults).
    /// - Returns: The open session: ``OfflinePlayback/serve()`` for a loopback URL,
    ///   ``OfflinePlayback/segments(of:)``, ``OfflinePlayback/export(to:audioLanguage:)``.
    /// - Throws: ``OfflineVideoError``: ``OfflineVideoError/Reason/unknownToken`` for an unknown token;
    ///   ``OfflineVideoError/Reason/filesMissing`` for missing files,
    ///   ``OfflineVideoError/Reason/notDownloaded`` when nothing was downloaded; for FairPlay, code
    ///   ``OfflineVideoError/Code/invalidLicense`` (69304) for a license that is missing, unreadable or edited,
    ///   code ``OfflineVideoError/Code/expiredLicense`` (69303) for an expired one, code
    ///   ``OfflineVideoError/Code/invalidLicense`` with ``OfflineVideoError/Reason/clockRollback`` for a wall
    ///   clock set back behind the trusted time; code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/noMatchingRendition`` for a subtitle language not downloaded.
    public func openPlayback(_ token: OfflineVideoToken, options: PlaybackOptions = PlaybackOptions()) async throws(OfflineVideoError) -> OfflinePlayback {
        try await sessions.openPlayback(token, options: options, whenClosed: nil)
    }

    /// Opens a playback session of the offline video object ``videoObject(fromOfflineVideoToken:)`` returned.
    ///
    /// - Parameters:
    ///   - video: An offline video object from ``videoObject(fromOfflineVideoToken:)``.
    ///   - options: How the session is opened: the subtitle language to show; by default none chosen.
    /// - Returns: The open session.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a video that is not an offline video object; else what
    ///   opening by its token throws.
    public func openPlayback(_ video: PlaybackVideo, options: PlaybackOptions = PlaybackOptions()) async throws(OfflineVideoError) -> OfflinePlayback {
        guard let token = video.offlineVideoToken else {
            throw OfflineVideoError(.invalidParameter, .unknownToken, "Video \(video.id) is not an offline video object")
        }
        return try await openPlayback(token, options: options)
    }

    /// The whole picture of an offline video's license (kind, issue time, rental end, play
    /// duration, first play, effective expiry, both remaining windows); nil for a video
    /// without FairPlay or without a license. A damaged license is ``OfflineVideoError/Code/invalidLicense``.
    ///
    /// - Parameter token: The offline video's token.
    /// - Returns: Its kind, times and remaining windows; nil for a video without FairPlay or without a license.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidLicense`` for a damaged license;
    ///   code ``OfflineVideoError/Code/invalidParameter`` with ``OfflineVideoError/Reason/unknownToken`` for a
    ///   token no offline video has.
    public func licenseInfo(_ token: OfflineVideoToken) throws(OfflineVideoError) -> OfflineLicenseInfo? {
        try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.info(token) }
    }
}
