import CurlTransfer
import Foundation
import WireModels
import SystemFiles

/// Running downloads: the queue, one task per download, progress, URL refreshes, images.
extension OfflineDownloads {
    /// Carries out the scheduler's actions: starts a download's task, cancels a stopped one.
    func run(_ actions: [DownloadScheduler<Task<Void, Never>>.Action]) {
        for action in actions {
            switch action {
            case .start(let token, let previous):
                // The runner's store calls and file work block a dispatch thread, not the pool.
                scheduler.started(token, Task(executorPreference: BlockingWork.executor) {
                    await previous?.value
                    await self.perform(token)
                })
            case .cancel(let task):
                task.cancel()
            }
        }
    }

    /// One download from `requested` (or a resumed one) to `completed` or `error`.
    func perform(_ token: OfflineVideoToken) async {
        defer {
            arrivals.stopped(token)
            if !Task.isCancelled {
                live[token] = nil
                run(scheduler.ended(token))
            }
        }
        do {
            guard let record = try store.download(token), record.downloadState.isActive else { return }
            // Not when paused, cancelled or deleted while it waited for its slot.
            guard try await applyUnlessMoved(.start, to: token) else { return }
            let packageFiles = try restorePlaylists(token)
            // Synced while the segments come, and before the download may be called complete.
            let packageFilesSynced = syncPackageFiles(packageFiles)
            let tracks = try store.tracks(token)
            var progress = LiveProgress()
            for track in tracks {
                progress.selections[track.position] = OfflineMediaSelection(
                    kind: OfflineMediaSelection.Kind(rawValue: track.kind) ?? .video, language: track.language, name: track.name)
            }
            progress.percent = (try? store.percent(token)) ?? 0
            progress.wholeDownload = StoredRequest.of(record).configuration != nil
            live[token] = progress
            if progress.wholeDownload {
                // Heard by the delegate before the first segment is asked for.
                await hub.emitAndWait(.willDownloadVariants(token, variants: try plannedVariants(token)))
                try Task.checkCancellation()
            }

            let runner = DownloadRunner(
                token: token, packageDirectory: packageFolder(token), store: store, engine: engine,
                retry: transferConfiguration.retryPolicy, parallelism: transferConfiguration.segmentsInParallel,
                allowsCellular: record.allowsCellular, network: configuration.network,
                refreshURLs: { [weak self] () throws(OfflineVideoError) in
                    guard let self else { return }
                    try await self.refreshURLs(token)
                },
                report: { [weak self] progress in await self?.report(token, progress) },
                arrived: { [arrivals] key in arrivals.arrived(token, key) }, beforeCommit: configuration.beforeCommit,
                progressInterval: configuration.progressInterval, clock: configuration.clock)
            let result = try await runner.run()
            try Task.checkCancellation()
            switch result {
            case .success:
                var sidebandError = await fetchSidebandSubtitles(token)
                try Task.checkCancellation()
                if sidebandError == nil { sidebandError = await fetchThumbnails(token) }
                try Task.checkCancellation()
                await fetchImages(token)
                let syncError = await packageFilesSynced.value
                try Task.checkCancellation()
                await finish(token, error: sidebandError ?? syncError ?? packageDefect(token))
            case .failure(let error):
                await finish(token, error: error)
            }
        } catch is CancellationError {
            // Paused, cancelled or closed: whoever cancelled has set the state.
        } catch {
            await finish(token, error: OfflineVideoError.storeFailure(error, during: .download, "The download stopped"))
        }
    }

    /// Records the end of a download, then announces it, exactly once (the state machine's
    /// `complete` or `fail`). A completion that cannot be recorded becomes a storage failure;
    /// a failure that cannot be recorded (the store's disk is full too, or another process
    /// holds it) is still announced, and kept in `unrecordedFailures`: the app sees the
    /// download failed, its next control of it (a resume, a retry, a cancel) records the
    /// failure first, and a new manager that finds it still `downloading` continues it.
    /// Nothing is recorded or announced when the download was paused, cancelled or deleted meanwhile.
    func finish(_ token: OfflineVideoToken, error: OfflineVideoError?) async {
        var failure = error
        if failure == nil {
            do {
                _ = try await applyUnlessMoved(.complete, to: token)
                return
            } catch {
                failure = error
            }
        }
        guard let failure else { return }
        do {
            _ = try await applyUnlessMoved(.fail(failure), to: token)
        } catch {
            unrecordedFailures[token] = (failure, configuration.clock().timeIntervalSince1970)
            hub.emit(.downloadStateChanged(token, state: .error))
            hub.emit(.downloadFinished(token, error: failure))
        }
    }

