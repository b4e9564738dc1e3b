import Foundation
import GRDB
import WireModels

/// The analytics collector's events (`POST /tracker`) in SQLite, one row per client event id:
/// an id stored once is never stored again, so a batch sent twice adds nothing the second time.
extension SQLiteBackendStore: TrackerStorage {
    /// The table (migration "v4").
    static func createTrackerTables(_ db: Database) throws {
        try db.create(table: "tracker_event") { t in
            t.autoIncrementedPrimaryKey("seq")
            t.column("id", .text).notNull().unique()
            t.column("event", .text).notNull()
            t.column("video_id", .text).notNull()
            t.column("account_id", .text).notNull()
            t.column("time", .double).notNull()
            t.column("position", .double)
            t.column("device_id", .text)
            t.column("token", .text)
            t.column("session", .text)
            t.column("details", .blob)
            t.column("received_at", .double).notNull()
        }
        try db.create(index: "tracker_event_video", on: "tracker_event", columns: ["video_id"])
    }

    func record(_ events: [TrackerEvent], receivedAt: Date) throws -> Int {
        try pool.write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO tracker_event (id, event, video_id, account_id, time, position, device_id, token, session, details, received_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            var new = 0
            for event in events {
                try statement.execute(arguments: [event.id, event.event, event.videoID, event.accountID, event.time.timeIntervalSince1970,
                                                  event.position, event.deviceID, event.token, event.session, try event.storedDetails,
                                                  receivedAt.timeIntervalSince1970])
                new += db.changesCount
            }
            return new
        }
    }

    func events(_ filter: TrackerFilter, limit: Int) throws -> (events: [RecordedTrackerEvent], total: Int) {
        let conditions = filter.conditions
        let clause = conditions.isEmpty ? "" : "WHERE " + conditions.map { "\($0.column) = ?" }.joined(separator: " AND ")
        let arguments: [any DatabaseValueConvertible] = conditions.map(\.value)
        return try pool.read { db in
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tracker_event \(clause)", arguments: StatementArguments(arguments)) ?? 0
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM tracker_event \(clause) ORDER BY seq DESC LIMIT ?",
                                        arguments: StatementArguments(arguments + [limit]))
            let events = try rows.map { row in
                RecordedTrackerEvent(event: TrackerEvent(id: row["id"], event: row["event"], videoID: row["video_id"], accountID: row["account_id"],
                                                         time: Date(timeIntervalSince1970: row["time"]), position: row["position"],
                                                         deviceID: row["device_id"], token: row["token"], session: row["session"],
                                                         details: try TrackerEvent.details(stored: row["details"])),
                                     receivedAt: Date(timeIntervalSince1970: row["received_at"]))
            }
            return (events, total)
        }
    }

    func trackerEventCount() throws -> Int {
        try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tracker_event") ?? 0 }
    }

    func clearTrackerEvents() throws {
        try pool.write { db in try db.execute(sql: "DELETE FROM tracker_event") }
    }
}
