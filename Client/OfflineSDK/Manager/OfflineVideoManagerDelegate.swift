public import Foundation

/// One track of a download, as progress and completion are reported for it (the SDK's
/// counterpart of a media selection).
public struct OfflineMediaSelection: Sendable, Hashable, CustomStringConvertible {
    /// video, audio or subtitles.
    public enum Kind: String, Sendable, Hashable { case video, audio, subtitles }
    /// What the track carries.
    public var kind: Kind
    /// Its `LANGUAGE` (audio and subtitles).
    public var language: String?
    /// Its `NAME` (the resolution for video).
    public var name: String

    /// Creates a selection.
    ///
    /// - Parameters:
    ///   - kind: What the track carries.
    ///   - language: Its `LANGUAGE` (audio and subtitles), if it has one.
    ///   - name: Its `NAME` (the resolution for video).
    public init(kind: Kind, language: String?, name: String) {
        self.kind = kind
        self.language = language
        self.name = name
    }

    public var description: String { "\(kind.rawValue)" + (language.map { " \($0)" } ?? "") + " (\(name))" }
}

/// What the manager tells its delegate and `events()` subscribers, in the order it happens.
public enum OfflineVideoEvent: Sendable, Equatable {
    /// A track of a download progressed (0–100, 100 only when all its bytes are on disk).
    case progress(OfflineVideoToken, percent: Double, mediaSelection: OfflineMediaSelection)
    /// Every segment of a track is on disk.
    case mediaSelectionFinished(OfflineVideoToken, OfflineMediaSelection)
    /// The variants a download requested with a download configuration will fetch, before its
    /// first media byte (again each time it starts or resumes).
    case willDownloadVariants(OfflineVideoToken, variants: [OfflineVariant])
    /// A download requested with a download configuration progressed as a whole (0–100, 100
    /// only when every byte is on disk); such downloads report no `progress` per selection.
    case downloadProgress(OfflineVideoToken, percent: Double)
    /// Poster and thumbnail were tried (they may have failed; check the files).
    case staticImagesDownloaded(OfflineVideoToken)
    /// A download ended: nil when it completed, else why it failed.
    case downloadFinished(OfflineVideoToken, error: OfflineVideoError?)
    /// An offline video's stored state changed (written before this is announced); nil when
    /// its record was deleted. Every state change comes here, whoever made it: the app through
    /// either façade, a download task ending, recovery at start.
    case downloadStateChanged(OfflineVideoToken, state: OfflineVideoDownloadState?)
    /// Stored videos changed behind the manager's back (files vanished, packages removed).
    case storageChanged
    /// The effective expiry of a video's license moved (first play, renewal, invalidation):
    /// the new one, `distantFuture` for a purchase, nil when it holds no license now.
    case licenseExpirationChanged(OfflineVideoToken, expiration: Date?)
    /// A download whose license expired was deleted (`autoPurgesExpiredDownloads`).
    case downloadPurged(OfflineVideoToken)
    /// Unsent analytics events went over `analyticsStorageLimit`: this many of the oldest were dropped.
    case analyticsEventsDropped(count: Int)
}

