import CurlTransfer
import Foundation
import WireModels
import SystemFiles

/// What the downloads need of the rest of the manager, each run on the shared queue.
struct DownloadSeams: Sendable {
    /// Refuses changes from a reader or a closed manager (`readOnly`).
    var requireOwner: @Sendable () throws(OfflineVideoError) -> Void
    /// The options in force (`allowsCellularDownload` is kept with each new download).
    var options: @Sendable () -> OfflineVideoManagerOptions
    /// A download changed: its cached video object is stale (the playback sessions' cache).
    var forgetVideoObject: @Sendable (OfflineVideoToken) -> Void
    /// Records the analytics event of a request, or of a download's end as `.downloadFinished`
    /// announces it. Never fails the download.
    var recordAnalytics: @Sendable (DownloadRecord, Milestone) -> Void

    enum Milestone: Sendable {
        case requested
        /// Completed (nil), or failed or cancelled with the error.
        case finished(OfflineVideoError?)
    }

    /// Before `connect`: every change refused, nothing recorded.
    static let detached = DownloadSeams(
        requireOwner: { () throws(OfflineVideoError) in throw OfflineVideoError(.invalidParameter, .readOnly, "No manager runs these downloads") },
        options: { OfflineVideoManagerOptions() }, forgetVideoObject: { _ in }, recordAnalytics: { _, _ in })
}

