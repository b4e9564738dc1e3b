public import Foundation
import Locking

/// Callbacks of `DownloadManager` (Quickplay's `DownloadManagerDelegate`). Every method has an
/// empty default. Called one at a time, in the order things happen, after the task's observable
/// property has the new value.
public protocol DownloadManagerDelegate: AnyObject, Sendable {
    /// A task's state changed.
    func downloadManager(_ manager: DownloadManager, task: DownloadTask, didChangeStateFrom old: DownloadTaskState, to new: DownloadTaskState)
    /// A task's percent done changed.
    func downloadManager(_ manager: DownloadManager, task: DownloadTask, didUpdateProgress percent: Double)
    /// A task's license expiry moved (first play of a dual-expiry rental, renewal, a key deleted).
    func downloadManager(_ manager: DownloadManager, task: DownloadTask, didChangeExpirationTo expiration: Date?)
    /// A task was added: enqueued here, or requested through `OfflineVideoManager`.
    func downloadManager(_ manager: DownloadManager, didAdd task: DownloadTask)
    /// A task was purged: by `purge`, by auto-purge on expiry, or deleted through `OfflineVideoManager`.
    func downloadManager(_ manager: DownloadManager, didPurge task: DownloadTask)
}

extension DownloadManagerDelegate {
    public func downloadManager(_ manager: DownloadManager, task: DownloadTask, didChangeStateFrom old: DownloadTaskState, to new: DownloadTaskState) {}
    public func downloadManager(_ manager: DownloadManager, task: DownloadTask, didUpdateProgress percent: Double) {}
    public func downloadManager(_ manager: DownloadManager, task: DownloadTask, didChangeExpirationTo expiration: Date?) {}
    public func downloadManager(_ manager: DownloadManager, didAdd task: DownloadTask) {}
    public func downloadManager(_ manager: DownloadManager, didPurge task: DownloadTask) {}
}

