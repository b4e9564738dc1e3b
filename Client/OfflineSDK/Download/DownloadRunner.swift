import CurlTransfer
import Foundation
import WireModels
import SystemFiles

/// What one download reports while it runs.
struct RunnerProgress: Sendable {
    /// Bytes on disk per track position, and the bytes still expected per track.
    var trackDone: [Int: Int64]
    var trackRemaining: [Int: Int64]
    /// Tracks whose every segment is on disk (reported once each).
    var finishedTracks: [Int]
    var complete: Bool

    var done: Int64 { trackDone.values.reduce(0, +) }
    var remaining: Int64 { trackRemaining.values.reduce(0, +) }
}

/// Fetches the unfinished segments of one planned download, `parallelism` at a time, into
/// its package folder. Each file appears only when complete (CurlTransfer writes `.part`
/// files, checks the length, syncs and renames); a `.part` left by a crash or a pause is
/// resumed with a Range request. Every body is checked before it is kept (`SegmentCheck`: its
/// `Repr-Digest`, else the transport-stream structure); a damaged one is deleted and fetched
/// again. A body cut short after some bytes is resumed at once (its bytes are kept). Other
/// errors are retried by `RetryPolicy`: each segment backs off on its own (a server's
/// `Retry-After` wins when longer) without holding a request slot, and the download fails only
/// after `retry.failuresWithoutProgress` failures and `retry.timeWithoutProgress` with no byte
/// received and kept across all its transfers, or at once when the disk is full. A 403 or an
/// expired URL token asks `refreshURLs` for fresh URLs and goes on.
struct DownloadRunner: Sendable {
    var token: String
    var packageDirectory: URL
    var store: OfflineStore
    var engine: TransferEngine
    var retry: RetryPolicy
    var parallelism: Int
    var allowsCellular: Bool
    var network: any NetworkMonitor
    /// Fetches the video again and stores fresh segment URLs.
    var refreshURLs: @Sendable () async throws(OfflineVideoError) -> Void
    /// Called at most every `progressInterval`, and once at the end.
    var report: @Sendable (RunnerProgress) async -> Void
    /// Called as each segment's file is in place (playback during download waits on it).
    var arrived: @Sendable (SegmentKey) -> Void = { _ in }
    /// Runs before each commit (tests: a slow disk).
    var beforeCommit: (@Sendable () async -> Void)?
    var progressInterval: Duration = .milliseconds(100)
    var clock: @Sendable () -> Date = { Date() }

    private enum Outcome: Sendable {
        /// The body is in the `.part` file: the request slot is free, the commit starts.
        case received(SegmentRecord, ReceivedFile)
        /// Committed: the segment's file is in place (with the digest it was checked against).
        case finished(SegmentRecord, Int64, digest: String?)
        case failed(SegmentRecord, TransferError, whileCommitting: Bool)
        case networkUnavailable(SegmentRecord)
        /// A failed segment's back-off is over: it may be fetched again.
        case due(SegmentRecord)
    }

