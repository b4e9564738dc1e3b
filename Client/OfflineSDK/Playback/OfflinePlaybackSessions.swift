import CurlTransfer
import Foundation
import LicenseProtocol
import WireModels
#if canImport(Glibc)
import Glibc
#endif
import SystemFiles

/// What the playback sessions need of the manager and the downloads, each run on the shared queue.
struct PlaybackSeams: Sendable {
    /// Refuses changes from a reader or a closed manager (`readOnly`).
    var requireOwner: @Sendable () throws(OfflineVideoError) -> Void
    /// The options in force (`allowsCellularPlayback`: may a segment missing on disk be fetched).
    var options: @Sendable () -> OfflineVideoManagerOptions
    /// Whether the download is queued or running here (a segment not yet on disk will come).
    var isDownloading: @Sendable (OfflineVideoToken) async -> Bool
    /// Fetches the video again and points its segments at fresh URLs (after a 403).
    var refreshURLs: @Sendable (OfflineVideoToken) async throws(OfflineVideoError) -> Void
    /// A completed download's file is missing: it becomes stale (the state machine's `filesMissing`).
    var filesMissing: @Sendable (OfflineVideoToken, _ missing: String) async -> Void
    /// Records a play event of a session (`OfflinePlayback.report`).
    var recordPlay: @Sendable (OfflineAnalytics.EventName, OfflineAnalytics.Subject,
                               _ position: Double?, _ session: String) async throws(OfflineVideoError) -> Void

    /// Before `connect`: changes refused, nothing downloading, nothing recorded.
    static let detached = PlaybackSeams(
        requireOwner: { () throws(OfflineVideoError) in throw OfflineVideoError(.invalidParameter, .readOnly, "No manager runs these sessions") },
        options: { OfflineVideoManagerOptions() }, isDownloading: { _ in false }, refreshURLs: { _ throws(OfflineVideoError) in },
        filesMissing: { _, _ in }, recordPlay: { _, _, _, _ throws(OfflineVideoError) in })
}

