import Foundation
import GRDB

/// Each download's plan: its tracks, segments (URLs, sizes, digests, done) and package files.
extension OfflineStore {
    /// The files a download's package was given at planning time (local playlists, media
    /// options, artwork), by path inside its package folder.
    func playlists(_ token: String) throws -> [String: Data] {
        try read { db in
            var result: [String: Data] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT path, text FROM playlist WHERE token = ?", arguments: [token])
            while let row = try rows.next() { result[row[0]] = row[1] }
            return result
        }
    }

    /// One of those files, or nil.
    func packageFile(_ token: String, path: String) throws -> Data? {
        try read { db in try Data.fetchOne(db, sql: "SELECT text FROM playlist WHERE token = ? AND path = ?", arguments: [token, path]) }
    }



    func tracks(_ token: String) throws -> [TrackRecord] {
        try read { db in
            try TrackRecord.filter(Column("token") == token).order(Column("position")).fetchAll(db)
        }
    }

    func segments(_ token: String) throws -> [SegmentRecord] {
        try read { db in
            try SegmentRecord.filter(Column("token") == token).order(Column("track"), Column("sequence")).fetchAll(db)
        }
    }

    /// Whether a download's tracks have init segments (sequences below 0): it is fragmented MP4.
    func hasInitSegments(_ token: String) throws -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM segment WHERE token = ? AND sequence < 0)", arguments: [token]) ?? false }
    }

    /// What the runner needs to know of every segment of a download, without its URL:
    /// visited in (track, sequence) order, never all in memory at once.
    func forEachSegmentState(_ token: String, _ body: (SegmentState) throws -> Void) throws {
        try read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT track, sequence, file, estimated_bytes, bytes, done, digest FROM segment
                WHERE token = ? ORDER BY track, sequence
                """, arguments: [token])
            while let row = try rows.next() {
                try body(SegmentState(track: row[0], sequence: row[1], file: row[2], estimatedBytes: row[3],
                                      bytes: row[4], done: row[5], digest: row[6]))
            }
        }
    }

    /// Up to `limit` unfinished segments in download order (sequence, then track), after
    /// `position` when given: the runner pages through a long video's segments.
    func pendingSegments(_ token: String, after position: (sequence: Int, track: Int)?, limit: Int) throws -> [SegmentRecord] {
        try read { db in
            let after = position ?? (sequence: Int.min, track: Int.min)  // init segments have sequences below 0
            return try SegmentRecord.fetchAll(db, sql: """
                SELECT * FROM segment WHERE token = ? AND done = 0 AND (sequence > ? OR (sequence = ? AND track > ?))
                ORDER BY sequence, track LIMIT ?
                """, arguments: [token, after.sequence, after.sequence, after.track, limit])
        }
    }

    /// Where one segment is fetched from: its stored URL and byte range (nil: the whole URL).
    func segmentSource(_ token: String, _ key: SegmentKey) throws -> (url: String, range: SegmentRange?)? {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT url, range_offset, range_length FROM segment WHERE token = ? AND track = ? AND sequence = ?",
                                             arguments: [token, key.track, key.sequence]) else { return nil }
            let offset: Int64? = row[1], length: Int64? = row[2]
            return (row[0], offset.flatMap { offset in length.map { SegmentRange(offset: offset, length: $0) } })
        }
    }

    /// The stored URLs of some segments, by (track, sequence).
    func segmentURLs(_ token: String, _ keys: [SegmentKey]) throws -> [SegmentKey: String] {
        try read { db in
            var urls: [SegmentKey: String] = [:]
            let statement = try db.cachedStatement(sql: "SELECT url FROM segment WHERE token = ? AND track = ? AND sequence = ?")
            for key in keys {
                if let url = try String.fetchOne(statement, arguments: [token, key.track, key.sequence]) {
                    urls[key] = url
                }
            }
            return urls
        }
    }

    /// Marks segments whose files have gone missing as not done, to be fetched again.
    func markMissing(token: String, _ missing: [SegmentKey]) throws {
        guard !missing.isEmpty else { return }
        try write { db in
            let statement = try db.cachedStatement(sql: "UPDATE segment SET done = 0, bytes = NULL, digest = NULL WHERE token = ? AND track = ? AND sequence = ?")
            for item in missing { try statement.execute(arguments: [token, item.track, item.sequence]) }
        }
    }

    /// Marks fetched segments done with their real sizes and digests, in one transaction.
    func markDone(token: String, _ finished: [FinishedSegment]) throws {
        guard !finished.isEmpty else { return }
        try write { db in
            // One statement prepared for all: this runs every quarter second while a download runs.
            let statement = try db.cachedStatement(sql: "UPDATE segment SET done = 1, bytes = ?, digest = ? WHERE token = ? AND track = ? AND sequence = ?")
            for item in finished { try statement.execute(arguments: [item.bytes, item.digest, token, item.track, item.sequence]) }
        }
    }

    /// Points segments at fresh URLs (same track and sequence), keeping what is done.
    func updateURLs(token: String, _ urls: [(track: Int, sequence: Int, url: String)]) throws {
        try write { db in
            let statement = try db.cachedStatement(sql: "UPDATE segment SET url = ? WHERE token = ? AND track = ? AND sequence = ?")
            for item in urls { try statement.execute(arguments: [item.url, token, item.track, item.sequence]) }
        }
    }
}