    /// Runs to completion. Throws `CancellationError` when the task is cancelled (paused or
    /// cancelled by the app): finished segments are kept and recorded.
    func run() async throws -> Result<Void, OfflineVideoError> {
        // One pass over the stored segments (no URLs), checking them against the disk.
        var tracks: Set<Int> = []
        var trackDone: [Int: Int64] = [:], trackRemaining: [Int: Int64] = [:], trackOpen: [Int: Int] = [:]
        var reconciled: [FinishedSegment] = []
        var missing: [SegmentKey] = []
        var onDisk = PackageListing(packageDirectory: packageDirectory.path)
        try store.forEachSegmentState(token) { segment in
            tracks.insert(segment.track)
            let size = onDisk.size(of: segment.file)
            var done = segment.done, bytes = segment.bytes
            if let size, !done {
                // Renamed into place but not yet recorded when the process stopped.
                done = true
                bytes = size
                reconciled.append(FinishedSegment(track: segment.track, sequence: segment.sequence, bytes: size))
            } else if done, size == nil {
                done = false  // deleted behind our back: fetch it again
                missing.append(SegmentKey(track: segment.track, sequence: segment.sequence))
            }
            if done {
                trackDone[segment.track, default: 0] += bytes ?? size ?? 0
            } else {
                trackRemaining[segment.track, default: 0] += segment.estimatedBytes
                trackOpen[segment.track, default: 0] += 1
            }
        }
        try store.markDone(token: token, reconciled)
        try store.markMissing(token: token, missing)

        // Tracks advance together (segment n of every track before n + 1), so a video and
        // its audio are playable up to the same point if the download stops halfway.
        var pending = PendingSegments(store: store, token: token)
        var finishedTracks = tracks.filter { trackOpen[$0, default: 0] == 0 }.sorted()
        var watch = ProgressWatch<SegmentKey>(policy: retry, start: .now)
        var meter = ProgressMeter(interval: progressInterval)
        var unrecorded: [FinishedSegment] = []
        var lastFlush = ContinuousClock.now
        var refreshedAfterFailure = false

        func progress(complete: Bool) -> RunnerProgress {
            defer { finishedTracks = [] }
            return RunnerProgress(trackDone: trackDone, trackRemaining: trackRemaining, finishedTracks: finishedTracks, complete: complete)
        }

        if try pending.isEmpty() {
            await report(progress(complete: true))
            return .success(())
        }
        await report(progress(complete: false))

        // Fresh URLs first if the stored ones have expired (a download resumed days later).
        if let first = try pending.peek(), let expiry = URLToken.expiry(ofURL: first.url), expiry <= clock() {
            try await refreshURLs()
            try pending.reloadURLs()
        }

        // `parallelism` requests run at once (the engine holds the download's transfers to that),
        // and as many again wait queued in the engine, which starts one the moment another ends.
        let transfers = TransferGroup(limit: parallelism)
        let outstanding = 2 * parallelism
        let result: Result<Void, OfflineVideoError> = try await withThrowingTaskGroup(of: Outcome.self) { group in
            // Requests running or queued, received files being synced and renamed (a request slot
            // is free again as soon as its body is in, so the disk never holds up the network), and
            // failed segments waiting out their back-off (they hold no slot meanwhile).
            var running = 0, committing = 0, backingOff = 0
            func launch(_ segment: SegmentRecord) {
                running += 1
                group.addTask { try await self.fetch(segment, in: transfers) }
            }
            func backOff(_ segment: SegmentRecord, for delay: Duration) {
                backingOff += 1
                group.addTask {
                    try await Task.sleep(for: delay)
                    return .due(segment)
                }
            }
            while running < outstanding, let next = try pending.next() { launch(next) }

            while let outcome = try await group.next() {
                switch outcome {
                case .received(let segment, let file):
                    running -= 1
                    committing += 1
                    refreshedAfterFailure = false
                    group.addTask { await self.commit(segment, file) }
                case .due(let segment):
                    backingOff -= 1
                    pending.putBack(segment)
                case .finished(let segment, let bytes, let digest):
                    committing -= 1
                    // Progress is a body kept: checked and in place. One that arrives damaged is not.
                    watch.recordProgress(of: segment.key, at: .now)
                    arrived(segment.key)
                    trackDone[segment.track, default: 0] += bytes
                    trackRemaining[segment.track, default: 0] -= segment.estimatedBytes
                    trackOpen[segment.track, default: 0] -= 1
                    if trackOpen[segment.track] == 0 {
                        trackRemaining[segment.track] = 0
                        finishedTracks.append(segment.track)
                    }
                    unrecorded.append(FinishedSegment(track: segment.track, sequence: segment.sequence, bytes: bytes, digest: digest))
                case .networkUnavailable(let segment):
                    running -= 1
                    pending.putBack(segment)
                case .failed(let segment, let error, let whileCommitting):
                    if whileCommitting { committing -= 1 } else { running -= 1 }
                    if error.code == .cancelled { throw CancellationError() }
                    if error.code == .diskFull {
                        group.cancelAll()
                        return .failure(DownloadRunner.diskFull(error.message, underlying: error))
                    }
                    let refused = error.code.httpStatus.map { $0 == 403 || $0 == 410 } ?? false
                    if refused, let current = try reload(segment), current.url != segment.url {
                        // Failed on a URL that a refresh has replaced meanwhile: not an error of its own.
                        pending.retryLater(current)
                    } else if refused && !refreshedAfterFailure {
                        // Most likely an expired URL token: fresh URLs, then try again at once.
                        refreshedAfterFailure = true
                        do throws(OfflineVideoError) { try await refreshURLs() } catch {
                            group.cancelAll()
                            return .failure(error)
                        }
                        try pending.reloadURLs()
                        pending.retryLater(try reload(segment) ?? segment)
                    } else if error.bytesReceived > 0 {
                        // A body cut short after some bytes: they stay in its .part file, the server
                        // answers, and the rest is asked for at once (a range), first in line.
                        watch.recordProgress(of: segment.key, at: .now)
                        pending.putBack(segment)
                    } else {
                        let now = ContinuousClock.now
                        let failures = watch.recordFailure(of: segment.key, cause: DownloadRunner.cause(error, segment))
                        if watch.shouldGiveUp(at: now) {
                            group.cancelAll()
                            return .failure(DownloadRunner.failure(error, watch.summary(at: now, noun: "segment")))
                        }
                        backOff(segment, for: retry.delay(afterFailures: failures, retryAfter: RetryPolicy.retryAfter(error.retryAfter)))
                    }
                }
                // Refill the request slots first: recording and reporting must not keep them idle.
                // Not while as many bodies as requests wait for their commit: a slow disk holds the
                // network back instead of piling up bodies a crash would make fetch again.
                while running < outstanding, committing < outstanding, let next = try pending.next() {
                    launch(next)
                }
                let now = ContinuousClock.now
                let reportNow = meter.shouldReport(at: now) || !finishedTracks.isEmpty
                // Tracks reported finished must already be recorded as such.
                if reportNow || now - lastFlush >= .milliseconds(250) || unrecorded.count >= 64 {
                    do {
                        try store.markDone(token: token, unrecorded)
                    } catch {
                        guard let full = DownloadRunner.storeFull(error) else { throw error }
                        group.cancelAll()
                        return .failure(full)
                    }
                    unrecorded = []
                    lastFlush = now
                }
                if reportNow { await report(progress(complete: false)) }
                if running == 0 && committing == 0 && backingOff == 0, try pending.isEmpty() { break }
            }
            // Every segment was launched and came back finished: nothing is left pending.
            return .success(())
        }
        if case .failure(let error) = result, error.reason == .diskFull {
            // The partial files of unfinished segments are what filled the disk: give that room
            // back so the failure itself can be recorded. Finished segments stay.
            try? store.forEachSegmentState(token) { segment in
                if !segment.done { unlink(path(of: segment.file) + ".part") }
            }
        }
        do {
            try store.markDone(token: token, unrecorded)
        } catch {
            // Segments whose completion is not recorded are found on disk by the next run.
            guard let full = DownloadRunner.storeFull(error) else { throw error }
            return .failure(full)
        }
        if case .success = result { await report(progress(complete: true)) }
        return result
    }

