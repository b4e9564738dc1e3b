import Foundation
import GRDB

/// Analytics events waiting for their collector, within a storage limit.
extension OfflineStore {
    /// Stores an analytics event, then drops the oldest events until all of them take at most
    /// `limit` bytes, in one transaction; returns how many were dropped.
    func addAnalyticsEvent(_ event: AnalyticsRecord, limit: Int) throws -> Int {
        try write { db in
            var event = event
            try event.insert(db)
            var size = try Int.fetchOne(db, sql: "SELECT bytes FROM analytics_size") ?? 0
            guard size > limit else { return 0 }
            var cut: Int64?
            let rows = try Row.fetchCursor(db, sql: "SELECT seq, bytes FROM analytics_event ORDER BY seq")
            while size > limit, let row = try rows.next() {
                cut = row[0]
                size -= row[1] as Int
            }
            guard let cut else { return 0 }
            try db.execute(sql: "DELETE FROM analytics_event WHERE seq <= ?", arguments: [cut])
            return db.changesCount
        }
    }

    /// The collectors that have events waiting, the one with the oldest event first.
    func analyticsOrigins() throws -> [String] {
        try read { db in
            try String.fetchAll(db, sql: "SELECT origin FROM analytics_event GROUP BY origin ORDER BY MIN(seq)")
        }
    }

    /// The oldest events waiting for `origin`: at most `count`, and no more than `bytes` bytes
    /// of JSON together (always at least one).
    func pendingAnalytics(origin: String, count: Int, bytes: Int) throws -> [AnalyticsRecord] {
        try read { db in
            var batch: [AnalyticsRecord] = []
            var total = 0
            let records = try AnalyticsRecord.filter(Column("origin") == origin).order(Column("seq")).limit(count).fetchCursor(db)
            while let record = try records.next() {
                if !batch.isEmpty && total + record.bytes > bytes { break }
                total += record.bytes
                batch.append(record)
            }
            return batch
        }
    }

    /// Every event waiting, oldest first.
    func allAnalytics() throws -> [AnalyticsRecord] {
        try read { db in try AnalyticsRecord.order(Column("seq")).fetchAll(db) }
    }

    /// How many events are waiting.
    func analyticsCount() throws -> Int {
        try read { db in try AnalyticsRecord.fetchCount(db) }
    }

    /// The bytes the waiting events take (what the storage limit counts).
    func analyticsBytes() throws -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT bytes FROM analytics_size") ?? 0 }
    }

    /// Forgets events the collector accepted (or refused for good).
    func removeAnalytics(_ seqs: [Int64]) throws {
        _ = try write { db in try AnalyticsRecord.deleteAll(db, keys: seqs) }
    }

    func countAnalyticsAttempt(_ seqs: [Int64]) throws {
        try write { db in
            let statement = try db.cachedStatement(sql: "UPDATE analytics_event SET attempts = attempts + 1 WHERE seq = ?")
            for seq in seqs { try statement.execute(arguments: [seq]) }
        }
    }
}