/// Downloads as tasks, in the manner of Quickplay's "Download To Go" `DownloadManager`: enqueue a
/// request and get a suspended task, resume, pause, cancel, retry a failed one, purge it (its
/// persistent key stays), watch `allTasks` and each task's state, progress and expiry.
///
/// A façade over an `OfflineVideoManager`: the same engine, store and downloads. Both can be
/// used at once: a download requested through either is a task here and an offline video
/// there, and a change made through one is seen by the other.
///
/// ```swift
/// let downloads = try await DownloadManager(manager: offlineVideoManager)
/// switch await downloads.enqueue(request: DownloadRequest(contentId: "ep1", video: video, title: "Episode 1")) {
/// case .success(let task): try await task.resume()
/// case .failure(let error): print(error)
/// }
/// ```
public actor DownloadManager {
    /// The offline video manager underneath (the other façade of the same downloads).
    public nonisolated let offlineVideoManager: OfflineVideoManager
    /// Every task, in the order requested; observe it for additions and removals.
    public nonisolated let allTasks = ObservableProperty<[DownloadTask]>([])
    /// Fetches, renews and deletes persistent keys on their own.
    public nonisolated let licenseFetcher: LicenseFetcher

    private nonisolated let settings = Locked<(delegate: WeakDownloadManagerDelegate, pausesDuringPlayback: Bool)>(
        (WeakDownloadManagerDelegate(), true))
    private nonisolated let listener = Locked<Task<Void, Never>?>(nil)
    private var tasks: [OfflineVideoToken: DownloadTask] = [:]
    /// The order of requests, for `allTasks`.
    private var sequences: [OfflineVideoToken: Int64] = [:]
    /// The generation of the last snapshot applied per token (kept after a task is removed).
    private var applied: [OfflineVideoToken: UInt64] = [:]
    /// Open playback sessions per task, and the tasks paused because playback started.
    private var playing: [OfflineVideoToken: Int] = [:]
    private var pausedForPlayback: Set<OfflineVideoToken> = []

    /// The delegate, held weakly.
    public nonisolated var delegate: (any DownloadManagerDelegate)? {
        get { settings.withLock { $0.delegate.value } }
        set { settings.withLock { $0.delegate = WeakDownloadManagerDelegate(newValue) } }
    }

    /// Whether playing a task that is downloading pauses it, and the end of playback resumes it
    /// (true, as Quickplay does). While paused, playback reads what is on disk and fetches the
    /// rest when the playback network policy allows.
    public nonisolated var pausesTasksDuringPlayback: Bool {
        get { settings.withLock { $0.pausesDuringPlayback } }
        set { settings.withLock { $0.pausesDuringPlayback = newValue } }
    }

    /// A download manager over `manager`: every download it holds is a task (a preloaded
    /// license alone is not), and stays in step with it from now on.
    ///
    /// - Parameter manager: The offline video manager whose downloads become tasks (``offlineVideoManager``).
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/storageFailure`` with a storage reason
    ///   when the offline store cannot be read.
    public init(manager: OfflineVideoManager) async throws(OfflineVideoError) {
        offlineVideoManager = manager
        licenseFetcher = LicenseFetcher(manager: manager)
        // Subscribed before reading the store: nothing that changes in between is missed.
        let events = manager.events()
        try await reloadAll()
        listener.withLock { listener in
            listener = Task { [weak self] in
                for await event in events {
                    guard let self else { return }
                    await self.handle(event)
                }
            }
        }
    }

    deinit {
        listener.withLock { $0 }?.cancel()
    }

    // MARK: The shared instance

    private static let sharedManager = Locked<DownloadManager?>(nil)

    /// The download manager over ``OfflineVideoManager/shared``, made on first call (the shared
    /// offline video manager too, with `configuration`, when it does not exist yet).
    ///
    /// - Parameter configuration: The configuration the shared ``OfflineVideoManager`` is made with when it
    ///   does not exist yet (the defaults when nil, the default); ignored when it exists.
    /// - Returns: The download manager over ``OfflineVideoManager/shared``, the same one on every call while
    ///   the shared offline video manager stays the same.
    /// - Throws: ``OfflineVideoError``: what
    ///   ``OfflineVideoManager/initializeOfflineVideoManager(delegate:options:configuration:)`` throws when it
    ///   makes the shared manager, and what ``init(manager:)`` throws.
    public static func shared(configuration: OfflineVideoManagerConfiguration? = nil) async throws(OfflineVideoError) -> DownloadManager {
        // Over the shared manager of now (a closed shared manager was forgotten: a new one is made).
        if let existing = sharedManager.withLock({ $0 }), existing.offlineVideoManager === OfflineVideoManager.shared { return existing }
        let manager: OfflineVideoManager
        if let shared = OfflineVideoManager.shared {
            manager = shared
        } else {
            manager = try await OfflineVideoManager.initializeOfflineVideoManager(
                delegate: nil, options: configuration?.options ?? OfflineVideoManagerOptions(), configuration: configuration)
        }
        let made = try await DownloadManager(manager: manager)
        return sharedManager.withLock { current in
            if let current, current.offlineVideoManager === manager { return current }
            current = made
            return made
        }
    }

    // MARK: Tasks

    /// Plans the download of `request` and returns its task, suspended: ``DownloadTask/resume()`` starts it.
    /// Fails (never throws) with the same errors as
    /// ``OfflineVideoManager/requestVideoDownload(_:mediaSelections:parameters:)``, and
    /// ``OfflineVideoError/Reason/alreadyDownloaded`` when a task has the content id already (purge it first).
    /// FairPlay content is licensed before any media byte, with the key fetched earlier by ``licenseFetcher``
    /// when there is one (the request's ``DownloadRequest/expiration`` and
    /// ``DownloadRequest/playbackExpiryDuration`` must then be the key's, else it fails with
    /// ``OfflineVideoError/Reason/invalidLicenseParameters``: renew the key first), else a new key on the
    /// request's terms.
    ///
    /// - Parameter request: What to download: the content, its content id and title, bitrate, languages and
    ///   license terms.
    /// - Returns: The task, in state ``DownloadTaskState/suspended``, or the failure: what
    ///   ``OfflineVideoManager/requestVideoDownload(_:mediaSelections:parameters:)`` throws,
    ///   ``OfflineVideoError/Reason/alreadyDownloaded`` for a content id a task has already,
    ///   ``OfflineVideoError/Reason/invalidLicenseParameters`` for terms that are not those of the key fetched
    ///   earlier, an expiration already past or a play window without an expiration, and code
    ///   ``OfflineVideoError/Code/invalidParameter`` for a request without a content id or a title.
    public func enqueue(request: DownloadRequest) async -> Result<DownloadTask, OfflineVideoError> {
        do throws(OfflineVideoError) {
            try request.validate()
            let now = offlineVideoManager.configuration.clock()
            let video = try request.video(now: now)
            var spec = DownloadSpec(mediaSelections: request.mediaSelections,
                                    parameters: DownloadParameters(requestedBitrate: request.preferredVideoBitrate, displayName: request.title,
                                                                   license: video.usesFairPlay ? try request.license(now: now) : nil))
            spec.task = DownloadSpec.TaskFields(contentID: request.contentId, metadata: request.metadata, keyID: request.keyID,
                                                expiration: request.expiration, playbackExpiryDuration: request.playbackExpiryDuration)
            let token = try await offlineVideoManager.downloads.requestDownload(video, spec)
            try await refresh(token)
            guard let task = tasks[token] else {
                throw OfflineVideoError(.invalidParameter, .unknownToken, "The download of \(request.contentId) was removed as it was enqueued")
            }
            return .success(task)
        } catch {
            return .failure(error)
        }
    }

    /// Retries a failed task where it stopped (``OfflineVideoError/Reason/invalidState`` from any other state).
    ///
    /// - Parameter task: The failed task.
    /// - Returns: Success once it is queued again, or the failure: ``OfflineVideoError/Reason/invalidState``
    ///   from any state but ``DownloadTaskState/failed``, or ``OfflineVideoError/Reason/readOnly`` on a reader
    ///   or a closed manager.
    public func retry(_ task: DownloadTask) async -> Result<Void, OfflineVideoError> {
        do throws(OfflineVideoError) {
            try await offlineVideoManager.retryVideoDownload(task.token)
            try await refresh(task.token)
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// Removes the task and its downloaded files. Its persistent key, if it holds one, is not
    /// deleted (``licenseFetcher`` manages it; a later request for the content uses it).
    ///
    /// - Parameter task: The task to remove.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a task purged already, or
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/downloadFailure`` with a storage reason when the offline store cannot record
    ///   the change.
    public func purge(_ task: DownloadTask) async throws(OfflineVideoError) {
        try await offlineVideoManager.downloads.purgeTask(task.token)
        try await refresh(task.token)
    }

    /// The task with `contentId`, if there is one.
    ///
    /// - Parameter contentId: The content id the task was enqueued under (a download requested through
    ///   ``OfflineVideoManager`` goes by its video id).
    public func task(contentId: String) -> DownloadTask? {
        allTasks.value.first { $0.contentId == contentId }
    }

    /// Whether expired downloads are purged (Quickplay's `downloadAutoPurgeOnExpiry`, default
    /// false unless the configuration turned it on): each purge is told to `didPurge`.
    public var downloadAutoPurgeOnExpiry: Bool {
        get async { await offlineVideoManager.autoPurgesExpiredDownloads }
    }

    /// Turns ``downloadAutoPurgeOnExpiry`` on or off.
    ///
    /// - Parameter on: Whether downloads whose license expired are deleted.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager.
    public func setDownloadAutoPurgeOnExpiry(_ on: Bool) async throws(OfflineVideoError) {
        try await offlineVideoManager.setAutoPurgesExpiredDownloads(on)
    }

    // MARK: Playback

    /// Opens a playback session of the task's download (completed, or still downloading: what
    /// is missing is fetched or waited for). A running task is paused first when
    /// ``pausesTasksDuringPlayback``, and resumed when its last session closes, unless the app
    /// paused, resumed or cancelled the task itself meanwhile (a pause made through
    /// ``OfflineVideoManager`` instead cannot be told from this one). The license is enforced as
    /// ``OfflineVideoManager/openPlayback(_:options:)-(OfflineVideoToken,_)`` does.
    ///
    /// - Parameters:
    ///   - task: The task whose download to play.
    ///   - options: How the session is opened: the subtitle language to show; by default none chosen.
    /// - Returns: The open session.
    /// - Throws: ``OfflineVideoError``: what
    ///   ``OfflineVideoManager/openPlayback(_:options:)-(OfflineVideoToken,_)`` throws.
    public func openPlayback(_ task: DownloadTask, options: PlaybackOptions = PlaybackOptions()) async throws(OfflineVideoError) -> OfflinePlayback {
        let token = task.token
        // Counted before anything suspends: a session closing meanwhile must not take this one's
        // pause for the end of all playback.
        playing[token, default: 0] += 1
        if pausesTasksDuringPlayback, task.state.value == .running,
           (try? await offlineVideoManager.pauseVideoDownload(token)) != nil {
            pausedForPlayback.insert(token)
            try? await refresh(token)
        }
        do {
            return try await offlineVideoManager.sessions.openPlayback(token, options: options, whenClosed: { [weak self] in
                await self?.playbackEnded(token)
            })
        } catch {
            await playbackEnded(token)
            throw error
        }
    }

    private func playbackEnded(_ token: OfflineVideoToken) async {
        playing[token, default: 1] -= 1
        guard playing[token] == 0 else { return }
        playing[token] = nil
        if pausedForPlayback.remove(token) != nil {
            // Still as playback left it: resume. A task cancelled or purged meanwhile stays so.
            try? await offlineVideoManager.downloads.resumeSuspendedDownload(token)
            try? await refresh(token)
        }
    }

    // MARK: Task controls

    func resume(_ task: DownloadTask) async throws(OfflineVideoError) {
        pausedForPlayback.remove(task.token)
        try await offlineVideoManager.downloads.resumeSuspendedDownload(task.token)
        try await refresh(task.token)
    }

    func pause(_ task: DownloadTask) async throws(OfflineVideoError) {
        pausedForPlayback.remove(task.token)
        try await offlineVideoManager.pauseVideoDownload(task.token)
        try await refresh(task.token)
    }

    func cancel(_ task: DownloadTask) async throws(OfflineVideoError) {
        pausedForPlayback.remove(task.token)
        try await offlineVideoManager.cancelVideoDownload(task.token)
        try await refresh(task.token)
    }

    // MARK: Keeping in step

    private func handle(_ event: OfflineVideoEvent) async {
        switch event {
        case .progress(let token, _, _), .downloadProgress(let token, _), .mediaSelectionFinished(let token, _),
             .downloadFinished(let token, _), .downloadStateChanged(let token, _), .licenseExpirationChanged(let token, _),
             .downloadPurged(let token), .willDownloadVariants(let token, _), .staticImagesDownloaded(let token):
            try? await refresh(token)
        case .storageChanged:
            try? await reloadAll()
        case .analyticsEventsDropped:
            break
        }
    }

    /// Brings the task of `token` in step with the store: made when new, updated, or removed
    /// when its record is gone or holds only a key. The one way tasks change.
    private func refresh(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        let (generation, snapshot) = try await offlineVideoManager.downloads.taskSnapshot(token)
        apply(snapshot, token: token, generation: generation)
    }

    private func reloadAll() async throws(OfflineVideoError) {
        let (generation, snapshots) = try await offlineVideoManager.downloads.taskSnapshots()
        let present = Set(snapshots.map(\.token))
        for token in tasks.keys where !present.contains(token) { apply(nil, token: token, generation: generation) }
        for snapshot in snapshots { apply(snapshot, token: snapshot.token, generation: generation) }
    }

    /// Applies a snapshot (nil: no record) to the task of `token`, unless a newer reading was
    /// applied already: refreshes overlap (the event loop's and a control's), and a reading
    /// made before a pause must not undo it, nor one made before a purge bring the task back.
    /// Never suspends, so two refreshes of one token cannot both make its task.
    private func apply(_ snapshot: TaskSnapshot?, token: OfflineVideoToken, generation: UInt64) {
        if let last = applied[token], last > generation { return }
        applied[token] = generation
        let delegate = self.delegate
        guard let snapshot, let state = DownloadTaskState(snapshot.state) else {
            guard let task = tasks.removeValue(forKey: token) else { return }
            sequences[token] = nil
            allTasks.set(allTasks.value.filter { $0.token != token })
            delegate?.downloadManager(self, didPurge: task)
            task.finish()
            return
        }
        guard let task = tasks[token] else {
            let task = DownloadTask(snapshot, state: state, manager: self)
            tasks[token] = task
            sequences[token] = snapshot.sequence
            allTasks.set((allTasks.value + [task]).sorted { sequences[$0.token, default: 0] < sequences[$1.token, default: 0] })
            delegate?.downloadManager(self, didAdd: task)
            return
        }
        let old = task.state.value
        if task.state.set(state) { delegate?.downloadManager(self, task: task, didChangeStateFrom: old, to: state) }
        if task.progress.set(snapshot.percent) { delegate?.downloadManager(self, task: task, didUpdateProgress: snapshot.percent) }
        if task.expiration.set(snapshot.expiration) { delegate?.downloadManager(self, task: task, didChangeExpirationTo: snapshot.expiration) }
        task.error.set(snapshot.error)
    }
}

/// A weak reference to the download manager's delegate.
struct WeakDownloadManagerDelegate: Sendable {
    weak var value: (any DownloadManagerDelegate)?
    init(_ value: (any DownloadManagerDelegate)? = nil) { self.value = value }
}
