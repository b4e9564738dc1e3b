import Foundation
import GRDB

/// Download records: the one place a record is written (`save`, which stamps its license fields), states and progress.
extension OfflineStore {
    /// Writes a record (a new one when `before` is nil), stamping its license fields when this
    /// write changes them: the one place a stamp is made. A record whose stamp does not check
    /// (edited outside the SDK, or stored on another device) keeps it, whatever the write
    /// changes (a first play, a license the server sent back after a report: neither vouches
    /// for the rest), unless the write is a `freshLicense` (a renewal: a new license, its play
    /// window not started) or clears the license.
    func save(_ record: DownloadRecord, before: DownloadRecord?, freshLicense: Bool = false, _ db: Database) throws {
        var record = record
        let fields = LicenseFields(record)
        record.licenseSeal = before?.licenseSeal
        if fields != before.map(LicenseFields.init) {
            if fields.isEmpty || device == nil {
                record.licenseSeal = nil
            } else if let device, let before, !freshLicense, device.check(LicenseFields(before), stamp: before.licenseSeal) != .valid {
                // kept: still does not check
            } else {
                record.licenseSeal = device?.stamp(fields)
            }
        }
        if before == nil { try record.insert(db) } else { try record.update(db) }
    }



    /// Stores a new download with its plan, in one transaction.
    func insert(_ record: DownloadRecord, tracks: [TrackRecord], segments: some Sequence<SegmentRecord>,
                playlists: [String: Data] = [:]) throws {
        try write { db in
            try save(record, before: nil, db)
            try OfflineStore.insertPlan(db, token: record.token, tracks: tracks, segments: segments, playlists: playlists)
        }
    }

    /// Gives an existing record (a preloaded license) its plan, in one transaction.
    func attachPlan(_ record: DownloadRecord, tracks: [TrackRecord], segments: some Sequence<SegmentRecord>,
                    playlists: [String: Data]) throws {
        try write { db in
            try save(record, before: try DownloadRecord.fetchOne(db, key: record.token), db)
            for table in ["segment", "track", "playlist"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE token = ?", arguments: [record.token])
            }
            try OfflineStore.insertPlan(db, token: record.token, tracks: tracks, segments: segments, playlists: playlists)
        }
    }

    private static func insertPlan(_ db: Database, token: String, tracks: [TrackRecord], segments: some Sequence<SegmentRecord>,
                                   playlists: [String: Data]) throws {
        for track in tracks { try track.insert(db) }
        for segment in segments { try segment.insert(db) }
        for (path, text) in playlists {
            try db.execute(sql: "INSERT INTO playlist (token, path, text) VALUES (?, ?, ?)", arguments: [token, path, text])
        }
    }

    /// Percent done from what is recorded: done bytes over done plus estimated remaining.
    func percent(_ token: String) throws -> Double {
        try read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT COALESCE(SUM(CASE WHEN done THEN COALESCE(bytes, estimated_bytes) ELSE 0 END), 0) AS done,
                       COALESCE(SUM(CASE WHEN done THEN 0 ELSE estimated_bytes END), 0) AS remaining,
                       COUNT(*) AS total, COALESCE(SUM(done), 0) AS finished
                FROM segment WHERE token = ?
                """, arguments: [token])
            guard let row else { return 0 }
            let total: Int = row["total"], finished: Int = row["finished"]
            return ProgressMeter.percent(done: row["done"], remainingEstimate: row["remaining"], complete: total > 0 && total == finished)
        }
    }

    /// Per track position: bytes of finished segments, and the estimates of the others.
    func trackBytes(_ token: String) throws -> [Int: (done: Int64, remaining: Int64)] {
        try read { db in
            var result: [Int: (done: Int64, remaining: Int64)] = [:]
            let rows = try Row.fetchCursor(db, sql: """
                SELECT track, COALESCE(SUM(CASE WHEN done THEN COALESCE(bytes, estimated_bytes) ELSE 0 END), 0),
                       COALESCE(SUM(CASE WHEN done THEN 0 ELSE estimated_bytes END), 0)
                FROM segment WHERE token = ? GROUP BY track
                """, arguments: [token])
            while let row = try rows.next() { result[row[0]] = (row[1], row[2]) }
            return result
        }
    }

    func download(_ token: String) throws -> DownloadRecord? {
        try read { db in try DownloadRecord.fetchOne(db, key: token) }
    }

    func allDownloads() throws -> [DownloadRecord] {
        try read { db in try DownloadRecord.order(Column("sequence")).fetchAll(db) }
    }

    func nextSequence() throws -> Int64 {
        try read { db in (try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM download") ?? 0) + 1 }
    }

    /// Applies `change` to the stored record and writes it back, in one transaction.
    /// `freshLicense`: the change puts a new license from the server in place, its play window
    /// not started (a renewal), which is stamped even on a record whose stamp did not check.
    @discardableResult
    func update(_ token: String, freshLicense: Bool = false, _ change: @Sendable (inout DownloadRecord) -> Void) throws -> DownloadRecord? {
        try write { db in
            guard let before = try DownloadRecord.fetchOne(db, key: token) else { return nil }
            var record = before
            change(&record)
            try save(record, before: before, freshLicense: freshLicense, db)
            return try DownloadRecord.fetchOne(db, key: token)
        }
    }

    /// Applies the state machine's decision for the stored state of `token`, in one transaction:
    /// the state is written only from the state it was decided on. Returns the decision and
    /// the record as it was before; nil for an unknown token.
    func transition(_ token: String, at now: Double, _ decide: (OfflineVideoDownloadState) throws -> DownloadStateMachine.Transition)
        throws -> (DownloadStateMachine.Transition, before: DownloadRecord)? {
        try write { db in
            guard let before = try DownloadRecord.fetchOne(db, key: token) else { return nil }
            var record = before
            let transition = try decide(record.downloadState)
            guard let state = transition.state else {
                try record.delete(db)
                return (transition, before)
            }
            record.state = state.rawValue
            switch transition.endTime {
            case .keep: break
            case .clear: record.endedAt = nil
            case .now: record.endedAt = now
            }
            switch transition.error {
            case .keep: break
            case .clear: record.error = nil
            case .set(let error): record.error = try JSONEncoder().encode(StoredError(error))
            }
            try save(record, before: before, db)
            if transition.dropsPlan {
                for table in ["segment", "track", "playlist"] {
                    try db.execute(sql: "DELETE FROM \(table) WHERE token = ?", arguments: [token])
                }
            }
            return (transition, before)
        }
    }

    func delete(_ token: String) throws {
        _ = try write { db in try DownloadRecord.deleteOne(db, key: token) }
    }
}
