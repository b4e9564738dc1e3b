import Foundation
import Locking
import Logging
import WireModels

/// Runs this instance's share of the ingest jobs, one at a time, on a thread of its own
/// (ffmpeg and curl block it, never Swift's cooperative pool). It takes the oldest queued job
/// through the store (`claimIngestJob`: with PostgreSQL, of several instances exactly one takes
/// each), makes the media asset in a hidden folder of the media folder, renames it into place,
/// points the video at it (a catalog edit, so every instance serves it), then posts the
/// notifications. A failure fails the job with its reason and leaves no media behind.
final class IngestWorker: Sendable {
    private weak let app: MockBackendApp?
    private let wakeUp = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    let tools: Subprocesses
    let mediaDirectory: URL
    private let logger: Logger

    /// How long the worker waits for a wake-up before looking at the queue again (jobs other
    /// instances queued wake nobody here).
    static let pollInterval: DispatchTimeInterval = .seconds(1)

    init(app: MockBackendApp, mediaDirectory: URL, logger: Logger) {
        self.app = app
        self.mediaDirectory = mediaDirectory
        self.logger = logger
        tools = Subprocesses(scratch: mediaDirectory.appendingPathComponent(".tool-output"))
    }

    /// Starts the thread.
    func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "ingest-worker"
        thread.start()
    }

    /// Looks at the queue now (a job was queued here).
    func wake() { wakeUp.signal() }

    /// Ends the running tool, lets the thread finish (its job stays claimed: SQLite puts it back
    /// in the queue at the next start) and, with `wait`, waits for it, up to 30 s (never on the
    /// worker's own thread: the app's last reference may go there).
    func stop(wait: Bool = true) {
        tools.stop()
        wakeUp.signal()
        if wait, Thread.current.name != "ingest-worker" { _ = finished.wait(timeout: .now() + 30) }
    }

    private func run() {
        while !tools.isStopped {
            guard let app else { return }
            let job: IngestJob?
            do { job = try app.store.claimIngestJob(now: app.clock.now()) } catch {
                if tools.isStopped { return }
                logger.error("ingest: cannot read the job queue: \(error)")
                job = nil
            }
            if let job {
                process(job, app: app)
            } else {
                _ = wakeUp.wait(timeout: .now() + Self.pollInterval)
            }
        }
    }

    /// Runs one claimed job to `finished` or `failed`.
    private func process(_ claimed: IngestJob, app: MockBackendApp) {
        var job = claimed
        logger.info("ingest job \(job.id): started for video \(job.videoID)")
        let partial = mediaDirectory.appendingPathComponent(".partial-\(job.id)")
        let name = MediaAssets.ingestedName(video: job.videoID, job: job.id)
        let final = mediaDirectory.appendingPathComponent(name)
        var request: IngestRequest?
        do throws(IngestFailure) {
            guard let decoded = try? JSONDecoder().decode(IngestRequest.self, from: job.request) else {
                throw IngestFailure("InternalError", "the stored request cannot be read")
            }
            request = decoded
            try? FileManager.default.removeItem(at: partial)
            let transcoder = IngestTranscoder(tools: tools, allowedDirectories: app.configuration.ingestAllowedDirectories)
            let made = try transcoder.make(decoded, in: partial)
            try? FileManager.default.removeItem(at: final)
            do { try FileManager.default.moveItem(at: partial, to: final) } catch {
                throw IngestFailure("InternalError", "cannot move the media into \(final.path): \(error)")
            }
            do {
                try app.attachIngestedAsset(name, job: job, request: decoded)
            } catch {
                app.assets.removeIngested(named: name)
                throw IngestFailure(error.code, error.message)
            }
            job.asset = name
            job.state = .published
            job.updatedAt = app.clock.now()
            save(job, app: app)
            logger.info("ingest job \(job.id): video \(job.videoID) now plays asset \(name) (\(String(format: "%.1f", made.duration)) s)")
            let notifier = IngestNotifier(tools: tools, job: job, callbacks: decoded.callbacks, logger: logger)
            let notifications = notifier.successNotifications(made)
            for notification in notifications.dropLast() { notifier.post(notification) }
            job.state = .finished
            job.updatedAt = app.clock.now()
            save(job, app: app)
            if let last = notifications.last { notifier.post(last) }
        } catch {
            try? FileManager.default.removeItem(at: partial)
            if error.isStop { return }
            logger.warning("ingest job \(job.id) failed: \(error.code): \(error.message)")
            job.state = .failed
            job.errorCode = error.code
            job.errorMessage = error.message
            job.updatedAt = app.clock.now()
            save(job, app: app)
            let notifier = IngestNotifier(tools: tools, job: job, callbacks: request?.callbacks ?? [], logger: logger)
            notifier.post(notifier.failure(error.message))
        }
    }

    private func save(_ job: IngestJob, app: MockBackendApp) {
        do { try app.store.updateIngestJob(job) } catch { logger.error("ingest job \(job.id): cannot store its state: \(error)") }
    }
}

extension MockBackendApp {
    /// Points the video at the asset a job made (every rendition, audio language and text track
    /// of it), through a catalog edit; the asset it played before, if ingested, is removed.
    /// A video deleted meanwhile fails the job.
    func attachIngestedAsset(_ name: String, job: IngestJob, request: IngestRequest) throws(IngestFailure) {
        var previous: String?
        do {
            try live.edit(now: clock.now()) { document throws(CatalogEditError) -> LiveCatalog.Edit in
                guard var entry = document.videos.first(where: { $0.id == job.videoID && $0.accountID == job.accountID }) else {
                    throw CatalogEditError(.notFound, "RESOURCE_NOT_FOUND", "video \(job.videoID) was deleted during the ingest")
                }
                previous = entry.asset
                entry.asset = name
                entry.renditions = nil
                entry.audioLanguages = nil
                entry.subtitleLanguages = nil
                entry.sidebandLanguages = nil
                entry.repeatCount = nil
                entry.subtitlesInManifest = !request.textTracks.isEmpty
                entry.sidebandTextTracks = !request.textTracks.isEmpty
                let kinds = Dictionary(request.textTracks.map { ($0.srclang, $0.kind) }, uniquingKeysWith: { first, _ in first })
                entry.textTrackKinds = kinds.isEmpty ? nil : kinds
                entry.updatedAt = WireDate.string(from: clock.now())
                return .video(id: entry.id, entry)
            }
        } catch {
            throw IngestFailure(error.code == .notFound ? "VideoDeleted" : "InternalError", error.message)
        }
        if let previous, previous != name { assets.removeIngested(named: previous) }
    }

    /// Removes the media Dynamic Ingest made for `video` (nothing for a fixture asset): when the
    /// video is deleted.
    func removeIngestedMedia(of video: CatalogFile.Video) {
        if let asset = video.asset, asset.hasPrefix("ingest-") { assets.removeIngested(named: asset) }
    }
}