    static func diskFull(_ detail: String, underlying: (any Error & Sendable)? = nil) -> OfflineVideoError {
        OfflineVideoError(.downloadFailure, .diskFull, "The disk is full: \(detail)", underlying: underlying)
    }

    /// The download's failure when a store error is a full disk (as the store's mapping
    /// reads it), keeping the store's error underneath; nil for any other error.
    static func storeFull(_ error: any Error) -> OfflineVideoError? {
        guard OfflineVideoError.storageReason(of: error) == .diskFull else { return nil }
        return diskFull("the offline store cannot be written", underlying: error)
    }

    private func fetch(_ segment: SegmentRecord, in transfers: TransferGroup) async throws -> Outcome {
        try await NetworkGate.wait(network, allowsCellular: allowsCellular, url: segment.url)
        let destination = path(of: segment.file)
        do {
            let span = segment.range.map { ByteSpan(offset: $0.offset, length: $0.length) }
            return .received(segment, try await engine.receive(FileDownload(url: segment.url, destination: destination, group: transfers,
                                                                            range: span)))
        } catch {
            if Task.isCancelled { throw CancellationError() }
            if !NetworkGate.allows(network, allowsCellular: allowsCellular, url: segment.url) { return .networkUnavailable(segment) }
            return .failed(segment, error, whileCommitting: false)
        }
    }

