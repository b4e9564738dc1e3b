public import Foundation

/// A Dynamic Ingest job as stored: who asked for what (the validated request, as JSON), where
/// it stands, and what it made. Jobs live in the database so that every instance sharing it
/// sees them, and exactly one instance runs each (`claimIngestJob`).
struct IngestJob: Sendable, Equatable {
    /// Where a job stands. `queued` is the mock's own (the API shows it as `processing` with no
    /// `started_at`, reference §3.5); the others are the API's.
    enum State: String, Sendable { case queued, processing, publishing, published, finished, failed }

    var id: String
    var accountID: String
    var videoID: String
    var state: State
    /// The validated request (`IngestRequest`), as JSON.
    var request: Data
    var priority: String
    var errorCode: String?
    var errorMessage: String?
    var submittedAt: Date
    var startedAt: Date?
    var updatedAt: Date?
    /// The media asset the job made (in the media folder), once it has.
    var asset: String?

    /// Whether the job still waits for, or holds, a worker.
    var isActive: Bool { state != .finished && state != .failed }
}

/// What became of a new job.
enum IngestQueueing: Equatable, Sendable {
    case queued
    /// `limit` jobs are queued or running.
    case queueFull
    /// This job of the same video is queued or running (its id).
    case videoBusy(String)
}

/// The jobs in the store.
protocol IngestJobStorage: Sendable {
    /// Stores a new queued job unless `limit` jobs are already queued or running, or one of the
    /// same video is (no two jobs of one video at once, as the reference says): the checks and
    /// the insert in one transaction.
    func insertIngestJob(_ job: IngestJob, limit: Int) throws -> IngestQueueing
    /// One job of a video; nil when there is none.
    func ingestJob(id: String, accountID: String, videoID: String) throws -> IngestJob?
    /// The jobs of a video, oldest first.
    func ingestJobs(accountID: String, videoID: String) throws -> [IngestJob]
    /// The newest jobs of every account (the dashboard), newest first.
    func recentIngestJobs(limit: Int) throws -> [IngestJob]
    /// Takes the oldest queued job for this instance (state `processing`, `started_at` now), or
    /// nil when none waits. Two instances never take the same job.
    func claimIngestJob(now: Date) throws -> IngestJob?
    /// Records a job's progress: its state, error, asset and `updated_at`.
    func updateIngestJob(_ job: IngestJob) throws
    /// Puts back in the queue the jobs a stopped process held (`processing`, `publishing`,
    /// `published`): only where one process owns the store (SQLite).
    func requeueInterruptedIngestJobs() throws
}

extension BackendConfiguration {
    /// The admin token a mock-backend on `dataDirectory` made on first start and kept in its
    /// SQLite database (read-only; the server may be running); nil when there is none.
    public static func storedAdminToken(dataDirectory: URL) -> String? {
        SQLiteBackendStore.storedSetting("admin_token", directory: dataDirectory).map { String(decoding: $0, as: UTF8.self) }
    }
}