/// Callbacks of `OfflineVideoManager`, with the labels Brightcove's `BCOVOfflineVideoManagerDelegate`
/// has in Swift (`offlineVideoToken(_:didFinishDownloadWithError:)` with an `(any Error)?`,
/// `didDownloadStaticImages(withOfflineVideoToken:)`, progress as a `TimeInterval` percent), so
/// the declaration a ported app already has is the one called. Every method has an empty
/// default, so implement only those you need. Called on no particular thread, one at a time, in
/// the order things happen.
///
/// Declare the methods in the extension that declares the conformance, as Brightcove's sample
/// does: a method there that nearly matches a requirement (another parameter type, a label off
/// by a word) is then a compiler warning ("nearly matches defaulted requirement") instead of a
/// method that is silently never called.
///
/// ```swift
/// extension DownloadController: OfflineVideoManagerDelegate {
///     func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishDownloadWithError error: (any Error)?) { … }
/// }
/// ```
public protocol OfflineVideoManagerDelegate: AnyObject, Sendable {
    /// A track (media selection) of a download progressed: 0–100 for each track on its own.
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didProgressTo progressPercent: TimeInterval,
                           for mediaSelection: OfflineMediaSelection)
    /// A track (media selection) of a download finished: the video, each audio language and each
    /// subtitle language, sideband ones included.
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishMediaSelectionDownload mediaSelection: OfflineMediaSelection)
    /// The variants a download-configuration download will fetch. Called before its first media
    /// byte is requested: the download waits until this returns.
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, willDownloadVariants variants: [OfflineVariant])
    /// A download-configuration download progressed as a whole (0–100).
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didProgressTo progressPercent: TimeInterval)
    /// The transfer configuration the manager is about to make its engine with; change it here.
    /// Asked once, in `init` (and so in the first `initializeOfflineVideoManager`), of the delegate
    /// given there, before any request: a delegate set later is never asked, and the engine keeps
    /// what was decided for the manager's life (`OfflineVideoManager.transferConfiguration`).
    func didCreateTransferConfiguration(_ configuration: inout TransferConfiguration)
    /// A download ended; `error` is nil when it completed, else an `OfflineVideoError` (cancelled,
    /// deleted or force-stopped downloads too, with reason `cancelled`).
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishDownloadWithError error: (any Error)?)
    /// An offline video's stored state changed (nil: its record was deleted).
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didChangeStateTo state: OfflineVideoDownloadState?)
    /// Poster and thumbnail were fetched, or tried: called even when they could not be (the
    /// property paths are set; check the files).
    func didDownloadStaticImages(withOfflineVideoToken offlineVideoToken: OfflineVideoToken)
    /// A package folder no record knows was found at start; true deletes it (the default).
    func shouldDeleteVideoPackage(_ videoPackagePath: String) -> Bool
    /// Stored videos changed behind the manager's back.
    func offlineVideoStorageDidChange()
    /// The effective expiry of a video's license moved (nil: no license now).
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didChangeLicenseExpirationTo expiration: Date?)
    /// A download whose license expired was deleted by auto-purge.
    func offlineVideoTokenWasPurged(_ offlineVideoToken: OfflineVideoToken)
    /// Unsent analytics events went over `analyticsStorageLimit`: `count` of the oldest were dropped.
    func offlineVideoAnalyticsEventsDropped(_ count: Int)
    /// The service to fetch `video` again with when its URLs expired; nil builds one from the
    /// account and policy key the video was found with. A video found with a playback-restriction
    /// JWT alone needs this: the JWT is never stored, so without it the download fails with
    /// `tokenExpired` once its URLs expire.
    func playbackServiceForManifestURLTTLUpdate(for video: PlaybackVideo) -> PlaybackService?
}

extension OfflineVideoManagerDelegate {
    public func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didProgressTo progressPercent: TimeInterval,
                                  for mediaSelection: OfflineMediaSelection) {}
    public func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishMediaSelectionDownload mediaSelection: OfflineMediaSelection) {}
    public func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, willDownloadVariants variants: [OfflineVariant]) {}
    public func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didProgressTo progressPercent: TimeInterval) {}
    public func didCreateTransferConfiguration(_ configuration: inout TransferConfiguration) {}
    public func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishDownloadWithError error: (any Error)?) {}
    public func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didChangeStateTo state: OfflineVideoDownloadState?) {}
    public func didDownloadStaticImages(withOfflineVideoToken offlineVideoToken: OfflineVideoToken) {}
    public func shouldDeleteVideoPackage(_ videoPackagePath: String) -> Bool { true }
    public func offlineVideoStorageDidChange() {}
    public func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didChangeLicenseExpirationTo expiration: Date?) {}
    public func offlineVideoTokenWasPurged(_ offlineVideoToken: OfflineVideoToken) {}
    public func offlineVideoAnalyticsEventsDropped(_ count: Int) {}
    public func playbackServiceForManifestURLTTLUpdate(for video: PlaybackVideo) -> PlaybackService? { nil }
}

extension OfflineVideoEvent {
    /// Hands the event to the matching delegate method.
    func deliver(to delegate: any OfflineVideoManagerDelegate) {
        switch self {
        case .progress(let token, let percent, let selection):
            delegate.offlineVideoToken(token, didProgressTo: percent, for: selection)
        case .mediaSelectionFinished(let token, let selection):
            delegate.offlineVideoToken(token, didFinishMediaSelectionDownload: selection)
        case .willDownloadVariants(let token, let variants):
            delegate.offlineVideoToken(token, willDownloadVariants: variants)
        case .downloadProgress(let token, let percent):
            delegate.offlineVideoToken(token, didProgressTo: percent)
        case .staticImagesDownloaded(let token):
            delegate.didDownloadStaticImages(withOfflineVideoToken: token)
        case .downloadFinished(let token, let error):
            delegate.offlineVideoToken(token, didFinishDownloadWithError: error)
        case .downloadStateChanged(let token, let state):
            delegate.offlineVideoToken(token, didChangeStateTo: state)
        case .storageChanged:
            delegate.offlineVideoStorageDidChange()
        case .licenseExpirationChanged(let token, let expiration):
            delegate.offlineVideoToken(token, didChangeLicenseExpirationTo: expiration)
        case .downloadPurged(let token):
            delegate.offlineVideoTokenWasPurged(token)
        case .analyticsEventsDropped(let count):
            delegate.offlineVideoAnalyticsEventsDropped(count)
        }
    }
}