    private func commit(_ segment: SegmentRecord, _ file: ReceivedFile) async -> Outcome {
        await beforeCommit?()
        // A byte range's answer carries the whole file's Repr-Digest, which says nothing of the
        // range: its Content-Digest does, of the bytes that answer sent (all of the piece, or its
        // rest after a resume). The digest is kept only when it is the whole file's.
        let check: SegmentCheck.Digest?
        if segment.range == nil {
            check = file.result.reprDigest.flatMap(ReprDigest.init(headerValue:)).map { .init(digest: $0, from: 0) }
        } else {
            check = file.result.contentDigest.flatMap(ReprDigest.init(headerValue:)).map { .init(digest: $0, from: file.result.resumedFrom) }
        }
        do {
            let committed = try await file.commit(verifying: SegmentCheck.verifier(file: segment.file, digest: check))
            return .finished(segment, committed.totalSize, digest: check?.from == 0 ? check?.digest.hex : nil)
        } catch {
            return .failed(segment, error, whileCommitting: true)
        }
    }

    /// The segment with the URL now in the store (nil if the store no longer has it).
    private func reload(_ segment: SegmentRecord) throws -> SegmentRecord? {
        guard let url = try store.segmentURLs(token, [segment.key])[segment.key] else { return nil }
        var copy = segment
        copy.url = url
        return copy
    }

    /// Where a segment's file goes. Plain string work: `URL.appendingPathComponent` asks the
    /// file system whether the path is a folder, and this runs for every segment.
    private func path(of file: String) -> String {
        packageDirectory.path + "/" + file
    }

    /// The download's failure after it stopped making progress: what happened (`summary`), and
    /// the last error underneath.
    static func failure(_ error: TransferError, _ summary: String) -> OfflineVideoError {
        let status = error.code.httpStatus
        let reason: OfflineVideoError.Reason = status != nil ? .http : (error.code == .writeFailed ? .storage : .network)
        return OfflineVideoError(.downloadFailure, reason, "The download made no progress: \(summary)", httpStatus: status, underlying: error)
    }

    /// One failure, as the give-up message names the last: "segment 12 of track 0: HTTP 503".
    static func cause(_ error: TransferError, _ segment: SegmentRecord) -> String {
        let what = error.code.httpStatus.map { "HTTP \($0)" } ?? error.message
        return "segment \(segment.sequence) of track \(segment.track): \(what)"
    }
}

/// What is on disk in a package folder, for the runner's pass over the stored segments and the
/// completeness check of a finished download: each folder is listed once, and only a file that
/// its listing names is looked at (`stat`).
/// A new download's folders are empty, so its hundreds of segments cost a listing per track
/// instead of a `stat` each; a resumed one is checked file by file as before. A folder that
/// cannot be listed falls back to a `stat` per file.
struct PackageListing {
    let packageDirectory: String
    /// Names in each folder (by its path inside the package folder); nil: it could not be listed.
    private var listings: [Substring: Set<String>?] = [:]

    init(packageDirectory: String) {
        self.packageDirectory = packageDirectory
    }

    /// The size of the regular file at `file` (a path inside the package folder), nil when
    /// there is none.
    mutating func size(of file: String) -> Int64? {
        if listed(file) == false { return nil }
        guard let status = FileStatus(path: packageDirectory + "/" + file), status.isRegularFile else { return nil }
        return status.size
    }

    /// Whether something is at `file` (a path inside the package folder), as `access(F_OK)`
    /// answers, from its folder's listing where there is one.
    mutating func exists(_ file: String) -> Bool {
        listed(file) ?? (access(packageDirectory + "/" + file, F_OK) == 0)
    }

    /// Whether the listing of `file`'s folder names it; nil when the folder could not be listed.
    private mutating func listed(_ file: String) -> Bool? {
        let slash = file.lastIndex(of: "/")
        let folder = slash.map { file[..<$0] } ?? ""
        let listing: Set<String>?
        if let known = listings[folder] {
            listing = known
        } else {
            listing = DirectoryNames.of(folder.isEmpty ? packageDirectory : packageDirectory + "/" + folder)
            listings[folder] = .some(listing)
        }
        return listing.map { $0.contains(String(slash.map { file[file.index(after: $0)...] } ?? file[...])) }
    }
}
