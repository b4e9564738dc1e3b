import CurlTransfer
import Foundation
import LicenseProtocol
import WireModels
#if canImport(Glibc)
import Glibc
#endif
import SystemFiles

/// Offline playback: opening a session checks the package and enforces the license on the
/// device, then hands out clear media (`OfflinePlayback`).
extension OfflineVideoManager {
    /// Opens a playback session of an offline video, the way the source material hands an
    /// offline video to a playback controller. A completed download plays with no network at
    /// all; one still downloading plays what is on disk and fetches (or waits for) the rest.
    ///
    /// Checks, in this order, each a stable error: an unknown token (`unknownToken`); missing
    /// files (`filesMissing`: a completed download becomes stale and `offlineVideoStorageDidChange`
    /// fires; nothing downloaded is `notDownloaded`); for FairPlay, a license that is missing,
    /// unreadable or edited (69304 `invalidLicense`), expired (69303 `expiredLicense`), or a
    /// wall clock set back behind the trusted time (69304, `clockRollback`). Clear packages
    /// need no license.
    ///
    /// The first open of a rental with a play duration starts its play window: the first play
    /// is stored before any media byte is served, then reported to the license server (queued
    /// while offline); the license's expiry becomes min(rental end, first play + play duration)
    /// and `didChangeLicenseExpiration` fires.
    ///
    /// ```swift
    /// let playback = try await manager.openPlayback(token)
    /// let url = try playback.serve()   // hand it to any HLS player
    /// ```
    ///
    /// `options.subtitleLanguage` names the downloaded subtitles to show (a sideband file or a
    /// subtitle track): the loopback master marks them `DEFAULT=YES,AUTOSELECT=YES` and every other
    /// subtitle rendition `DEFAULT=NO`. A language not downloaded is refused (`invalidParameter`,
    /// `noMatchingRendition`).
    public func openPlayback(_ token: OfflineVideoToken, options: PlaybackOptions = PlaybackOptions()) async throws(OfflineVideoError) -> OfflinePlayback {
        try await openPlayback(token, options: options, whenClosed: nil)
    }

    /// `openPlayback`, with `whenClosed` run after the session closes (the task façade resumes a
    /// download it paused for playback).
    func openPlayback(_ token: OfflineVideoToken, options: PlaybackOptions,
                      whenClosed: (@Sendable () async -> Void)?) async throws(OfflineVideoError) -> OfflinePlayback {
        // A reader plays too, beside the owner that may be downloading the video: its first-play
        // and trusted-time records go to the store (SQLite serializes them with the owner's
        // writes), and the owner sends the first-play report.
        if configuration.role == .owner { try requireOwner() }
        // Every open, refused or not, raises the trusted-time mark before anything is decided
        // on the clock: an open refused as expired still moves the mark past the license's end.
        let (now, mark) = licenses.onSharedQueue { $0.observeClock() }
        let record = try existing(token)
        switch record.downloadState {
        case .completed:
            if let missing = missingFile(record) {
                _ = try? await applyUnlessMoved(.filesMissing(missing), to: token)
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
        let sideband = OfflineVideoManager.sidebandTracks(record: record, video: video).map { (language: $0.srclang, file: PackageLayout.sidebandFile($0)) }
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
        let images = [record.posterFile, record.thumbnailFile].compactMap { $0 }
        openSessions[token, default: 0] += 1
        let subject = AnalyticsSubject(record)
        let session = UUID().uuidString.lowercased()
        return OfflinePlayback(token: token, sessionID: session, reader: reader, license: license?.info, sideband: sideband,
                               subtitleLanguage: subtitleLanguage, images: images,
                               onReport: { [weak self] name, position throws(OfflineVideoError) in
                                   try await self?.recordAnalytics(name, subject, position: position, session: session)
                               },
                               onClose: { [weak self] in
                                   await self?.playbackClosed(token)
                                   await whenClosed?()
                               })
    }

    /// Opens a playback session of the offline video object `videoObject(fromOfflineVideoToken:)` returned.
    public func openPlayback(_ video: PlaybackVideo, options: PlaybackOptions = PlaybackOptions()) async throws(OfflineVideoError) -> OfflinePlayback {
        guard let token = video.offlineVideoToken else {
            throw OfflineVideoError(.invalidParameter, .unknownToken, "Video \(video.id) is not an offline video object")
        }
        return try await openPlayback(token, options: options)
    }

    /// The whole picture of an offline video's license (kind, issue time, rental end, play
    /// duration, first play, effective expiry, both remaining windows); nil for a video
    /// without FairPlay or without a license. A damaged license is `invalidLicense`.
    public func licenseInfo(_ token: OfflineVideoToken) throws(OfflineVideoError) -> OfflineLicenseInfo? {
        try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.info(token) }
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
        let store = self.store, arrivals = self.arrivals, client = self.client, network = configuration.network
        let allowsCellular = options.allowsCellularPlayback
        let ownerLock = configuration.role == .reader ? configuration.storageDirectory.appendingPathComponent("owner.lock").path : nil
        return { [weak self] track, sequence in
            let path = folder + "/" + track.folder + "/" + track.names[sequence]
            if let bytes = await OfflineVideoManager.readFileOffPool(path) { return bytes }
            let key = SegmentKey(track: track.position, sequence: sequence)
            for attempt in 0..<2 {
                guard let url = try await BlockingWork.run({ try store.segmentURLs(token, [key])[key] }),
                      NetworkGate.allows(network, allowsCellular: allowsCellular, url: url) else { break }
                let response = try? await client.send(HTTPClientRequest(url: url))
                if let response, response.status == 200 { return response.body }
                guard attempt == 0, response?.status == 403, let self else { break }
                try await self.refreshURLs(token)
            }
            if let ownerLock {
                let arrived = await FolderWatch.waitForFile(path) {
                    OfflineVideoManager.isDownloadingElsewhere(token, store: store, ownerLock: ownerLock)
                }
                if arrived, let bytes = await OfflineVideoManager.readFileOffPool(path) { return bytes }
                try Task.checkCancellation()
            }
            while await self?.isDownloading(token) == true {
                await arrivals.wait(token, key) { access(path, F_OK) == 0 }
                if let bytes = await OfflineVideoManager.readFileOffPool(path) { return bytes }
                try Task.checkCancellation()
            }
            if let bytes = await OfflineVideoManager.readFileOffPool(path) { return bytes }
            throw OfflineVideoError(.downloadFailure, .notDownloaded,
                                    "Segment \(sequence) of \(track.selection) is not downloaded and cannot be fetched now")
        }
    }

    /// Whether `token` is queued or running.
    func isDownloading(_ token: OfflineVideoToken) -> Bool {
        scheduler.isScheduled(token)
    }

    /// Whether another process's manager is downloading `token`: the store says it is requested
    /// or downloading, and an owner holds the folder (one killed mid-download leaves the state,
    /// not the lock). Reads the store and the lock file: call it off the cooperative pool.
    static func isDownloadingElsewhere(_ token: OfflineVideoToken, store: OfflineStore, ownerLock: String) -> Bool {
        guard let state = try? store.download(token)?.downloadState, state == .requested || state == .downloading else { return false }
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
