import Foundation
import GRDB
import WireModels

/// The analytics collector's events (`POST /tracker`) in SQLite, one row per client event id:
/// an id stored once is never stored again, so a batch sent twice adds nothing the second time.
final class TrackerStore: Sendable {
    let database: BackendDatabase

    init(database: BackendDatabase) { self.database = database }

    /// The table (migration "v4").
    static func createTables(_ db: Database) throws {
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

    /// Stores the events whose ids are new, in one transaction; returns how many were new.
    func record(_ events: [TrackerEvent], receivedAt: Date) throws -> Int {
        try database.pool.write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO tracker_event (id, event, video_id, account_id, time, position, device_id, token, session, details, received_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            var new = 0
            for event in events {
                let details = try event.details.map { try JSONEncoder().encode($0) }
                try statement.execute(arguments: [event.id, event.event, event.videoID, event.accountID, event.time.timeIntervalSince1970,
                                                  event.position, event.deviceID, event.token, event.session, details,
                                                  receivedAt.timeIntervalSince1970])
                new += db.changesCount
            }
            return new
        }
    }

    /// Which events a listing wants (nil: any).
    struct Filter: Sendable {
        var accountID, videoID, event, token, session: String?
    }

    /// An event as stored, with when it arrived.
    struct Recorded: Encodable {
        var event: TrackerEvent
        var receivedAt: Date

        func encode(to encoder: any Encoder) throws {
            try event.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(WireDate.string(from: receivedAt), forKey: .receivedAt)
        }

        enum Keys: String, CodingKey { case receivedAt = "received_at" }
    }

    /// Events the filter admits, newest first, at most `limit`; and how many it admits in all.
    func events(_ filter: Filter, limit: Int) throws -> (events: [Recorded], total: Int) {
        var conditions: [String] = []
        var arguments: [(any DatabaseValueConvertible)?] = []
        for (column, value) in [("account_id", filter.accountID), ("video_id", filter.videoID), ("event", filter.event),
                                ("token", filter.token), ("session", filter.session)] {
            if let value { conditions.append("\(column) = ?"); arguments.append(value) }
        }
        let clause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try database.pool.read { db in
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tracker_event \(clause)", arguments: StatementArguments(arguments)) ?? 0
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM tracker_event \(clause) ORDER BY seq DESC LIMIT ?",
                                        arguments: StatementArguments(arguments + [limit]))
            let events = try rows.map { row in
                Recorded(event: TrackerEvent(id: row["id"], event: row["event"], videoID: row["video_id"], accountID: row["account_id"],
                                             time: Date(timeIntervalSince1970: row["time"]), position: row["position"],
                                             deviceID: row["device_id"], token: row["token"], session: row["session"],
                                             details: try (row["details"] as Data?).map { try JSONDecoder().decode([String: JSONValue].self, from: $0) }),
                         receivedAt: Date(timeIntervalSince1970: row["received_at"]))
            }
            return (events, total)
        }
    }

    /// How many events are stored.
    func count() throws -> Int {
        try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tracker_event") ?? 0 }
    }

    /// Forgets every event (the admin API's delete, and a reset).
    static func forgetAll(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM tracker_event")
    }

    func clear() throws {
        try database.pool.write { db in try Self.forgetAll(db) }
    }
}
