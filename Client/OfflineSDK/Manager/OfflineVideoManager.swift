import CurlTransfer
import Foundation
import Locking
import WireModels
import SystemFiles

/// Downloads videos for offline playback and keeps track of them, in the manner of
/// Brightcove's `BCOVOfflineVideoManager`: request a download and get a token, follow it
/// through the delegate or `events()`, pause, resume, cancel or delete it, and turn the
/// token back into a video object that plays from disk.
///
/// ```swift
/// let manager = try await OfflineVideoManager(configuration: .init(storageDirectory: folder), delegate: self)
/// let video = try await PlaybackService(baseURL: base, accountID: account, policyKey: key).findVideo(id: "6415818918101")
/// let token = try await manager.requestVideoDownload(video, mediaSelections: MediaSelections(audioLanguages: ["en", "fr"]),
///                                                    parameters: DownloadParameters(requestedBitrate: 1_000_000))
/// for await event in manager.events() {
///     if case .downloadFinished(token, let error) = event { print(error?.description ?? "done"); break }
/// }
/// ```
///
/// Every state change is written to the offline store before it is announced. A manager
/// made on the same storage after a crash continues the downloads that were running,
/// fetching only the segments that were not finished.
public actor OfflineVideoManager: SharesManagerQueue {
    /// The configuration the manager was made with (options change with `update`).
    public nonisolated let configuration: OfflineVideoManagerConfiguration
    /// The transfer configuration the engine runs with: the configuration's, as the delegate
    /// given to `init` changed it in `didCreateTransferConfiguration(_:)`.
    public nonisolated let transferConfiguration: TransferConfiguration
    /// The options in force for downloads started from now on.
    public private(set) var options: OfflineVideoManagerOptions

    let store: OfflineStore
    /// The queue the manager runs on: its store calls block it, never the cooperative pool (`BlockingWork`).
    nonisolated let actorQueue = ActorQueue(label: "OfflineSDK.manager")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { actorQueue.asUnownedSerialExecutor() }
    let engine: TransferEngine
    let client: HTTPClient
    let planner: DownloadPlanner
    /// The licenses: acquiring, renewing, reports, the trusted-time mark, expiry and auto-purge.
    let licenses: OfflineLicenses
    /// The downloads: requests, the state machine, the scheduler and runners, recovery, status.
    let downloads: OfflineDownloads
    /// The playback sessions: opening one (the package's checks, the license enforced), the
    /// segment source, the offline video objects.
    let sessions: OfflinePlaybackSessions
    let hub = EventHub()
    /// The lock that makes this manager the one running the storage folder's downloads; nil
    /// for a reader and once closed.
    var ownership: StorageLock?
    /// The analytics: events recorded, then uploaded to their collectors.
    let analytics: OfflineAnalytics
    /// An owner's watcher of the network: queued license reports and analytics go when it changes.
    var networkWatcher: Task<Void, Never>?
    /// Whether downloads whose license expired are deleted (`setAutoPurgesExpiredDownloads`;
    /// starts as the configuration's `autoPurgesExpiredDownloads`).
    public var autoPurgesExpiredDownloads: Bool { licenses.onSharedQueue { $0.autoPurges } }

    /// Opens (or creates) the offline store under `configuration.storageDirectory`, cleans up what a previous
    /// run left (stranded package folders, vanished files) and resumes the downloads that were running. Throws
    /// ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with a storage reason
    /// (``OfflineVideoError/Reason/storageInUse``, ``OfflineVideoError/Reason/storageBusy``,
    /// ``OfflineVideoError/Reason/storageReadOnly``, ``OfflineVideoError/Reason/storageCorrupt``,
    /// ``OfflineVideoError/Reason/diskFull``, ``OfflineVideoError/Reason/storage``) and the error underneath.
    ///
    /// - Parameters:
    ///   - configuration: The storage folder and every other setting the manager runs with; by default
    ///     ``OfflineVideoManagerConfiguration/init(storageDirectory:)``'s defaults.
    ///   - delegate: Told of every event (as ``events()`` sends them), and asked
    ///     ``OfflineVideoManagerDelegate/didCreateTransferConfiguration(_:)`` once, here; nil by default.
    /// - Throws: ``OfflineVideoError`` with code ``OfflineVideoError/Code/invalidParameter`` and a storage
    ///   reason (``OfflineVideoError/Reason/storageInUse``, ``OfflineVideoError/Reason/storageBusy``,
    ///   ``OfflineVideoError/Reason/storageReadOnly``, ``OfflineVideoError/Reason/storageCorrupt``,
    ///   ``OfflineVideoError/Reason/diskFull``, ``OfflineVideoError/Reason/storage``), the error underneath in
    ///   ``OfflineVideoError/underlying``, when the store cannot be opened; once it is open, a store that
    ///   cannot record the downloads that were running as interrupted fails as a download's store call
    ///   does: code ``OfflineVideoError/Code/downloadFailure`` with the same reasons.
    public init(configuration: OfflineVideoManagerConfiguration = OfflineVideoManagerConfiguration(),
                delegate: (any OfflineVideoManagerDelegate)? = nil) async throws(OfflineVideoError) {
        self.configuration = configuration
        options = configuration.options
        // Without the device secret the store still opens: clear videos download and play, and
        // every license operation fails with why the secret cannot be had.
        // Reading (or on first use creating and syncing) the secret, waiting on file locks and
        // migrating SQLite: on a dispatch thread, not the pool.
        let packages = PackageLayout.packagesDirectory(in: configuration.storageDirectory)
        let (device, lock, opened) = try await BlockingWork.run {
            () throws(OfflineVideoError) -> (Result<DeviceIdentity, OfflineVideoError>, StorageLock?, OfflineStore) in
            let device = Result { () throws(OfflineVideoError) in try DeviceIdentity.load(configuration.deviceSource) }
            do {
                try FileManager.default.createDirectory(at: packages, withIntermediateDirectories: true)
                let ownership = configuration.role == .owner
                    ? try StorageLock.owner(at: configuration.storageDirectory.appendingPathComponent("owner.lock").path,
                                            folder: configuration.storageDirectory.path)
                    : nil
                return (device, ownership, try OfflineStore(directory: configuration.storageDirectory, setup: configuration.storeSetup, device: try? device.get(),
                                                    poolCheck: configuration.poolCheck))
            } catch {
                throw OfflineVideoError.storeFailure(error, during: .open, "Cannot open the offline store in \(configuration.storageDirectory.path)")
            }
        }
        ownership = lock
        store = opened
        // The delegate may change the transfer configuration before the engine is made with it.
        var transfer = TransferConfiguration(configuration)
        delegate?.didCreateTransferConfiguration(&transfer)
        transferConfiguration = transfer.clamped
        engine = TransferEngine(configuration: transferConfiguration.engineConfiguration(trustedCAFile: configuration.trustedCAFile))
        client = HTTPClient(engine: engine)
        planner = DownloadPlanner(client: client, retry: transferConfiguration.retryPolicy, sources: OfflineSourceRule(configuration))
        let licenseClient = FairPlayLicenseClient(store: store, device: device, client: client, clock: configuration.clock,
                                                  retry: transferConfiguration.retryPolicy,
                                                  keyExchange: Locked(configuration.keyExchange))
        licenses = OfflineLicenses(actorQueue: actorQueue, store: store, client: licenseClient, planner: planner, http: client,
                                   hub: hub, configuration: configuration)
        let arrivals = SegmentArrivals()
        downloads = OfflineDownloads(actorQueue: actorQueue, configuration: configuration, transferConfiguration: transferConfiguration,
                                     store: store, engine: engine, client: client, planner: planner, licenses: licenses, hub: hub,
                                     arrivals: arrivals)
        sessions = OfflinePlaybackSessions(actorQueue: actorQueue, configuration: configuration, store: store, client: client,
                                           licenses: licenses, arrivals: arrivals)
        analytics = OfflineAnalytics(actorQueue: actorQueue, storage: store, client: client, hub: hub, configuration: configuration)
        hub.delegate = delegate
        await licenses.connect(licenseSeams())
        await downloads.connect(downloadSeams())
        await sessions.connect(playbackSeams())
        await analytics.connect(analyticsSeams())
        if configuration.role == .owner {
            try await downloads.recover()
            watchNetworkForOutboxes()
            if configuration.autoPurgesExpiredDownloads { try await licenses.setAutoPurges(true) }
        }
    }

    // MARK: The shared instance

    private static let sharedManager = Locked<OfflineVideoManager?>(nil)

    /// The shared manager for apps, once `initializeOfflineVideoManager` has made it.
    public static var shared: OfflineVideoManager? { sharedManager.withLock { $0 } }

    /// Makes the shared manager on first call, with `configuration` (storage folder, network monitor, limits;
    /// the defaults when nil) and `options` over its options; later calls update its delegate and options.
    /// Downloads already running keep the policy they started with. A later call's configuration may set the
    /// key-exchange hook (as ``authProxy``) and
    /// ``OfflineVideoManagerConfiguration/autoPurgesExpiredDownloads``; one asking for any other setting than
    /// the manager runs with (another storage folder, network monitor, limits) is refused
    /// (``OfflineVideoError/Code/invalidParameter``, naming the settings): those are fixed for the manager's
    /// life.
    ///
    /// - Parameters:
    ///   - delegate: The shared manager's delegate, replacing the one an earlier call set; nil for none.
    ///   - options: The options for downloads started from now on (``options``).
    ///   - configuration: The configuration the first call makes the shared manager with (the defaults when
    ///     nil, the default); a later call's may differ from the running one in
    ///     ``OfflineVideoManagerConfiguration/keyExchange`` and
    ///     ``OfflineVideoManagerConfiguration/autoPurgesExpiredDownloads`` only.
    /// - Returns: The shared manager, as ``shared`` gives it from then on.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with reason
    ///   ``OfflineVideoError/Reason/invalidParameter`` when a later call's configuration asks for another
    ///   setting than the manager runs with; on the first call, what ``init(configuration:delegate:)`` throws.
    @discardableResult
    public static func initializeOfflineVideoManager(delegate: (any OfflineVideoManagerDelegate)?,
                                                     options: OfflineVideoManagerOptions,
                                                     configuration: OfflineVideoManagerConfiguration? = nil) async throws(OfflineVideoError) -> OfflineVideoManager {
        if let existing = shared {
            if let configuration {
                let fixed = fixedSettingsDiffering(configuration, from: existing.configuration)
                if !fixed.isEmpty {
                    throw OfflineVideoError(.invalidParameter, .invalidParameter,
                                            "The shared manager (storing under \(existing.configuration.storageDirectory.path)) exists: "
                                                + "\(fixed.joined(separator: ", ")) cannot change while it runs; set authProxy, the delegate "
                                                + "and the options instead, or close it and make a new manager")
                }
                if let keyExchange = configuration.keyExchange { existing.authProxy = keyExchange }
                if configuration.autoPurgesExpiredDownloads != (await existing.autoPurgesExpiredDownloads) {
                    try await existing.setAutoPurgesExpiredDownloads(configuration.autoPurgesExpiredDownloads)
                }
            }
            await existing.update(delegate: delegate, options: options)
            return existing
        }
        var configuration = configuration ?? OfflineVideoManagerConfiguration()
        configuration.options = options
        let manager = try await OfflineVideoManager(configuration: configuration, delegate: delegate)
        return sharedManager.withLock { current in
            if let current { return current }
            current = manager
            return manager
        }
    }

    /// Replaces the delegate and the options. Running downloads keep the policy they started with.
    ///
    /// - Parameters:
    ///   - delegate: The new delegate; nil for none.
    ///   - options: The options for downloads started from now on (``options``).
    public func update(delegate: (any OfflineVideoManagerDelegate)?, options: OfflineVideoManagerOptions) {
        hub.delegate = delegate
        self.options = options
    }

    /// Every event from now on, in order: the same as the delegate gets.
    ///
    /// - Returns: A stream of ``OfflineVideoEvent`` values, from the moment of the call on.
    public nonisolated func events() -> AsyncStream<OfflineVideoEvent> { hub.subscribe() }

    /// Stops every running download without changing what is stored, as if the process
    /// ended, waits until their tasks have ended, and for a license report or a batch of
    /// analytics events being sent (the rest stays queued for the next start), and lets go of the
    /// storage folder: a manager made later on the same storage continues them. The manager
    /// changes nothing afterwards.
    /// Closing the shared manager forgets it: the next `initializeOfflineVideoManager` makes a new one.
    public func close() async {
        OfflineVideoManager.sharedManager.withLock { if $0 === self { $0 = nil } }
        let watcher = networkWatcher
        watcher?.cancel()
        networkWatcher = nil
        await downloads.close()
        // What writes the store in the background ends too, before the folder is let go: a pass
        // or an expiry purge still running would write after close() returned.
        await licenses.close()
        await analytics.close()
        await watcher?.value
        ownership = nil
    }

    /// Refuses changes from a reader or a closed manager.
    func requireOwner() throws(OfflineVideoError) {
        guard ownership == nil else { return }
        if configuration.role == .reader {
            throw OfflineVideoError(.invalidParameter, .readOnly,
                                    "This manager was opened as a reader of \(configuration.storageDirectory.path) and cannot change it")
        }
        throw OfflineVideoError(.invalidParameter, .readOnly, "This manager was closed")
    }

    /// What the licenses need of this manager (`LicenseSeams`), each run on the shared queue.
    /// Every seam holds the manager and its parts weakly: the parts hold each other's seams, and
    /// strong captures would keep them (and the store's connections) alive after the manager goes.
    private func licenseSeams() -> LicenseSeams {
        LicenseSeams(
            requireOwner: ownerCheck(),
            options: optionsSeam(),
            licenseChanged: { [weak sessions] token in sessions?.onSharedQueue { $0.forgetVideoObject(token) } },
            isPlaying: { [weak sessions] token in sessions?.onSharedQueue { $0.isPlaying(token) } ?? false },
            purgeExpired: { [weak downloads] token in _ = try? await downloads?.applyUnlessMoved(.purgeExpired, to: token) })
    }

    /// What the downloads need of this manager and the sessions (`DownloadSeams`).
    private func downloadSeams() -> DownloadSeams {
        DownloadSeams(
            requireOwner: ownerCheck(),
            options: optionsSeam(),
            forgetVideoObject: { [weak sessions] token in sessions?.onSharedQueue { $0.forgetVideoObject(token) } },
            recordAnalytics: { [weak analytics] record, milestone in
                analytics?.onSharedQueue { analytics in
                    switch milestone {
                    case .requested: try? analytics.record(.downloadRequested, OfflineAnalytics.Subject(record))
                    case .finished(let error): analytics.recordDownloadFinished(record, error: error)
                    }
                }
            })
    }

    /// What the playback sessions need of this manager and the downloads (`PlaybackSeams`).
    private func playbackSeams() -> PlaybackSeams {
        PlaybackSeams(
            requireOwner: ownerCheck(),
            options: optionsSeam(),
            isDownloading: { [weak downloads] token in await downloads?.isDownloading(token) ?? false },
            refreshURLs: { [weak downloads] token throws(OfflineVideoError) in try await downloads?.refreshURLs(token) },
            filesMissing: { [weak downloads] token, missing in _ = try? await downloads?.applyUnlessMoved(.filesMissing(missing), to: token) },
            recordPlay: { [weak analytics] name, subject, position, session throws(OfflineVideoError) in
                try await analytics?.record(name, subject, position: position, session: session)
            })
    }

    /// What the analytics need of this manager (`AnalyticsSeams`).
    private func analyticsSeams() -> AnalyticsSeams {
        AnalyticsSeams(
            isOwner: { [weak self] in self?.onSharedQueue { $0.ownership != nil } ?? false },
            options: optionsSeam(),
            deviceID: { [weak licenses] in try? licenses?.client.deviceID() })
    }

    /// The options in force, as a seam: a manager gone leaves the defaults.
    private func optionsSeam() -> @Sendable () -> OfflineVideoManagerOptions {
        { [weak self] in self?.onSharedQueue { $0.options } ?? OfflineVideoManagerOptions() }
    }

    /// `requireOwner`, as a seam: a manager gone is a closed one.
    private func ownerCheck() -> @Sendable () throws(OfflineVideoError) -> Void {
        { [weak self] () throws(OfflineVideoError) in
            guard let self else { throw OfflineVideoError(.invalidParameter, .readOnly, "This manager was closed") }
            try self.onSharedQueue { manager throws(OfflineVideoError) in try manager.requireOwner() }
        }
    }

    /// Sends queued license reports and analytics events now and whenever the network
    /// changes (each pass checks its own policy), and after a back-off when a server could not
    /// be reached.
    func watchNetworkForOutboxes() {
        let paths = configuration.network.paths()
        networkWatcher = Task { [weak self] in
            for await _ in paths {
                guard let self else { return }
                await self.licenses.sendReports()
                await self.analytics.send()
            }
        }
    }

    // MARK: Requests

    /// Requests a download of `video` and returns its token once the download is planned
    /// and stored (it runs in the background from then on).
    ///
    /// Refused with ``OfflineVideoError/Code/invalidParameter`` for bad parameters or a language the video does
    /// not have, ``OfflineVideoError/Code/unsupported`` for a video that is not offline-enabled, HLSe content
    /// or no HLS source, ``OfflineVideoError/Code/invalidParameter``/`already_downloaded` when the video is
    /// already downloaded or downloading, and `insufficient_storage` when it would leave less free space than
    /// ``OfflineVideoManagerConfiguration/minimumFreeSpace``. `mediaSelections` nil takes the preferred
    /// languages of the configuration.
    ///
    /// - Parameters:
    ///   - video: The video to download, found with ``PlaybackService``.
    ///   - mediaSelections: The audio and subtitle languages to take besides the video; nil takes the
    ///     configuration's ``OfflineVideoManagerConfiguration/preferredAudioLanguages`` and
    ///     ``OfflineVideoManagerConfiguration/preferredSubtitleLanguages``.
    ///   - parameters: The bitrate, display name and license terms; nil takes
    ///     ``DownloadParameters/init(requestedBitrate:displayName:license:)``'s defaults.
    /// - Returns: The token of the download and, later, of the offline video: a string to persist.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` for bad parameters or
    ///   a language the video does not have, with ``OfflineVideoError/Reason/alreadyDownloaded`` when the video
    ///   is already downloaded or downloading, or ``OfflineVideoError/Reason/readOnly`` on a reader or a closed
    ///   manager; code ``OfflineVideoError/Code/unsupported`` for a video that is not offline-enabled
    ///   (``OfflineVideoError/Reason/notEligible``), HLSe content
    ///   (``OfflineVideoError/Reason/hlseNotSupported``) or no HLS source
    ///   (``OfflineVideoError/Reason/noHLSSource``); reason ``OfflineVideoError/Reason/insufficientStorage``
    ///   (code ``OfflineVideoError/Code/downloadFailure``) when the download would leave less free space than
    ///   ``OfflineVideoManagerConfiguration/minimumFreeSpace``; code ``OfflineVideoError/Code/downloadFailure``
    ///   when a playlist cannot be fetched or read; for a FairPlay video, the license exchange's failures with
    ///   their own codes (``OfflineVideoError/Code/applicationCertificateRequestFailed``,
    ///   ``OfflineVideoError/Code/contentKeyRequestFailed``,
    ///   ``OfflineVideoError/Code/contentKeyGenerationFailed``,
    ///   ``OfflineVideoError/Code/noKeyRequestURLForRendition``).
    public func requestVideoDownload(_ video: PlaybackVideo, mediaSelections: MediaSelections?,
                                     parameters: DownloadParameters?) async throws(OfflineVideoError) -> OfflineVideoToken {
        try await downloads.requestDownload(video, DownloadSpec(mediaSelections: mediaSelections, parameters: parameters ?? DownloadParameters()))
    }

    /// Requests a download of `video` described by a download configuration, Brightcove's
    /// second download path (`AVAssetDownloadConfiguration`): the variant chosen by the primary
    /// configuration's variant qualifiers (else by `parameters.requestedBitrate`), the audio and
    /// subtitle languages of every content configuration, the title as the display name and the
    /// artwork kept in the package. Returns the token once the download is planned and stored.
    ///
    /// The same checks, errors and preloaded-license handling as
    /// ``requestVideoDownload(_:mediaSelections:parameters:)``, plus
    /// ``OfflineVideoError/Code/invalidParameter`` for an empty title, qualifiers together with a requested
    /// bitrate, qualifiers on an auxiliary configuration, or qualifiers no variant meets
    /// (``OfflineVideoError/Reason/noMatchingRendition``). Such a download reports
    /// ``OfflineVideoManagerDelegate/offlineVideoToken(_:willDownloadVariants:)`` before its first media byte
    /// and one progress for the whole download
    /// (``OfflineVideoManagerDelegate/offlineVideoToken(_:didProgressTo:)``), not one per media selection.
    ///
    /// - Parameters:
    ///   - video: The video to download, found with ``PlaybackService``.
    ///   - downloadConfiguration: The title, artwork, variant qualifiers and languages of the download.
    ///   - parameters: The bitrate (only without variant qualifiers) and the license terms; the configuration's
    ///     title takes the place of its display name. Nil takes
    ///     ``DownloadParameters/init(requestedBitrate:displayName:license:)``'s defaults.
    /// - Returns: The token of the download and, later, of the offline video.
    /// - Throws: ``OfflineVideoError``: what ``requestVideoDownload(_:mediaSelections:parameters:)`` throws,
    ///   and code ``OfflineVideoError/Code/invalidParameter`` for an empty title, qualifiers together with a
    ///   requested bitrate, qualifiers on an auxiliary configuration, or qualifiers no variant meets
    ///   (``OfflineVideoError/Reason/noMatchingRendition``).
    public func requestVideoDownload(_ video: PlaybackVideo, downloadConfiguration: DownloadConfiguration,
                                     parameters: DownloadParameters?) async throws(OfflineVideoError) -> OfflineVideoToken {
        try await downloads.requestDownload(video, try DownloadSpec(downloadConfiguration, parameters: parameters ?? DownloadParameters()))
    }

    // MARK: Control

    /// Pauses a requested or running download (state ``OfflineVideoDownloadState/suspended``); finished
    /// segments and the partial one are kept.
    ///
    /// - Parameter token: The offline video's token.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has,
    ///   ``OfflineVideoError/Reason/invalidState`` for a download that is neither requested nor downloading, or
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/downloadFailure`` with a storage reason when the offline store cannot record
    ///   the change.
    public func pauseVideoDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await downloads.apply(.pause, to: token)
    }

    /// Continues a suspended download, or a failed one, where it stopped.
    ///
    /// - Parameter token: The offline video's token.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has,
    ///   ``OfflineVideoError/Reason/invalidState`` for a download that is neither suspended nor failed, or
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/downloadFailure`` with a storage reason when the offline store cannot record
    ///   the change.
    public func resumeVideoDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await downloads.apply(.resume, to: token)
    }

    /// Retries a failed download (state ``OfflineVideoDownloadState/error`` only), keeping the segments already
    /// fetched.
    ///
    /// - Parameter token: The offline video's token.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has,
    ///   ``OfflineVideoError/Reason/invalidState`` for a download in any state but
    ///   ``OfflineVideoDownloadState/error``, or ``OfflineVideoError/Reason/readOnly`` on a reader or a closed
    ///   manager; code ``OfflineVideoError/Code/downloadFailure`` with a storage reason when the offline store
    ///   cannot record the change.
    public func retryVideoDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await downloads.apply(.retry, to: token)
    }

    /// Cancels a download: state ``OfflineVideoDownloadState/cancelled``, its media files removed, the record
    /// kept (status queries still answer) until ``deleteOfflineVideo(_:)``. A download that was queued, running
    /// or suspended ends with ``OfflineVideoManagerDelegate/offlineVideoToken(_:didFinishDownloadWithError:)``
    /// (reason ``OfflineVideoError/Reason/cancelled``).
    ///
    /// - Parameter token: The offline video's token.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has,
    ///   ``OfflineVideoError/Reason/invalidState`` for a download that is completed, cancelled, stale or only a
    ///   preloaded license, or ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/downloadFailure`` with a storage reason when the offline store cannot record
    ///   the change.
    public func cancelVideoDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await downloads.apply(.cancel, to: token)
    }

    /// Removes every file of the offline video and its license, and forgets the token. The license is given
    /// back to the server (later, if offline now). A download still requested, running or suspended ends as a
    /// cancel does, with ``OfflineVideoManagerDelegate/offlineVideoToken(_:didFinishDownloadWithError:)``
    /// (reason ``OfflineVideoError/Reason/cancelled``).
    ///
    /// - Parameter token: The offline video's token.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has, or
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/downloadFailure`` with a storage reason when the offline store cannot record
    ///   the change.
    public func deleteOfflineVideo(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await downloads.apply(.delete, to: token)
    }

    /// Ends every requested, running and suspended download with an error (reason
    /// ``OfflineVideoError/Reason/cancelled``, announced with
    /// ``OfflineVideoManagerDelegate/offlineVideoToken(_:didFinishDownloadWithError:)``) and deletes its files;
    /// completed ones are left alone.
    ///
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager; code
    ///   ``OfflineVideoError/Code/downloadFailure`` with a storage reason when the offline store cannot record
    ///   the change.
    public func forceStopAllDownloadTasks() async throws(OfflineVideoError) {
        try await downloads.forceStopAll()
    }

    // MARK: Analytics

    /// Uploads the stored analytics events now, while the network policy allows, and returns
    /// how many are still stored (they go when the network changes, after a back-off, or at a
    /// later start). Returns once a pass already under way has sent them too.
    ///
    /// - Returns: How many events are still stored.
    public func sendPendingAnalytics() async -> Int {
        await analytics.sendPending()
    }

    // MARK: Storage

    /// Checks the storage folder against the store now, as a new manager does when it starts: a completed
    /// download whose files are gone becomes ``OfflineVideoDownloadState/stale``, and a package folder no
    /// download names is offered to the delegate's ``OfflineVideoManagerDelegate/shouldDeleteVideoPackage(_:)``
    /// (deleted by default). When anything changed,
    /// ``OfflineVideoManagerDelegate/offlineVideoStorageDidChange()`` (and
    /// ``OfflineVideoEvent/storageChanged``) follow, and the answer is true. Call it when the app becomes
    /// active: files can vanish while it is away, and the check at start runs before anyone listens. Owners
    /// only.
    ///
    /// `deep` also reads every segment of every completed download and checks its bytes (against
    /// the digest its server sent, else as whole transport-stream packets): a segment changed on
    /// disk is deleted, to be fetched again, and makes its download stale as a missing one does.
    /// It reads the whole library, on a queue of its own.
    ///
    /// - Parameter deep: Whether every segment of every completed download is also read and its bytes checked;
    ///   false by default (the files' presence only).
    /// - Returns: Whether anything changed: a download became stale, or a package folder was deleted.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/readOnly`` on a reader or a closed manager (owners only); a storage reason
    ///   when the offline store cannot be read or written.
    @discardableResult
    public func checkStorage(deep: Bool = false) async throws(OfflineVideoError) -> Bool {
        try await downloads.checkStorage(deep: deep)
    }

    /// The paths of the package folders in the storage folder that no download claims and that this offline store
    /// did not make, as the last start or `checkStorage` found them: the media of another store
    /// (`offline.sqlite` lost, cut to nothing or replaced beside its packages, or a folder copied
    /// in). They are never deleted, unlike a stranded folder this store made and never recorded
    /// (`shouldDeleteVideoPackage(_:)`); an app may move or delete them, or download the videos
    /// again.
    public var unclaimedPackageFolders: [String] {
        get async { await downloads.unclaimedFolders.map(\.path) }
    }

    // MARK: Status

    /// Every offline video's token, in the order requested.
    public var offlineVideoTokens: [OfflineVideoToken] {
        get throws(OfflineVideoError) { try storeCall { try store.allDownloads().map(\.token) } }
    }

    /// The status of every offline video, in the order requested.
    ///
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/storageFailure`` with a storage reason
    ///   when the offline store cannot be read.
    public func offlineVideoStatus() throws(OfflineVideoError) -> [OfflineVideoStatus] {
        try downloads.onSharedQueue { downloads throws(OfflineVideoError) in
            try storeCall { try store.allDownloads() }.map { downloads.status(of: $0) }
        }
    }

    /// The status of one offline video; nil for an unknown token.
    ///
    /// - Parameter token: The offline video's token.
    /// - Returns: Its state, progress, times, error and display name; nil for an unknown token.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/storageFailure`` with a storage reason
    ///   when the offline store cannot be read.
    public func offlineVideoStatus(forToken token: OfflineVideoToken) throws(OfflineVideoError) -> OfflineVideoStatus? {
        try downloads.onSharedQueue { downloads throws(OfflineVideoError) in
            try storeCall { try store.download(token) }.map { downloads.status(of: $0) }
        }
    }

    /// Where each track of a download stands in bytes: on disk, and expected in all (the
    /// sizes of finished segments plus the estimates of the others), with its percent. Live
    /// while the download runs, else as recorded.
    ///
    /// - Parameter token: The download's token.
    /// - Returns: One ``OfflineTrackProgress`` per track of the download.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/unknownToken`` for a token no offline video has; code
    ///   ``OfflineVideoError/Code/storageFailure`` with a storage reason when the offline store cannot be read.
    public func downloadProgress(_ token: OfflineVideoToken) throws(OfflineVideoError) -> [OfflineTrackProgress] {
        try downloads.onSharedQueue { downloads throws(OfflineVideoError) in try downloads.progress(token) }
    }

    /// The status of one download as the app sees it (a failure announced but not recorded counts).
    func status(of record: DownloadRecord) -> OfflineVideoStatus {
        downloads.onSharedQueue { $0.status(of: record) }
    }

    /// The package folder of a download (its files, whether there or not).
    func packageFolder(_ token: OfflineVideoToken) -> URL {
        downloads.packageFolder(token)
    }
}