/// The downloads, the part of the manager that Media3 calls its `DownloadManager`: requests
/// (checked, reserved, planned, licensed, stored), the state machine every change goes
/// through (`apply`), the scheduler and one runner per running download, live progress,
/// recovery after a crash, the storage check, status and the task façade's reads.
///
/// Runs on the manager's queue (`SharesManagerQueue`): "check, then reserve" stays one step
/// across the manager, the licenses (held here: a request acquires its license, a delete
/// releases it) and the playback sessions. What it needs of the manager and the sessions
/// comes through `DownloadSeams`.
actor OfflineDownloads: SharesManagerQueue {
    nonisolated let actorQueue: ActorQueue
    nonisolated var unownedExecutor: UnownedSerialExecutor { actorQueue.asUnownedSerialExecutor() }

    let configuration: OfflineVideoManagerConfiguration
    let transferConfiguration: TransferConfiguration
    let store: OfflineStore
    let engine: TransferEngine
    let client: HTTPClient
    let planner: DownloadPlanner
    let licenses: OfflineLicenses
    let hub: EventHub
    /// Segments arriving from running downloads, for playback during download.
    let arrivals: SegmentArrivals
    let packagesDirectory: URL
    private(set) var seams = DownloadSeams.detached
    /// The store's stamp once read (`storeStamp()`).
    private var stamp: Data?
    /// Package folders no download claims that this store did not make (`checkStorage`): kept.
    var unclaimedFolders: [URL] = []

    /// Which downloads run (at most `maxConcurrentDownloads`), wait or wind down, and which
    /// videos a request is working on (`DownloadScheduler`; its actions are carried out in `run`).
    var scheduler: DownloadScheduler<Task<Void, Never>>
    /// Live progress of running downloads (percent, and per track done bytes last reported).
    var live: [OfflineVideoToken: LiveProgress] = [:]
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

    init(actorQueue: ActorQueue, configuration: OfflineVideoManagerConfiguration, transferConfiguration: TransferConfiguration,
         store: OfflineStore, engine: TransferEngine, client: HTTPClient, planner: DownloadPlanner, licenses: OfflineLicenses,
         hub: EventHub, arrivals: SegmentArrivals) {
        self.actorQueue = actorQueue
        self.configuration = configuration
        self.transferConfiguration = transferConfiguration
        self.store = store
        self.engine = engine
        self.client = client
        self.planner = planner
        self.licenses = licenses
        self.hub = hub
        self.arrivals = arrivals
        packagesDirectory = PackageLayout.packagesDirectory(in: configuration.storageDirectory)
        scheduler = DownloadScheduler(slots: configuration.maxConcurrentDownloads)
    }

    /// Sets what the downloads need of the rest of the manager (once, before any use).
    func connect(_ seams: DownloadSeams) {
        self.seams = seams
    }

    /// Stops every running download without changing what is stored, as if the process ended,
    /// and waits until their tasks have ended.
    func close() async {
        let tasks = scheduler.close()
        for task in tasks { task.cancel() }
        live = [:]
        for task in tasks { await task.value }
    }

    // MARK: Requests

    /// The one request path under `requestVideoDownload`'s two and the task façade's.
    func requestDownload(_ video: PlaybackVideo, _ request: DownloadSpec) async throws(OfflineVideoError) -> OfflineVideoToken {
        var request = request
        try seams.requireOwner()
        var parameters = request.parameters
        try ParameterRules.validateBitrate(parameters.requestedBitrate)
        guard video.canBeDownloaded else {
            throw OfflineVideoError(.unsupported, .notEligible, "Video \(video.id) is not eligible for offline playback")
        }
        let source = try planner.offlineSource(of: video)
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
                try OfflineDownloads.mergePreloaded(preloaded, into: &request, video: video)
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
        let manifestSubtitles = OfflineDownloads.manifestSubtitleLanguages(selections.subtitleLanguages, video: video)
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
        try checkFreeSpace(needed: plan.estimatedBytes + ThumbnailTrackFile.estimatedBytes(of: video, asked: selections.thumbnails)
                               + Int64(request.configuration?.artwork?.count ?? 0))
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
        try OfflineDownloads.writePackageFiles(files, stamp: try storeStamp(), to: folder)
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
        seams.recordAnalytics(record, .requested)
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

    /// Ends every requested, running and suspended download (`forceStop`); completed ones are left alone.
    func forceStopAll() async throws(OfflineVideoError) {
        try seams.requireOwner()
        let active = try storeCall(.download) { try store.allDownloads().filter { DownloadStateMachine.stoppable.contains($0.downloadState) } }
        // Queued and suspended ones first: a running one's slot goes to the next in the queue when
        // it stops, and that one must not start (and even finish, while the stopped task winds down).
        let ordered = active.filter { !scheduler.isRunning($0.token) } + active.filter { scheduler.isRunning($0.token) }
        for record in ordered {
            _ = try await applyUnlessMoved(.forceStop, to: record.token)  // false: it ended meanwhile
        }
    }

    // MARK: Status

    /// Where each track of a download stands in bytes (`downloadProgress`): live while it runs, else as recorded.
    func progress(_ token: OfflineVideoToken) throws(OfflineVideoError) -> [OfflineTrackProgress] {
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

    /// This offline store's stamp: made once with the store (the `store_id` setting), written into
    /// every package folder it makes. A store that is new beside old folders (its file lost, cut
    /// to nothing, replaced) has another stamp, so its first start never takes their media for
    /// stranded requests of its own.
    /// A store failure is reported as part of `operation`.
    func storeStamp(during operation: StoreOperation = .download) throws(OfflineVideoError) -> Data {
        if let stamp = stamp { return stamp }
        let made = try storeCall(operation) { try store.setting("store_id") { Data(Hex.random(bytes: 16).utf8) } }
        stamp = made
        return made
    }

    /// Whether `token` is queued or running.
    func isDownloading(_ token: OfflineVideoToken) -> Bool {
        scheduler.isScheduled(token)
    }

    /// The package folder of a download (its files, whether there or not).
    nonisolated func packageFolder(_ token: OfflineVideoToken) -> URL {
        PackageLayout.packageFolder(token, in: packagesDirectory)
    }

    /// Returns once a stopped (paused, cancelled) download's task has ended.
    func waitUntilStopped(_ token: OfflineVideoToken) async {
        if let stopping = scheduler.windingTask(token) { await stopping.value }
    }

    /// Returns once the download's task, running or stopped, has ended: a task announces the
    /// download's end before it gives back its slot.
    func waitUntilEnded(_ token: OfflineVideoToken) async {
        if let task = scheduler.runningTask(token) ?? scheduler.windingTask(token) { await task.value }
    }

    /// Removes a package folder once its download task, if one was just stopped, has ended:
    /// a transfer finishing meanwhile would otherwise put files back into it.
    func removePackage(_ token: OfflineVideoToken) async {
        if let stopping = scheduler.takeWindingTask(token) { await stopping.value }
        try? FileManager.default.removeItem(at: packageFolder(token))
    }

    /// Refuses a download that would leave less than `minimumFreeSpace` free.
    func checkFreeSpace(needed: Int64) throws(OfflineVideoError) {
        guard let free = OfflineDownloads.freeSpace(at: configuration.storageDirectory) else { return }
        if free - needed < configuration.minimumFreeSpace {
            let mb = { (bytes: Int64) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
            throw OfflineVideoError(.downloadFailure, .insufficientStorage,
                                    "Not enough free space: the download needs about \(mb(needed)), \(mb(free)) are free and \(mb(configuration.minimumFreeSpace)) must stay free")
        }
    }

    static func freeSpace(at url: URL) -> Int64? {
        FileSystemSpace.available(at: url.path)
    }

    /// Subtitle languages to take from the manifest: those not served only as sideband tracks.
    static func manifestSubtitleLanguages(_ wanted: [String], video: PlaybackVideo) -> [String] {
        wanted.filter { MediaOptionCatalog.sidebandTrack($0, of: video) == nil }
    }
}
