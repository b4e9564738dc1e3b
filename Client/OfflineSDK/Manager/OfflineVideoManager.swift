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
    let hub = EventHub()
    /// Segments arriving from running downloads, for playback during download.
    let arrivals = SegmentArrivals()
    let packagesDirectory: URL

    /// Which downloads run (at most `maxConcurrentDownloads`), wait or wind down, and which
    /// videos a request is working on (`DownloadScheduler`; its actions are carried out in `run`).
    var scheduler: DownloadScheduler<Task<Void, Never>>
    /// Live progress of running downloads (percent, and per track done bytes last reported).
    var live: [OfflineVideoToken: LiveProgress] = [:]
    /// Video objects of completed downloads (`videoObject(fromOfflineVideoToken:)`).
    var videoCache: [OfflineVideoToken: PlaybackVideo] = [:]
    /// The lock that makes this manager the one running the storage folder's downloads; nil
    /// for a reader and once closed.
    var ownership: StorageLock?
    /// Open playback sessions per offline video.
    var openSessions: [OfflineVideoToken: Int] = [:]
    /// The sending of analytics events: one pass at a time, back-off.
    let analyticsOutbox: Outbox
    /// An owner's watcher of the network: queued license reports and analytics go when it changes.
    var networkWatcher: Task<Void, Never>?
    /// Whether downloads whose license expired are deleted (`setAutoPurgesExpiredDownloads`;
    /// starts as the configuration's `autoPurgesExpiredDownloads`).
    public var autoPurgesExpiredDownloads: Bool { licenses.onSharedQueue { $0.autoPurges } }
    /// Failures announced but not recorded (`finish`), by token, with when they happened: they
    /// count as the download's state (`announcedState`), and its next event records them first.
    var unrecordedFailures: [OfflineVideoToken: (error: OfflineVideoError, at: TimeInterval)] = [:]
    /// The number of the last task snapshot read (`taskSnapshot`).
    var snapshotGeneration: UInt64 = 0

    struct LiveProgress {
        var percent: Double = 0
        var selections: [Int: OfflineMediaSelection] = [:]
        var reported: [Int: Double] = [:]
        /// Bytes on disk and bytes still expected, per track position, as last reported.
        var done: [Int: Int64] = [:]
        var remaining: [Int: Int64] = [:]
        /// A download-configuration download: one progress for the whole download, last reported.
        var wholeDownload = false
        var reportedWhole: Double?
    }

    /// Opens (or creates) the offline store under `configuration.storageDirectory`, cleans up
    /// what a previous run left (stranded package folders, vanished files) and resumes the
    /// downloads that were running. Throws `OfflineVideoError`: code `invalidParameter` with a
    /// storage reason (`storageInUse`, `storageBusy`, `storageReadOnly`, `storageCorrupt`,
    /// `diskFull`, `storage`) and the error underneath.
    public init(configuration: OfflineVideoManagerConfiguration = OfflineVideoManagerConfiguration(),
                delegate: (any OfflineVideoManagerDelegate)? = nil) async throws(OfflineVideoError) {
        self.configuration = configuration
        options = configuration.options
        packagesDirectory = configuration.storageDirectory.appendingPathComponent("packages", isDirectory: true)
        // Without the device secret the store still opens: clear videos download and play, and
        // every license operation fails with why the secret cannot be had.
        // Reading (or on first use creating and syncing) the secret, waiting on file locks and
        // migrating SQLite: on a dispatch thread, not the pool.
        let packages = packagesDirectory
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
        scheduler = DownloadScheduler(slots: configuration.maxConcurrentDownloads)
        // The delegate may change the transfer configuration before the engine is made with it.
        var transfer = TransferConfiguration(configuration)
        delegate?.didCreateTransferConfiguration(&transfer)
        transferConfiguration = transfer.clamped
        engine = TransferEngine(configuration: transferConfiguration.engineConfiguration(trustedCAFile: configuration.trustedCAFile))
        client = HTTPClient(engine: engine)
        planner = DownloadPlanner(client: client, retry: transferConfiguration.retryPolicy)
        let licenseClient = FairPlayLicenseClient(store: store, device: device, client: client, clock: configuration.clock,
                                                  retry: transferConfiguration.retryPolicy,
                                                  keyExchange: Locked(configuration.keyExchange))
        licenses = OfflineLicenses(actorQueue: actorQueue, store: store, client: licenseClient, planner: planner, http: client,
                                   hub: hub, configuration: configuration)
        analyticsOutbox = Outbox(initialDelay: configuration.retryInitialDelay)
        hub.delegate = delegate
        analyticsOutbox.startPass = { [weak self] in await self?.sendAnalytics() }
        await licenses.connect(licenseSeams())
        if configuration.role == .owner {
            try await recover()
            watchNetworkForOutboxes()
            if configuration.autoPurgesExpiredDownloads { try await licenses.setAutoPurges(true) }
        }
    }

    // MARK: The shared instance

    private static let sharedManager = Locked<OfflineVideoManager?>(nil)

    /// The shared manager for apps, once `initializeOfflineVideoManager` has made it.
    public static var shared: OfflineVideoManager? { sharedManager.withLock { $0 } }

    /// Makes the shared manager on first call, with `configuration` (storage folder, network
    /// monitor, limits; the defaults when nil) and `options` over its options; later calls
    /// update its delegate and options. Downloads already running keep the policy they started
    /// with. A later call's configuration may set the key-exchange hook (as `authProxy`) and
    /// `autoPurgesExpiredDownloads`; one asking for any other setting than the manager runs with
    /// (another storage folder, network monitor, limits) is refused (`invalidParameter`, naming
    /// the settings): those are fixed for the manager's life.
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
    public func update(delegate: (any OfflineVideoManagerDelegate)?, options: OfflineVideoManagerOptions) {
        hub.delegate = delegate
        self.options = options
    }

    /// Every event from now on, in order: the same as the delegate gets.
    public nonisolated func events() -> AsyncStream<OfflineVideoEvent> { hub.subscribe() }

    /// Stops every running download without changing what is stored, as if the process
    /// ended, waits until their tasks have ended, and for a license report or a batch of
    /// analytics events being sent (the rest stays queued for the next start), and lets go of the
    /// storage folder: a manager made later on the same storage continues them. The manager
    /// changes nothing afterwards.
    /// Closing the shared manager forgets it: the next `initializeOfflineVideoManager` makes a new one.
    public func close() async {
        OfflineVideoManager.sharedManager.withLock { if $0 === self { $0 = nil } }
        let tasks = scheduler.close()
        for task in tasks { task.cancel() }
        let watcher = networkWatcher
        watcher?.cancel()
        networkWatcher = nil
        live = [:]
        for task in tasks { await task.value }
        // What writes the store in the background ends too, before the folder is let go: a pass
        // or an expiry purge still running would write after close() returned.
        await licenses.close()
        await analyticsOutbox.close()
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
    private func licenseSeams() -> LicenseSeams {
        LicenseSeams(
            requireOwner: { [weak self] () throws(OfflineVideoError) in
                guard let self else { throw OfflineVideoError(.invalidParameter, .readOnly, "This manager was closed") }
                try self.onSharedQueue { manager throws(OfflineVideoError) in try manager.requireOwner() }
            },
            options: { [weak self] in self?.onSharedQueue { $0.options } ?? OfflineVideoManagerOptions() },
            licenseChanged: { [weak self] token in self?.onSharedQueue { $0.videoCache[token] = nil } },
            isPlaying: { [weak self] token in self?.onSharedQueue { $0.openSessions[token] != nil } ?? false },
            purgeExpired: { [weak self] token in _ = try? await self?.applyUnlessMoved(.purgeExpired, to: token) })
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
                await self.sendAnalytics()
            }
        }
    }

    // MARK: Requests

    /// Requests a download of `video` and returns its token once the download is planned
    /// and stored (it runs in the background from then on).
    ///
    /// Refused with `.invalidParameter` for bad parameters or a language the video does not
    /// have, `.unsupported` for a video that is not offline-enabled, HLSe content or no HLS
    /// source, `.invalidParameter`/`already_downloaded` when the video is already downloaded
    /// or downloading, and `insufficient_storage` when it would leave less free space than
    /// `minimumFreeSpace`. `mediaSelections` nil takes the preferred languages of the configuration.
    public func requestVideoDownload(_ video: PlaybackVideo, mediaSelections: MediaSelections?,
                                     parameters: DownloadParameters?) async throws(OfflineVideoError) -> OfflineVideoToken {
        try await requestDownload(video, DownloadSpec(mediaSelections: mediaSelections, parameters: parameters ?? DownloadParameters()))
    }

    /// Requests a download of `video` described by a download configuration, Brightcove's
    /// second download path (`AVAssetDownloadConfiguration`): the variant chosen by the primary
    /// configuration's variant qualifiers (else by `parameters.requestedBitrate`), the audio and
    /// subtitle languages of every content configuration, the title as the display name and the
    /// artwork kept in the package. Returns the token once the download is planned and stored.
    ///
    /// The same checks, errors and preloaded-license handling as
    /// `requestVideoDownload(_:mediaSelections:parameters:)`, plus `invalidParameter` for an empty
    /// title, qualifiers together with a requested bitrate, qualifiers on an auxiliary
    /// configuration, or qualifiers no variant meets (`noMatchingRendition`). Such a download
    /// reports `willDownloadVariants` before its first media byte and one progress for the
    /// whole download (`didProgressTo`), not one per media selection.
    public func requestVideoDownload(_ video: PlaybackVideo, downloadConfiguration: DownloadConfiguration,
                                     parameters: DownloadParameters?) async throws(OfflineVideoError) -> OfflineVideoToken {
        try await requestDownload(video, try DownloadSpec(downloadConfiguration, parameters: parameters ?? DownloadParameters()))
    }

    /// The one request path under both public ones.
    func requestDownload(_ video: PlaybackVideo, _ request: DownloadSpec) async throws(OfflineVideoError) -> OfflineVideoToken {
        var request = request
        try requireOwner()
        var parameters = request.parameters
        try ParameterRules.validateBitrate(parameters.requestedBitrate)
        guard video.canBeDownloaded else {
            throw OfflineVideoError(.unsupported, .notEligible, "Video \(video.id) is not eligible for offline playback")
        }
        let source = try DownloadPlanner.offlineSource(of: video)
        // Checked and reserved before the first suspension: a second request for the video
        // while this one plans or licenses is refused, not downloaded twice.
        let existing = try reserve(video, refusingIn: DownloadStateMachine.holdsVideo,
                                   "has already been downloaded or is downloading", contentID: request.task?.contentID)
        defer { unreserve(video, contentID: request.task?.contentID) }
        // FairPlay: a preloaded license is used as it is (with the preload's bitrate and display
        // name where the request gives none; other terms are refused); otherwise terms are
        // checked before any request, and the license is acquired before any media byte is fetched.
        let preloaded = existing.first { $0.downloadState == .licensePreloaded }
        var requestedLicense: RequestedLicense?
        if source.fairPlay != nil {
            if let preloaded {
                try OfflineVideoManager.mergePreloaded(preloaded, into: &request, video: video)
                parameters = request.parameters
            } else {
                requestedLicense = try ParameterRules.validateNewLicense(parameters.license)
            }
        }
        let selections = request.selections ?? MediaSelections(audioLanguages: configuration.preferredAudioLanguages,
                                                               subtitleLanguages: configuration.preferredSubtitleLanguages)
        let token = preloaded?.token ?? UUID().uuidString.lowercased()
        scheduler.beginPreparing(token)
        defer { scheduler.endPreparing(token) }
        let manifestSubtitles = OfflineVideoManager.manifestSubtitleLanguages(selections.subtitleLanguages, video: video)
        let plan = try await planner.plan(token: token, video: video, variant: request.variant,
                                          audioLanguages: selections.audioLanguages, subtitleLanguages: manifestSubtitles)
        if source.fairPlay == nil, let keyID = plan.contentKeyID {
            // Downloaded, it could never play: nothing says where its license comes from.
            throw OfflineVideoError(.unsupported, .license,
                                    "Video \(video.id) is protected with FairPlay (key \(keyID)) and names no license server (key_systems)")
        }
        if let wanted = request.task?.keyID, wanted != plan.contentKeyID {
            throw OfflineVideoError(.invalidParameter, .invalidParameter,
                                    "The request names key \(wanted); video \(video.id) is protected with "
                                        + (plan.contentKeyID.map { "key \($0)" } ?? "no FairPlay key"))
        }
        try checkFreeSpace(needed: plan.estimatedBytes + Int64(request.configuration?.artwork?.count ?? 0))
        // The package's files known now: its playlists, its media options, the artwork. Kept in
        // the store too, so a package folder that loses them gets them back when it resumes.
        var files = plan.playlists.mapValues { Data($0.utf8) }
        var stored = StoredRequest(selections, configuration: nil)
        if let configured = request.configuration {
            stored.configuration = StoredRequest.Configured(artworkFile: configured.artwork.map { _ in PackageLayout.artworkFile })
            files[PackageLayout.artworkFile] = configured.artwork
        }
        let folder = packageFolder(token)
        do {
            files[PackageLayout.mediaOptionsFile] = try MediaOptionCatalog.encode(plan.mediaOptions)
        } catch {
            throw OfflineVideoError(.downloadFailure, .storage, "Cannot encode the media options: \(error)", underlying: error)
        }
        try OfflineVideoManager.writePackageFiles(files, to: folder)
        // The license comes after the local playlists (a failure there costs the server nothing)
        // and before any media byte.
        var license: StoredLicense?
        if let requestedLicense, let fairPlay = source.fairPlay {
            do throws(OfflineVideoError) {
                guard let keyID = plan.contentKeyID else {
                    throw OfflineVideoError(.noKeyRequestURLForRendition, .license, "The FairPlay playlists of video \(video.id) name no skd:// key")
                }
                license = try await licenses.acquire(requestedLicense, fairPlay: fairPlay, contentKeyID: keyID, video: video)
            } catch {
                try? FileManager.default.removeItem(at: folder)
                throw error
            }
        }
        let born = DownloadStateMachine.birth(.download(suspended: request.task != nil))
        let record = try storeCall(.download) {
            try downloadRecord(token: token, video: video, preloaded: preloaded, firstState: born.state, parameters: parameters,
                               stored: stored, task: request.task, plan: plan, license: license)
        }
        try storeDownload(record, plan: plan, files: files, attachingToPreload: preloaded != nil, holdsNewLicense: license != nil)
        try? recordAnalytics(.downloadRequested, AnalyticsSubject(record))  // analytics never fail a request
        // Born through the state machine: a new record as `birth` says, a preloaded one by its `request` event.
        if preloaded != nil {
            try await apply(.request(suspended: request.task != nil), to: token)
        } else {
            await announceBirth(record, born)
        }
        return token
    }

    /// Refuses a video another request is working on or whose stored records are in one of
    /// `refused`, and a `contentID` a download task already goes by, else reserves the video (the
    /// caller lets go with `unreserve` when done), and the content id with it. Returns the video's
    /// stored records. Never suspends: check and reservation are one step.
    func reserve(_ video: PlaybackVideo, refusingIn refused: Set<OfflineVideoDownloadState>,
                 _ what: String, contentID: String? = nil) throws(OfflineVideoError) -> [DownloadRecord] {
        switch scheduler.reserve(video: video.id, contentID: contentID) {
        case .video?: throw OfflineVideoError(.invalidParameter, .alreadyDownloaded, "Video \(video.id) \(what) (another request is under way)")
        case .contentID?: throw OfflineVideoError(.invalidParameter, .alreadyDownloaded, "Another request for content \(contentID ?? "") is under way")
        case nil: break
        }
        var reserved = true
        defer { if reserved { scheduler.release(video: video.id, contentID: contentID) } }
        let all = try storeCall(.download) { try store.allDownloads() }
        if let contentID, let task = all.first(where: { $0.taskContentID == contentID && $0.downloadState != .licensePreloaded }) {
            throw OfflineVideoError(.invalidParameter, .alreadyDownloaded,
                                    "A download task for content \(contentID) exists (\(task.downloadState), token \(task.token)); purge it first")
        }
        if let contentID, all.contains(where: { $0.contentID == contentID && $0.videoID != video.id }) {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "Content id \(contentID) already names another video's key")
        }
        let existing = all.filter { $0.videoID == video.id }
        if let held = existing.first(where: { refused.contains($0.downloadState) }) {
            throw OfflineVideoError(.invalidParameter, .alreadyDownloaded, "Video \(video.id) \(what) (token \(held.token))")
        }
        reserved = false  // kept: the caller lets go
        return existing
    }

    /// Lets go of what `reserve` reserved.
    func unreserve(_ video: PlaybackVideo, contentID: String?) {
        scheduler.release(video: video.id, contentID: contentID)
    }

    // MARK: Control

    /// Pauses a requested or running download (state `suspended`); finished segments and the
    /// partial one are kept.
    public func pauseVideoDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await apply(.pause, to: token)
    }

    /// Continues a suspended download, or a failed one, where it stopped.
    public func resumeVideoDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await apply(.resume, to: token)
    }

    /// Retries a failed download (state `error` only), keeping the segments already fetched.
    public func retryVideoDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await apply(.retry, to: token)
    }

    /// Cancels a download: state `cancelled`, its media files removed, the record kept
    /// (status queries still answer) until `deleteOfflineVideo`. A download that was queued,
    /// running or suspended ends with `didFinishDownloadWithError` (reason `cancelled`).
    public func cancelVideoDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await apply(.cancel, to: token)
    }

    /// Removes every file of the offline video and its license, and forgets the token. The
    /// license is given back to the server (later, if offline now). A download still requested,
    /// running or suspended ends as a cancel does, with `didFinishDownloadWithError` (reason `cancelled`).
    public func deleteOfflineVideo(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try await apply(.delete, to: token)
    }

    /// Ends every requested, running and suspended download with an error (reason
    /// `cancelled`, announced with `didFinishDownloadWithError`) and deletes its files;
    /// completed ones are left alone.
    public func forceStopAllDownloadTasks() async throws(OfflineVideoError) {
        try requireOwner()
        let active = try storeCall(.download) { try store.allDownloads().filter { DownloadStateMachine.stoppable.contains($0.downloadState) } }
        // Queued and suspended ones first: a running one's slot goes to the next in the queue when
        // it stops, and that one must not start (and even finish, while the stopped task winds down).
        let ordered = active.filter { !scheduler.isRunning($0.token) } + active.filter { scheduler.isRunning($0.token) }
        for record in ordered {
            _ = try await applyUnlessMoved(.forceStop, to: record.token)  // false: it ended meanwhile
        }
    }

    // MARK: Status

    /// Every offline video's token, in the order requested.
    public var offlineVideoTokens: [OfflineVideoToken] {
        get throws(OfflineVideoError) { try storeCall { try store.allDownloads().map(\.token) } }
    }

    /// The status of every offline video, in the order requested.
    public func offlineVideoStatus() throws(OfflineVideoError) -> [OfflineVideoStatus] {
        try storeCall { try store.allDownloads() }.map { status(of: $0) }
    }

    /// The status of one offline video; nil for an unknown token.
    public func offlineVideoStatus(forToken token: OfflineVideoToken) throws(OfflineVideoError) -> OfflineVideoStatus? {
        try storeCall { try store.download(token) }.map { status(of: $0) }
    }

    /// Where each track of a download stands in bytes: on disk, and expected in all (the
    /// sizes of finished segments plus the estimates of the others), with its percent. Live
    /// while the download runs, else as recorded.
    public func downloadProgress(_ token: OfflineVideoToken) throws(OfflineVideoError) -> [OfflineTrackProgress] {
        _ = try existing(token)
        let tracks = try storeCall { try store.tracks(token) }
        let reported = live[token].map { (done: $0.done, remaining: $0.remaining) }
        let recorded = reported.map { !$0.done.isEmpty } == true ? [:] : try storeCall { try store.trackBytes(token) }
        return tracks.map { track in
            let selection = OfflineMediaSelection(kind: OfflineMediaSelection.Kind(rawValue: track.kind) ?? .video,
                                                  language: track.language, name: track.name)
            let done = reported?.done[track.position] ?? recorded[track.position]?.done ?? 0
            let remaining = reported?.remaining[track.position] ?? recorded[track.position]?.remaining ?? 0
            return OfflineTrackProgress(selection: selection, bytesDone: done, bytesExpected: done + remaining,
                                        percent: ProgressMeter.percent(done: done, remainingEstimate: remaining, complete: remaining == 0 && done > 0))
        }
    }

    func status(of record: DownloadRecord) -> OfflineVideoStatus {
        let state = announcedState(of: record)
        let unrecorded = unrecordedFailures[record.token]
        let percent: Double
        if state == .completed {
            percent = 100
        } else if state == .cancelled || state == .licensePreloaded {
            percent = 0  // nothing of it is on disk (a cancel removed its files)
        } else if let live = live[record.token] {
            percent = live.percent
        } else {
            percent = (try? store.percent(record.token)) ?? 0
        }
        return OfflineVideoStatus(token: record.token, downloadState: state,
                                  downloadStartTime: Date(timeIntervalSince1970: record.requestedAt),
                                  downloadEndTime: (unrecorded?.at ?? record.endedAt).map(Date.init(timeIntervalSince1970:)),
                                  downloadPercent: percent,
                                  error: unrecorded?.error ?? record.error.flatMap { try? JSONDecoder().decode(StoredError.self, from: $0).error },
                                  displayName: record.displayName,
                                  licenseRequestTime: record.licenseRequestedAt.map(Date.init(timeIntervalSince1970:)))
    }

    // MARK: Helpers

    func existing(_ token: OfflineVideoToken) throws(OfflineVideoError) -> DownloadRecord {
        try store.existingDownload(token)
    }

    func stopRunning(_ token: OfflineVideoToken) {
        live[token] = nil
        run(scheduler.stop(token))
    }

    func packageFolder(_ token: OfflineVideoToken) -> URL {
        packagesDirectory.appendingPathComponent(token, isDirectory: true)
    }

    /// Returns once a stopped (paused, cancelled) download's task has ended.
    func waitUntilStopped(_ token: OfflineVideoToken) async {
        if let stopping = scheduler.windingTask(token) { await stopping.value }
    }

    /// Removes a package folder once its download task, if one was just stopped, has ended:
    /// a transfer finishing meanwhile would otherwise put files back into it.
    func removePackage(_ token: OfflineVideoToken) async {
        if let stopping = scheduler.takeWindingTask(token) { await stopping.value }
        try? FileManager.default.removeItem(at: packageFolder(token))
    }

    /// Refuses a download that would leave less than `minimumFreeSpace` free.
    func checkFreeSpace(needed: Int64) throws(OfflineVideoError) {
        guard let free = OfflineVideoManager.freeSpace(at: configuration.storageDirectory) else { return }
        if free - needed < configuration.minimumFreeSpace {
            let mb = { (bytes: Int64) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
            throw OfflineVideoError(.downloadFailure, .insufficientStorage,
                                    "Not enough free space: the download needs about \(mb(needed)), \(mb(free)) are free and \(mb(configuration.minimumFreeSpace)) must stay free")
        }
    }

    static func freeSpace(at url: URL) -> Int64? {
        FileSystemSpace.available(at: url.path)
    }

    /// A file system error in words: the system's reason (`No such file or directory`)
    /// rather than Foundation's wrapper around it; other errors as they describe themselves.
    static func reason(_ error: any Error) -> String {
        if let code = OfflineVideoError.systemError(of: error) { return String(cString: strerror(code)) }
        return "\(error)"
    }

    static func json(_ video: PlaybackVideo) throws -> Data {
        try WireJSON.encoder(sortedKeys: true).encode(video.properties)
    }

    /// Subtitle languages to take from the manifest: those not served only as sideband tracks.
    static func manifestSubtitleLanguages(_ wanted: [String], video: PlaybackVideo) -> [String] {
        wanted.filter { MediaOptionCatalog.sidebandTrack($0, of: video) == nil }
    }
}
