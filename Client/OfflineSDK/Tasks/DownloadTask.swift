public import Foundation

/// Where a download task stands (Quickplay's task states), read from the offline video's state.
public enum DownloadTaskState: String, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    /// Paused, or enqueued and not resumed yet (every task starts here).
    case suspended
    /// Fetching, or waiting for a download slot.
    case running
    /// Cancelled: its files are removed; purge it to forget it.
    case cancelled
    /// Every file is on disk.
    case completed
    /// Failed (`DownloadTask.error` says why); `DownloadManager.retry` continues it.
    case failed
    /// Its files were removed behind the SDK's back.
    case stale

    /// The task state of an offline video in `state`; nil for a preloaded license, which is no task.
    init?(_ state: OfflineVideoDownloadState) {
        switch state {
        case .requested, .downloading: self = .running
        case .suspended: self = .suspended
        case .cancelled: self = .cancelled
        case .completed: self = .completed
        case .error: self = .failed
        case .stale: self = .stale
        case .licensePreloaded: return nil
        }
    }

    public var description: String { rawValue }
}

/// One download of `DownloadManager`, in the manner of Quickplay's `DownloadTask`: made by
/// `enqueue`, suspended until `resume()`, with observable `state`, `progress` and `expiration`.
/// The same download is an offline video of `OfflineVideoManager` under `token`.
///
/// A task object stays the same for the life of the download manager; once purged its
/// observable sequences end and its controls throw (`unknownToken`; `invalidState` while the
/// purged download's key stays as a preloaded license).
public final class DownloadTask: Sendable, Identifiable, Hashable, CustomStringConvertible {
    /// The content id it was enqueued under (a download requested through `OfflineVideoManager`
    /// goes by its video id).
    public let contentId: String
    /// The offline video token of the same download, for `OfflineVideoManager`.
    public let token: OfflineVideoToken
    /// The video id.
    public let videoID: String
    /// The title (display name).
    public let title: String
    /// The app's metadata string of the request.
    public let metadata: String?
    /// The state, observable.
    public let state: ObservableProperty<DownloadTaskState>
    /// Percent done, 0 to 100 (100 only when every byte is on disk), observable.
    public let progress: ObservableProperty<Double>
    /// When its license expires, observable: `distantFuture` for a purchase or clear content,
    /// nil when FairPlay content holds no key; after the first play of a dual-expiry rental, the
    /// earlier of the rental end and the play window's end.
    public let expiration: ObservableProperty<Date?>
    /// Why it failed, for `failed` and `stale`; nil otherwise. Observable.
    public let error: ObservableProperty<OfflineVideoError?>

    private weak let manager: DownloadManager?

    public var id: String { token }

    init(_ snapshot: TaskSnapshot, state: DownloadTaskState, manager: DownloadManager) {
        contentId = snapshot.contentID
        token = snapshot.token
        videoID = snapshot.videoID
        title = snapshot.title
        metadata = snapshot.metadata
        self.state = ObservableProperty(state)
        progress = ObservableProperty(snapshot.percent)
        expiration = ObservableProperty(snapshot.expiration)
        error = ObservableProperty(snapshot.error)
        self.manager = manager
    }

    /// Starts or continues the download (from ``DownloadTaskState/suspended`` only; a failed task is
    /// ``DownloadManager/retry(_:)``'s).
    ///
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/invalidState`` from any state but ``DownloadTaskState/suspended``,
    ///   ``OfflineVideoError/Reason/unknownToken`` once purged, ``OfflineVideoError/Reason/readOnly`` on a
    ///   reader or a closed manager, or ``OfflineVideoError/Reason/closed`` when its download manager is gone.
    public func resume() async throws(OfflineVideoError) {
        try await owner().resume(self)
    }

    /// Pauses the download (from ``DownloadTaskState/running``); what is on disk is kept.
    ///
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/invalidState`` from any state but ``DownloadTaskState/running``,
    ///   ``OfflineVideoError/Reason/unknownToken`` once purged, ``OfflineVideoError/Reason/readOnly`` on a
    ///   reader or a closed manager, or ``OfflineVideoError/Reason/closed`` when its download manager is gone.
    public func pause() async throws(OfflineVideoError) {
        try await owner().pause(self)
    }

    /// Cancels the download: state ``DownloadTaskState/cancelled``, its files removed;
    /// ``DownloadManager/purge(_:)`` forgets it.
    ///
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/invalidState`` for a task that is completed, cancelled or stale,
    ///   ``OfflineVideoError/Reason/unknownToken`` once purged, ``OfflineVideoError/Reason/readOnly`` on a
    ///   reader or a closed manager, or ``OfflineVideoError/Reason/closed`` when its download manager is gone.
    public func cancel() async throws(OfflineVideoError) {
        try await owner().cancel(self)
    }

    /// Ends the observable sequences: the task was purged.
    func finish() {
        state.finish()
        progress.finish()
        expiration.finish()
        error.finish()
    }

    private func owner() throws(OfflineVideoError) -> DownloadManager {
        guard let manager else {
            throw OfflineVideoError(.invalidParameter, .closed, "The download manager of task \(contentId) is gone")
        }
        return manager
    }

    /// Tasks are the same when they are the same object (one per download for the manager's life).
    public static func == (a: DownloadTask, b: DownloadTask) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String { "\(contentId) (\(state.value), \(String(format: "%.1f", progress.value))%)" }
}