    /// Writes again the local playlists (and the package's other stored files) of a package that
    /// lost them or holds them cut short (its folder was removed by a force-stop, damaged, or a
    /// power loss took what was not yet synced): the runner then fetches the segments that are
    /// missing.
    /// Returns the paths of the package's stored files.
    @discardableResult
    func restorePlaylists(_ token: OfflineVideoToken) throws(OfflineVideoError) -> [String] {
        PoolCheck.note()
        let folder = packageFolder(token)
        let stored = try storeCall(.download, { try store.playlists(token) })
        for (path, text) in stored where FileManager.default.contents(atPath: folder.path + "/" + path) != text {
            let url = folder.appendingPathComponent(path)
            do {
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try text.write(to: url, options: .atomic)
            } catch {
                throw OfflineVideoError(.downloadFailure, OfflineVideoError.storageReason(of: error),
                                        "Cannot write \(path) again: \(OfflineVideoError.systemReason(of: error))", underlying: error)
            }
        }
        return stored.keys.map { folder.path + "/" + $0 }
    }

    /// Flushes the package's stored files (`files`: written without a sync each when the download
    /// was requested, see `writePackageFiles`) and their folders to the disk, on a dispatch thread,
    /// so that a completed download's files survive a power loss. Its value: nil, or why a
    /// file could not be synced.
    func syncPackageFiles(_ files: [String]) -> Task<OfflineVideoError?, Never> {
        let folders = Set(files.map { ($0 as NSString).deletingLastPathComponent })
        return Task {
            await BlockingWork.run {
                for path in files.sorted() + folders.sorted() {
                    let failure = FileContents.sync(path)
                    guard failure == 0 else {
                        let error = POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
                        return OfflineVideoError(.downloadFailure, OfflineVideoError.storageReason(of: error),
                                                 "Cannot save \(path) to the disk: \(OfflineVideoError.systemReason(of: error))", underlying: error)
                    }
                }
                return nil
            }
        }
    }

    /// Why a download whose every transfer succeeded is still not a whole package, or nil:
    /// a playlist, a selected segment, a sideband subtitle file or the FairPlay license is
    /// missing. A download is never marked completed without all of them.
    func packageDefect(_ token: OfflineVideoToken) -> OfflineVideoError? {
        guard let record = try? store.download(token) else { return nil }
        if let missing = missingFile(record) {
            return OfflineVideoError(.downloadFailure, .filesMissing, "The package is incomplete: \(missing) is missing")
        }
        if let video = try? record.video(), video.usesFairPlay, record.license == nil {
            return OfflineVideoError(.invalidLicense, .license, "The FairPlay download holds no license")
        }
        return nil
    }

