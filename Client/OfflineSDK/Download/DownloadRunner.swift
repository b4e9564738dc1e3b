import CurlTransfer
import Foundation
import GRDB
import WireModels

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
/// resumed with a Range request. Errors are retried with backoff; the download fails only
/// after `retry.maxConsecutiveFailures` errors in a row without a segment finishing, or at
/// once when the disk is full. A 403 or an expired URL token asks `refreshURLs` for fresh
/// URLs and goes on.
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
    var progressInterval: Duration = .milliseconds(100)
    var clock: @Sendable () -> Date = { Date() }

    private enum Outcome: Sendable {
        case finished(SegmentRecord, Int64)
        case failed(SegmentRecord, TransferError)
        case networkUnavailable(SegmentRecord)
    }

    /// Runs to completion. Throws `CancellationError` when the task is cancelled (paused or
    /// cancelled by the app): finished segments are kept and recorded.
    func run() async throws -> Result<Void, OfflineVideoError> {
        var segments = try store.segments(token)
        let tracks = Set(segments.map(\.track))
        var trackDone: [Int: Int64] = [:], trackRemaining: [Int: Int64] = [:], trackOpen: [Int: Int] = [:]
        var reconciled: [(track: Int, sequence: Int, bytes: Int64)] = []
        for index in segments.indices {
            let segment = segments[index]
            let path = packageDirectory.appendingPathComponent(segment.file).path
            let size = fileSize(path)
            if let size, !segment.done {
                // Renamed into place but not yet recorded when the process stopped.
                segments[index].done = true
                segments[index].bytes = size
                reconciled.append((segment.track, segment.sequence, size))
            } else if segment.done, size == nil {
                segments[index].done = false  // deleted behind our back: fetch it again
            }
            if segments[index].done {
                trackDone[segment.track, default: 0] += segments[index].bytes ?? size ?? 0
            } else {
                trackRemaining[segment.track, default: 0] += segment.estimatedBytes
                trackOpen[segment.track, default: 0] += 1
            }
        }
        try store.markDone(token: token, reconciled)

        // Tracks advance together (segment n of every track before n + 1), so a video and
        // its audio are playable up to the same point if the download stops halfway.
        var pending = segments.filter { !$0.done }.sorted { ($0.sequence, $0.track) < ($1.sequence, $1.track) }
        segments = []  // only the pending ones are needed from here on
        var finishedTracks = tracks.filter { trackOpen[$0, default: 0] == 0 }.sorted()
        var streak = FailureStreak()
        var meter = ProgressMeter(interval: progressInterval)
        var unrecorded: [(track: Int, sequence: Int, bytes: Int64)] = []
        var lastFlush = ContinuousClock.now
        var refreshedAfterFailure = false

        func progress(complete: Bool) -> RunnerProgress {
            defer { finishedTracks = [] }
            return RunnerProgress(trackDone: trackDone, trackRemaining: trackRemaining, finishedTracks: finishedTracks, complete: complete)
        }

        if pending.isEmpty {
            await report(progress(complete: true))
            return .success(())
        }
        await report(progress(complete: false))

        // Fresh URLs first if the stored ones have expired (a download resumed days later).
        if let first = pending.first, let expiry = URLToken.expiry(ofURL: first.url), expiry <= clock() {
            try await refreshURLs()
            pending = try reload(pending)
        }

        let result: Result<Void, OfflineVideoError> = try await withThrowingTaskGroup(of: Outcome.self) { group in
            var running = 0
            var retryDelay: [String: Duration] = [:]
            func key(_ s: SegmentRecord) -> String { "\(s.track)/\(s.sequence)" }
            func launch(_ segment: SegmentRecord, after delay: Duration?) {
                running += 1
                group.addTask { try await self.fetch(segment, after: delay) }
            }
            while !pending.isEmpty && running < parallelism { launch(pending.removeFirst(), after: nil) }

            while let outcome = try await group.next() {
                running -= 1
                switch outcome {
                case .finished(let segment, let bytes):
                    streak.recordProgress()
                    refreshedAfterFailure = false
                    trackDone[segment.track, default: 0] += bytes
                    trackRemaining[segment.track, default: 0] -= segment.estimatedBytes
                    trackOpen[segment.track, default: 0] -= 1
                    if trackOpen[segment.track] == 0 {
                        trackRemaining[segment.track] = 0
                        finishedTracks.append(segment.track)
                    }
                    unrecorded.append((segment.track, segment.sequence, bytes))
                    retryDelay[key(segment)] = nil
                case .networkUnavailable(let segment):
                    pending.insert(segment, at: 0)
                case .failed(let segment, let error):
                    if error.code == .cancelled { throw CancellationError() }
                    if error.code == .diskFull {
                        group.cancelAll()
                        return .failure(DownloadRunner.diskFull(error.message))
                    }
                    let refused = error.code.httpStatus.map { $0 == 403 || $0 == 410 } ?? false
                    if refused, let current = try reload([segment]).first, current.url != segment.url {
                        // Failed on a URL that a refresh has replaced meanwhile: not an error of its own.
                        pending.append(current)
                    } else if refused && !refreshedAfterFailure {
                        // Most likely an expired URL token: fresh URLs, then try again at once.
                        refreshedAfterFailure = true
                        do throws(OfflineVideoError) { try await refreshURLs() } catch {
                            group.cancelAll()
                            return .failure(error)
                        }
                        pending = try reload(pending + [segment])
                    } else {
                        if streak.recordFailure(policy: retry) {
                            group.cancelAll()
                            return .failure(DownloadRunner.failure(error, segment: segment, attempts: retry.maxConsecutiveFailures))
                        }
                        retryDelay[key(segment)] = retry.delay(afterFailures: streak.consecutive)
                        pending.append(segment)
                    }
                }
                let now = ContinuousClock.now
                let reportNow = meter.shouldReport(at: now) || !finishedTracks.isEmpty
                // Tracks reported finished must already be recorded as such.
                if reportNow || now - lastFlush >= .milliseconds(250) || unrecorded.count >= 64 {
                    do {
                        try store.markDone(token: token, unrecorded)
                    } catch where DownloadRunner.isDiskFull(error) {
                        group.cancelAll()
                        return .failure(DownloadRunner.diskFull("the offline store cannot be written"))
                    }
                    unrecorded = []
                    lastFlush = now
                }
                if reportNow { await report(progress(complete: false)) }
                while !pending.isEmpty && running < parallelism {
                    let next = pending.removeFirst()
                    launch(next, after: retryDelay[key(next)])
                }
                if running == 0 && pending.isEmpty { break }
            }
            // Every segment was launched and came back finished: nothing is left pending.
            return .success(())
        }
        if case .failure(let error) = result, error.reason == .diskFull {
            // The partial files of unfinished segments are what filled the disk: give that room
            // back so the failure itself can be recorded. Finished segments stay.
            for segment in (try? store.segments(token)) ?? [] where !segment.done {
                unlink(packageDirectory.appendingPathComponent(segment.file).path + ".part")
            }
        }
        do {
            try store.markDone(token: token, unrecorded)
        } catch where DownloadRunner.isDiskFull(error) {
            // Segments whose completion is not recorded are found on disk by the next run.
            return .failure(DownloadRunner.diskFull("the offline store cannot be written"))
        }
        if case .success = result { await report(progress(complete: true)) }
        return result
    }

    static func diskFull(_ detail: String) -> OfflineVideoError {
        OfflineVideoError(.downloadFailure, .diskFull, "The disk is full: \(detail)")
    }

    /// Whether a store error is SQLite's "database or disk is full".
    static func isDiskFull(_ error: any Error) -> Bool {
        (error as? DatabaseError)?.resultCode == .SQLITE_FULL
    }

    private func fetch(_ segment: SegmentRecord, after delay: Duration?) async throws -> Outcome {
        if let delay { try await Task.sleep(for: delay) }
        try await NetworkGate.wait(network, allowsCellular: allowsCellular)
        let destination = packageDirectory.appendingPathComponent(segment.file).path
        do {
            let result = try await engine.download(FileDownload(url: segment.url, destination: destination))
            return .finished(segment, result.totalSize)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            if !NetworkGate.allows(network.currentPath, allowsCellular: allowsCellular) { return .networkUnavailable(segment) }
            return .failed(segment, error)
        }
    }

    /// The same segments with the URLs now in the store.
    private func reload(_ segments: [SegmentRecord]) throws -> [SegmentRecord] {
        let fresh = Dictionary(try store.segments(token).map { ("\($0.track)/\($0.sequence)", $0.url) }, uniquingKeysWith: { a, _ in a })
        return segments.map { segment in
            var copy = segment
            if let url = fresh["\(segment.track)/\(segment.sequence)"] { copy.url = url }
            return copy
        }
    }

    private func fileSize(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    static func failure(_ error: TransferError, segment: SegmentRecord, attempts: Int) -> OfflineVideoError {
        let status = error.code.httpStatus
        let reason: OfflineVideoError.Reason = status != nil ? .http : (error.code == .writeFailed ? .storage : .network)
        return OfflineVideoError(.downloadFailure, reason,
                                 "Segment \(segment.sequence) of track \(segment.track) failed \(attempts) times in a row: \(error.message)",
                                 httpStatus: status)
    }
}
