import Foundation
import GRDB
import SQLiteSupport

/// Dynamic Ingest jobs in SQLite (migration "v8").
extension SQLiteBackendStore: IngestJobStorage {
    /// The table (migration "v8"). Never edit: later changes go in new migrations.
    static func createIngestJobTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE ingest_job (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, video_id TEXT NOT NULL, state TEXT NOT NULL,
                                     request BLOB NOT NULL, priority TEXT NOT NULL, error_code TEXT, error_message TEXT,
                                     submitted_at REAL NOT NULL, started_at REAL, updated_at REAL, asset TEXT);
            CREATE INDEX ingest_job_by_video ON ingest_job (account_id, video_id, submitted_at);
            CREATE INDEX ingest_job_by_state ON ingest_job (state, submitted_at);
            """)
    }

    func insertIngestJob(_ job: IngestJob, limit: Int) throws -> IngestQueueing {
        try pool.write { db in
            if let busy = try String.fetchOne(db, sql: "SELECT id FROM ingest_job WHERE account_id = ? AND video_id = ? AND state NOT IN ('finished', 'failed') LIMIT 1",
                                              arguments: [job.accountID, job.videoID]) {
                return .videoBusy(busy)
            }
            let active = try Int.fetchOne(db, sql: "SELECT count(*) FROM ingest_job WHERE state NOT IN ('finished', 'failed')") ?? 0
            guard active < limit else { return .queueFull }
            try db.execute(sql: """
                INSERT INTO ingest_job (id, account_id, video_id, state, request, priority, error_code, error_message, submitted_at,
                                        started_at, updated_at, asset) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [job.id, job.accountID, job.videoID, job.state.rawValue, job.request, job.priority, job.errorCode,
                                 job.errorMessage, job.submittedAt.timeIntervalSince1970, job.startedAt?.timeIntervalSince1970,
                                 job.updatedAt?.timeIntervalSince1970, job.asset])
            return .queued
        }
    }

    func ingestJob(id: String, accountID: String, videoID: String) throws -> IngestJob? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM ingest_job WHERE id = ? AND account_id = ? AND video_id = ?",
                             arguments: [id, accountID, videoID]).map(Self.ingestJob)
        }
    }

    func ingestJobs(accountID: String, videoID: String) throws -> [IngestJob] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM ingest_job WHERE account_id = ? AND video_id = ? ORDER BY submitted_at, id",
                             arguments: [accountID, videoID]).map(Self.ingestJob)
        }
    }

    func recentIngestJobs(limit: Int) throws -> [IngestJob] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM ingest_job ORDER BY submitted_at DESC, id DESC LIMIT ?", arguments: [limit]).map(Self.ingestJob)
        }
    }

    func claimIngestJob(now: Date) throws -> IngestJob? {
        try pool.write { db in
            try Row.fetchOne(db, sql: """
                UPDATE ingest_job SET state = 'processing', started_at = ?, updated_at = ?
                WHERE id = (SELECT id FROM ingest_job WHERE state = 'queued' ORDER BY priority = 'low', submitted_at, id LIMIT 1)
                RETURNING *
                """, arguments: [now.timeIntervalSince1970, now.timeIntervalSince1970]).map(Self.ingestJob)
        }
    }

    func updateIngestJob(_ job: IngestJob) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE ingest_job SET state = ?, error_code = ?, error_message = ?, updated_at = ?, asset = ? WHERE id = ?",
                           arguments: [job.state.rawValue, job.errorCode, job.errorMessage, job.updatedAt?.timeIntervalSince1970, job.asset, job.id])
        }
    }

    func requeueInterruptedIngestJobs() throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE ingest_job SET state = 'queued', started_at = NULL WHERE state IN ('processing', 'publishing', 'published')")
        }
    }

    private static func ingestJob(_ row: Row) -> IngestJob {
        IngestJob(id: row["id"], accountID: row["account_id"], videoID: row["video_id"],
                  state: IngestJob.State(rawValue: row["state"]) ?? .failed, request: row["request"], priority: row["priority"],
                  errorCode: row["error_code"], errorMessage: row["error_message"],
                  submittedAt: Date(timeIntervalSince1970: row["submitted_at"]),
                  startedAt: (row["started_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                  updatedAt: (row["updated_at"] as Double?).map(Date.init(timeIntervalSince1970:)), asset: row["asset"])
    }
}

extension SQLiteBackendStore {
    /// A setting of the database in `directory`, read-only, without migrating; nil when the
    /// file or the setting is missing.
    static func storedSetting(_ name: String, directory: URL) -> Data? {
        let file = directory.appendingPathComponent(setup.fileName).path
        guard FileManager.default.fileExists(atPath: file) else { return nil }
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: file, configuration: configuration) else { return nil }
        return try? queue.read { db in try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [name]) }
    }
}