    /// The variants a planned download fetches, from its local master playlist.
    func plannedVariants(_ token: OfflineVideoToken) throws(OfflineVideoError) -> [OfflineVariant] {
        let data = try storeCall(.download) { try store.packageFile(token, path: PackageLayout.masterPlaylist) }
        guard let data, let master = try? MasterPlaylist(parsing: String(decoding: data, as: UTF8.self)) else {
            throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "The local master playlist of \(token) is missing or damaged")
        }
        return master.variants.map(OfflineVariant.init)
    }

    /// Turns runner progress into events: for a download-configuration download, its whole
    /// percent when it rose; else each track's percent when it moved, and its completion once.
    func report(_ token: OfflineVideoToken, _ progress: RunnerProgress) {
        guard var state = live[token], scheduler.isRunning(token) else { return }
        let percent = ProgressMeter.percent(done: progress.done, remainingEstimate: progress.remaining, complete: progress.complete)
        state.done = progress.trackDone
        state.remaining = progress.trackRemaining
        if state.wholeDownload {
            if state.reportedWhole.map({ percent > $0 }) ?? true {
                state.reportedWhole = percent
                hub.emit(.downloadProgress(token, percent: percent))
            }
            state.percent = percent
            live[token] = state
            return
        }
        state.percent = percent
        for (position, selection) in state.selections.sorted(by: { $0.key < $1.key }) {
            let done = progress.trackDone[position, default: 0], remaining = progress.trackRemaining[position, default: 0]
            let finished = progress.complete || progress.finishedTracks.contains(position)
            let percent = ProgressMeter.percent(done: done, remainingEstimate: remaining, complete: finished && remaining == 0)
            if state.reported[position] != percent && !(state.reported[position] == 100) {
                state.reported[position] = percent
                hub.emit(.progress(token, percent: percent, mediaSelection: selection))
            }
            if progress.finishedTracks.contains(position) {
                hub.emit(.mediaSelectionFinished(token, selection))
            }
        }
        live[token] = state
    }

    /// Fetches the video again (through the delegate's service, else one built from the
    /// origin kept with the download) and points every segment at its fresh URL.
    func refreshURLs(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        let record = try existing(token)
        let stored: PlaybackVideo
        do { stored = try record.video() } catch {
            throw OfflineVideoError(.downloadFailure, .storage, "The stored video object is damaged: \(error)", underlying: error)
        }
        // A video found with a playback-restriction JWT alone has no stored credential (the
        // JWT is never written down): only the app can give a service with a fresh one.
        guard let service = hub.delegate?.playbackServiceForManifestURLTTLUpdate(for: stored)
                ?? stored.origin.flatMap({ $0.policyKey == nil ? nil : PlaybackService(origin: $0, client: client) }) else {
            throw OfflineVideoError(.downloadFailure, .tokenExpired, stored.origin == nil
                ? "The video's URLs expired and there is no Playback API service to renew them"
                : "The video's URLs expired. It was found with a playback-restriction token alone, which is never stored: "
                    + "return a service with a fresh token from the delegate's playbackServiceForManifestURLTTLUpdate(for:)")
        }
        let fresh: PlaybackVideo
        do { fresh = try await service.findVideo(id: record.videoID) } catch {
            throw OfflineVideoError(.downloadFailure, .tokenExpired, "The video's URLs expired and fetching it again failed: \(error)",
                                    httpStatus: error.status, underlying: error)
        }
        let (tracks, fragmented) = try storeCall(.download) { (try store.tracks(token), try store.hasInitSegments(token)) }
        let urls = try await planner.freshURLs(video: fresh, tracks: tracks, format: fragmented ? .cmaf : .transportStream)
        let json = try? DownloadRecord.videoJSON(of: fresh)
        try storeCall(.download) {
            try store.updateURLs(token: token, urls)
            try store.update(token) { record in if let json { record.videoJSON = json } }
        }
    }

    /// Poster and thumbnail, after the media. A failed image is not an error (the paths are
    /// recorded either way, as the reference does); the event fires regardless.
    func fetchImages(_ token: OfflineVideoToken) async {
        guard let record = try? store.download(token), let video = try? record.video() else { return }
        let folder = packageFolder(token)
        let engine = self.engine
        await withTaskGroup(of: Void.self) { group in
            for (url, file) in [(video.video.poster, PackageLayout.posterFile), (video.video.thumbnail, PackageLayout.thumbnailFile)] {
                guard let url, !url.isEmpty else { continue }
                let destination = folder.appendingPathComponent(file).path
                group.addTask { _ = try? await engine.download(FileDownload(url: url, destination: destination)) }
            }
        }
        _ = try? store.update(token) { record in
            record.posterFile = video.video.poster == nil ? nil : PackageLayout.posterFile
            record.thumbnailFile = video.video.thumbnail == nil ? nil : PackageLayout.thumbnailFile
        }
        hub.emit(.staticImagesDownloaded(token))
    }

    /// The sideband subtitle files of the selected languages, each tried again by the retry rule.
    /// Each is a media selection of its own: progress (0, then 100) and its finish are announced
    /// as for the playlist's tracks (not for a download-configuration download, which reports
    /// one progress for the whole).
    func fetchSidebandSubtitles(_ token: OfflineVideoToken) async -> OfflineVideoError? {
        guard let record = try? store.download(token), let video = try? record.video() else { return nil }
        for track in OfflineDownloads.sidebandTracks(record: record, video: video) {
            let destination = packageFolder(token).appendingPathComponent(PackageLayout.sidebandFile(track)).path
            if FileManager.default.fileExists(atPath: destination) { continue }
            let perSelection = live[token].map { !$0.wholeDownload } ?? false
            let selection = OfflineMediaSelection(kind: .subtitles, language: track.srclang, name: track.label.isEmpty ? track.srclang : track.label)
            if perSelection { hub.emit(.progress(token, percent: 0, mediaSelection: selection)) }
            do throws(TransferError) {
                try await fetchFile(track.src, to: destination)
            } catch {
                return error.code == .cancelled ? nil : OfflineDownloads.fileFailure(error, "The \(track.srclang) subtitle file")
            }
            if perSelection {
                hub.emit(.progress(token, percent: 100, mediaSelection: selection))
                hub.emit(.mediaSelectionFinished(token, selection))
            }
        }
        return nil
    }

    /// One file of a package beside its segments (a sideband subtitle file, a thumbnail sprite):
    /// fetched whole to `destination` (a `.part` file first, its length checked), a failure that
    /// may pass tried again by the retry rule.
    func fetchFile(_ url: String, to destination: String) async throws(TransferError) {
        try await transferConfiguration.retryPolicy.retrying { [engine] _ -> Attempt<Void, TransferError> in
            do throws(TransferError) {
                _ = try await engine.download(FileDownload(url: url, destination: destination))
                return .done(())
            } catch {
                return RetryPolicy.isRetryable(error) ? .again(error, retryAfter: RetryPolicy.retryAfter(error.retryAfter)) : .failed(error)
            }
        }
    }

    /// The download's error for a file `fetchFile` could not fetch (`what`: "The en subtitle file").
    static func fileFailure(_ error: TransferError, _ what: String) -> OfflineVideoError {
        OfflineVideoError(.downloadFailure, error.code.httpStatus != nil ? .http : .network,
                          "\(what) failed: \(error.message)", httpStatus: error.code.httpStatus, underlying: error)
    }

    /// The video's sideband text tracks in the download's subtitle languages.
    static func sidebandTracks(record: DownloadRecord, video: PlaybackVideo) -> [TextTrack] {
        var chosen: [TextTrack] = []
        for language in StoredRequest.of(record).subtitleLanguages {
            if let track = MediaOptionCatalog.sidebandTrack(language, of: video), !chosen.contains(where: { $0.id == track.id }) {
                chosen.append(track)
            }
        }
        return chosen
    }
}