/// The playback sessions of offline videos, the part of the manager a player's session is in
/// Media3: opening one (the package's checks, the license enforced on the device through the
/// licenses, in the same step), the source of a segment's stored bytes (the package folder,
/// else the network or the download bringing it), the open sessions an expired download waits
/// for, and the offline video objects and their cache.
///
/// Runs on the manager's queue (`SharesManagerQueue`). What it needs of the manager and the
/// downloads comes through `PlaybackSeams`.
actor OfflinePlaybackSessions: SharesManagerQueue {
    nonisolated let actorQueue: ActorQueue
    nonisolated var unownedExecutor: UnownedSerialExecutor { actorQueue.asUnownedSerialExecutor() }

    let configuration: OfflineVideoManagerConfiguration
    let store: OfflineStore
    let client: HTTPClient
    let licenses: OfflineLicenses
    /// Segments arriving from running downloads, for playback during download.
    let arrivals: SegmentArrivals
    let packagesDirectory: URL
    private(set) var seams = PlaybackSeams.detached
    /// Open playback sessions per offline video.
    var openSessions: [OfflineVideoToken: Int] = [:]
    /// Video objects of completed downloads (`videoObject(fromOfflineVideoToken:)`).
    var videoCache: [OfflineVideoToken: PlaybackVideo] = [:]

    init(actorQueue: ActorQueue, configuration: OfflineVideoManagerConfiguration, store: OfflineStore, client: HTTPClient,
         licenses: OfflineLicenses, arrivals: SegmentArrivals) {
        self.actorQueue = actorQueue
        self.configuration = configuration
        self.store = store
        self.client = client
        self.licenses = licenses
        self.arrivals = arrivals
        packagesDirectory = PackageLayout.packagesDirectory(in: configuration.storageDirectory)
    }

    /// Sets what the sessions need of the rest of the manager (once, before any use).
    func connect(_ seams: PlaybackSeams) {
        self.seams = seams
    }

    /// Whether a playback session has the video open.
    func isPlaying(_ token: OfflineVideoToken) -> Bool {
        openSessions[token] != nil
    }

    /// The download changed (its state, its license): its cached video object is stale.
    func forgetVideoObject(_ token: OfflineVideoToken) {
        videoCache[token] = nil
    }

    func packageFolder(_ token: OfflineVideoToken) -> URL {
        PackageLayout.packageFolder(token, in: packagesDirectory)
    }

    /// `openPlayback`, with `whenClosed` run after the session closes (the task façade resumes a
    /// download it paused for playback).
    func openPlayback(_ token: OfflineVideoToken, options: PlaybackOptions,
                      whenClosed: (@Sendable () async -> Void)?) async throws(OfflineVideoError) -> OfflinePlayback {
        // A reader plays too, beside the owner that may be downloading the video: its first-play
        // and trusted-time records go to the store (SQLite serializes them with the owner's
        // writes), and the owner sends the first-play report.
        if configuration.role == .owner { try seams.requireOwner() }
        // Every open, refused or not, raises the trusted-time mark before anything is decided
        // on the clock: an open refused as expired still moves the mark past the license's end.
        let (now, mark) = licenses.onSharedQueue { $0.observeClock() }
        let record = try store.existingDownload(token)
        switch record.downloadState {
        case .completed:
            if let missing = OfflineDownloads.missingFile(record, store: store, folder: packageFolder(token)) {
                await seams.filesMissing(token, missing)
                throw OfflineVideoError(.downloadFailure, .filesMissing,
                                        "Files of offline video \(token) are missing (\(missing)); delete it and download it again")
            }
        case .stale:
            throw OfflineVideoError(.downloadFailure, .filesMissing,
                                    "Files of offline video \(token) are missing; delete it and download it again")
        case .cancelled, .licensePreloaded:
            throw OfflineVideoError(.invalidParameter, .notDownloaded, "Offline video \(token) is \(record.downloadState): nothing to play")
        case .requested, .downloading, .suspended, .error:
            break  // playback during download: what is missing is fetched or waited for
        }
        let video: PlaybackVideo
        do { video = try record.video() } catch {
            throw OfflineVideoError(.downloadFailure, .storage, "The stored video object of \(token) is damaged: \(error)",
                                    underlying: error)
        }

        // The license decides in the same step as the checks above (the shared queue).
        let license = video.usesFairPlay
            ? try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.playbackKey(record, now: now, mark: mark) }
            : nil
        let key = license.map { (key: $0.key, iv: $0.iv) }

        let folder = packageFolder(token).path
        let reader = try ClearMediaReader.open(folder: folder, tracks: try storeCall { try store.tracks(token) }, key: key,
                                               licenseKeyID: license?.keyID, source: segmentSource(token: token, folder: folder))
        let sideband = OfflineDownloads.sidebandTracks(record: record, video: video).map { (language: $0.srclang, file: PackageLayout.sidebandFile($0)) }
        var subtitleLanguage: String?
        if let wanted = options.subtitleLanguage {
            let downloaded = sideband.map(\.language) + reader.tracks.filter { $0.selection.kind == .subtitles }.compactMap(\.selection.language)
            guard let match = downloaded.first(where: { RenditionChooser.language($0, matches: wanted) }) else {
                throw OfflineVideoError(.invalidParameter, .noMatchingRendition,
                                        "No \(wanted) subtitles were downloaded with offline video \(token); it has "
                                            + (downloaded.isEmpty ? "none" : downloaded.joined(separator: ", ")))
            }
            subtitleLanguage = match
        }
        var images = [record.posterFile, record.thumbnailFile].compactMap { $0 }
        // The thumbnail track, when downloaded: its WebVTT and sprites served beside the images.
        let thumbnailTrack = OfflinePlaybackSessions.readFile(packageFolder(token).appendingPathComponent(ThumbnailTrackFile.trackFile).path)
            .map { String(decoding: $0, as: UTF8.self) }
        let thumbnails = thumbnailTrack.flatMap { ThumbnailTrackFile.thumbnails(inPackage: packageFolder(token), body: $0) } ?? []
        if let thumbnailTrack, !thumbnails.isEmpty { images += [ThumbnailTrackFile.trackFile] + ThumbnailTrackFile.spriteFiles(local: thumbnailTrack) }
        openSessions[token, default: 0] += 1
        let subject = OfflineAnalytics.Subject(record)
        let session = UUID().uuidString.lowercased()
        return OfflinePlayback(token: token, sessionID: session, reader: reader, license: license?.info, sideband: sideband,
                               subtitleLanguage: subtitleLanguage, images: images, thumbnails: thumbnails,
                               onReport: { [seams] name, position throws(OfflineVideoError) in
                                   try await seams.recordPlay(name, subject, position, session)
                               },
                               onClose: { [weak self] in
                                   await self?.playbackClosed(token)
                                   await whenClosed?()
                               })
    }

    /// A playback session ended: an expired download waiting for it may be purged now.
    func playbackClosed(_ token: OfflineVideoToken) async {
        openSessions[token, default: 1] -= 1
        if openSessions[token] == 0 { openSessions[token] = nil }
        await licenses.playbackClosed()
    }

    /// Where the reader gets a segment's stored bytes: the package folder; during a download,
    /// the network when the playback policy allows it (fresh URLs on a 403), else the download
    /// itself once it brings the segment: this manager's (it announces each segment), or, for a
    /// reader, the owner's in another process (the package folder is watched while the store says
    /// the download is under way and an owner holds the folder).
    func segmentSource(token: OfflineVideoToken, folder: String) -> ClearMediaReader.Source {
        let store = self.store, arrivals = self.arrivals, client = self.client, network = configuration.network, seams = self.seams
        let allowsCellular = seams.options().allowsCellularPlayback
        let ownerLock = configuration.role == .reader ? configuration.storageDirectory.appendingPathComponent("owner.lock").path : nil
        return { track, sequence in
            let path = folder + "/" + track.folder + "/" + (track.name(of: sequence) ?? "")
            if let bytes = await OfflinePlaybackSessions.readFileOffPool(path) { return bytes }
            let key = SegmentKey(track: track.position, sequence: sequence)
            for attempt in 0..<2 {
                guard let (url, range) = try await BlockingWork.run({ try store.segmentSource(token, key) }),
                      NetworkGate.allows(network, allowsCellular: allowsCellular, url: url) else { break }
                // A byte range of its URL is asked for as one (and only a 206 of exactly it is taken).
                let headers = range.map { [("Range", "bytes=\($0.offset)-\($0.offset + $0.length - 1)")] } ?? []
                let response = try? await client.send(HTTPClientRequest(url: url, headers: headers))
                if let response, range == nil ? response.status == 200 : response.status == 206 && Int64(response.body.count) == range?.length {
                    return response.body
                }
                guard attempt == 0, response?.status == 403 else { break }
                try await seams.refreshURLs(token)
            }
            if let ownerLock {
                let arrived = await FolderWatch.waitForFile(path) {
                    OfflinePlaybackSessions.isDownloadingElsewhere(token, store: store, ownerLock: ownerLock)
                }
                if arrived, let bytes = await OfflinePlaybackSessions.readFileOffPool(path) { return bytes }
                try Task.checkCancellation()
            }
            while await seams.isDownloading(token) {
                await arrivals.wait(token, key) { access(path, F_OK) == 0 }
                if let bytes = await OfflinePlaybackSessions.readFileOffPool(path) { return bytes }
                try Task.checkCancellation()
            }
            if let bytes = await OfflinePlaybackSessions.readFileOffPool(path) { return bytes }
            throw OfflineVideoError(.downloadFailure, .notDownloaded,
                                    "Segment \(sequence) of \(track.selection) is not downloaded and cannot be fetched now")
        }
    }

    /// Whether another process's manager is downloading `token`: the store says it is requested
    /// or downloading, and an owner holds the folder (one killed mid-download leaves the state,
    /// not the lock). Reads the store and the lock file: call it off the cooperative pool.
    static func isDownloadingElsewhere(_ token: OfflineVideoToken, store: OfflineStore, ownerLock: String) -> Bool {
        guard let state = try? store.download(token)?.downloadState, state.isActive else { return false }
        return StorageLock.isHeld(at: ownerLock)
    }

    /// `readFile` on a dispatch thread: the playback source is read from MHD's handler tasks,
    /// the segment sequence and the export, all on the cooperative pool.
    static func readFileOffPool(_ path: String) async -> [UInt8]? {
        await BlockingWork.run { readFile(path) }
    }

    /// A whole file's bytes, or nil when it is not there. Blocks: off the cooperative pool only.
    static func readFile(_ path: String) -> [UInt8]? {
        PoolCheck.note()
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { Glibc.close(descriptor) }
        guard let status = FileStatus(descriptor: descriptor) else { return nil }
        let size = Int(status.size)
        var complete = true
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            while count < size {
                let got = Glibc.read(descriptor, buffer.baseAddress! + count, size - count)
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else {
                    complete = false
                    return
                }
                count += got
            }
        }
        return complete ? bytes : nil
    }
}
