import Foundation
import Postgres

/// Dynamic Ingest jobs in PostgreSQL (migration 6). A job is claimed with `FOR UPDATE SKIP
/// LOCKED`, so of several instances sharing the database exactly one runs it.
extension PostgresBackendStore: IngestJobStorage {
    /// Migration 6. Never edit: later changes go in new migrations.
    static let ingestJobMigration = (version: 6, name: "ingest jobs", sql: """
        CREATE TABLE ingest_job (id text PRIMARY KEY, account_id text NOT NULL, video_id text NOT NULL, state text NOT NULL,
                                 request bytea NOT NULL, priority text NOT NULL, error_code text, error_message text,
                                 submitted_at float8 NOT NULL, started_at float8, updated_at float8, asset text);
        CREATE INDEX ingest_job_by_video ON ingest_job (account_id, video_id, submitted_at);
        CREATE INDEX ingest_job_by_state ON ingest_job (state, submitted_at);
        """)

    func insertIngestJob(_ job: IngestJob, limit: Int) throws -> IngestQueueing {
        try pool.transaction { connection in
            // One inserter at a time, so two instances cannot both pass the count at the limit.
            try connection.query("SELECT pg_advisory_xact_lock($1::int, $2::int)", [.int(Int64(Self.lockClass)), .int(Int64(Self.ingestQueueLock))])
            if let busy: String = try connection.query("SELECT id FROM ingest_job WHERE account_id = $1 AND video_id = $2 AND state NOT IN ('finished', 'failed') LIMIT 1",
                                                       [.text(job.accountID), .text(job.videoID)]).rows.first?["id"] {
                return .videoBusy(busy)
            }
            let active: Int = try connection.query("SELECT count(*)::int8 AS n FROM ingest_job WHERE state NOT IN ('finished', 'failed')").rows.first?["n"] ?? 0
            guard active < limit else { return .queueFull }
            try connection.query("""
                INSERT INTO ingest_job (id, account_id, video_id, state, request, priority, error_code, error_message, submitted_at,
                                        started_at, updated_at, asset) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                """, [.text(job.id), .text(job.accountID), .text(job.videoID), .text(job.state.rawValue), .bytes(Array(job.request)),
                      .text(job.priority), Self.optional(job.errorCode), Self.optional(job.errorMessage),
                      .double(job.submittedAt.timeIntervalSince1970), Self.optional(job.startedAt), Self.optional(job.updatedAt),
                      Self.optional(job.asset)])
            return .queued
        }
    }

    /// The advisory lock (object, in `lockClass`) that serialises inserts against the queue limit.
    static let ingestQueueLock: Int32 = 6

    func ingestJob(id: String, accountID: String, videoID: String) throws -> IngestJob? {
        try pool.withConnection { connection in
            try connection.query("SELECT * FROM ingest_job WHERE id = $1 AND account_id = $2 AND video_id = $3",
                                 [.text(id), .text(accountID), .text(videoID)]).rows.first.map(Self.ingestJob)
        }
    }

    func ingestJobs(accountID: String, videoID: String) throws -> [IngestJob] {
        try pool.withConnection { connection in
            try connection.query("SELECT * FROM ingest_job WHERE account_id = $1 AND video_id = $2 ORDER BY submitted_at, id",
                                 [.text(accountID), .text(videoID)]).rows.map(Self.ingestJob)
        }
    }

    func recentIngestJobs(limit: Int) throws -> [IngestJob] {
        try pool.withConnection { connection in
            try connection.query("SELECT * FROM ingest_job ORDER BY submitted_at DESC, id DESC LIMIT $1", [.int(Int64(limit))]).rows.map(Self.ingestJob)
        }
    }

    func claimIngestJob(now: Date) throws -> IngestJob? {
        try pool.withConnection { connection in
            try connection.query("""
                UPDATE ingest_job SET state = 'processing', started_at = $1, updated_at = $1
                WHERE id = (SELECT id FROM ingest_job WHERE state = 'queued' ORDER BY priority = 'low', submitted_at, id
                            LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING *
                """, [.double(now.timeIntervalSince1970)]).rows.first.map(Self.ingestJob)
        }
    }

    func updateIngestJob(_ job: IngestJob) throws {
        _ = try pool.withConnection { connection in
            try connection.query("UPDATE ingest_job SET state = $1, error_code = $2, error_message = $3, updated_at = $4, asset = $5 WHERE id = $6",
                                 [.text(job.state.rawValue), Self.optional(job.errorCode), Self.optional(job.errorMessage),
                                  Self.optional(job.updatedAt), Self.optional(job.asset), .text(job.id)])
        }
    }

    /// Nothing: instances sharing the database cannot tell a stopped one's job from a running one's.
    func requeueInterruptedIngestJobs() throws {}

    private static func optional(_ text: String?) -> PostgresValue { text.map { .text($0) } ?? .null }
    private static func optional(_ date: Date?) -> PostgresValue { date.map { .double($0.timeIntervalSince1970) } ?? .null }

    private static func ingestJob(_ row: PostgresRow) throws -> IngestJob {
        let started: Double? = try row["started_at"], updated: Double? = try row["updated_at"]
        let request: [UInt8] = try row["request"]
        return IngestJob(id: try row["id"], accountID: try row["account_id"], videoID: try row["video_id"],
                         state: IngestJob.State(rawValue: try row["state"]) ?? .failed, request: Data(request), priority: try row["priority"],
                         errorCode: try row["error_code"], errorMessage: try row["error_message"],
                         submittedAt: Date(timeIntervalSince1970: try row["submitted_at"]),
                         startedAt: started.map(Date.init(timeIntervalSince1970:)), updatedAt: updated.map(Date.init(timeIntervalSince1970:)),
                         asset: try row["asset"])
    }
}
