import Foundation
import GRDB
import SQLiteSupport
import Synchronization

/// The SDK's SQLite database (GRDB, WAL): offline videos, their tracks and segments,
/// application certificates and device settings. Every state change goes through here
/// before it is announced, so a crash never leaves an announced state unrecorded.
final class OfflineStore: Sendable {
    let pool: DatabasePool
    /// The device whose stamp every write that changes a record's license fields carries, and
    /// whose trusted-time mark it keeps; nil (a store opened without one, or a device secret
    /// that cannot be read): such writes leave the fields unstamped, so they read as altered.
    let device: DeviceIdentity?
    /// Notes every store call made on the cooperative pool (tests; `BlockingWork`).
    let poolCheck: PoolCheck?
    /// Write transactions begun and not yet ended (waiting for the lock, or running).
    let writesInFlight = Atomic<Int>(0)

    /// How the store is opened: WAL with `synchronous = NORMAL` (a committed transaction
    /// survives a process crash, not always a power loss); a small page cache per connection
    /// (256 KiB, not SQLite's 2 MiB: the store is read and written in a few sequential passes,
    /// and a long video's plan would otherwise grow every connection's cache by megabytes an
    /// app never gets back); statements wait up to 10 s for a database another process is
    /// writing; opening and migrating are serialized across processes by `store.lock`.
    static let setup = SQLiteSetup(fileName: "offline.sqlite",
                                   pragmas: ["PRAGMA synchronous = NORMAL", "PRAGMA cache_size = -256"],
                                   busyTimeout: 10, migrationLockFile: "store.lock")

    /// Opens (creating) `offline.sqlite` in `directory` and migrates it (`setup`: tests give a
    /// shorter busy timeout). Throws the mapped `OfflineVideoError` (`StoreOperation.open`).
    /// `poolCheck`: notes every statement that runs on the cooperative pool (tests; `BlockingWork`).
    init(directory: URL, setup: SQLiteSetup = OfflineStore.setup, device: DeviceIdentity? = nil,
         poolCheck: PoolCheck? = nil) throws(OfflineVideoError) {
        self.device = device
        self.poolCheck = poolCheck
        do {
            pool = try SQLiteDatabase.open(in: directory, setup, migrator: OfflineStore.migrator)
        } catch {
            throw OfflineVideoError.storeFailure(error, during: .open, "Cannot open the offline store in \(directory.path)")
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: downloads, tracks, segments, certificates, settings") { db in
            try db.create(table: "download") { t in
                t.primaryKey("token", .text)
                t.column("video_id", .text).notNull()
                t.column("account_id", .text).notNull()
                t.column("video_json", .blob).notNull()
                t.column("state", .integer).notNull()
                t.column("parameters", .blob).notNull()
                t.column("selections", .blob)
                t.column("display_name", .text).notNull()
                t.column("requested_at", .double).notNull()
                t.column("ended_at", .double)
                t.column("error", .blob)
                t.column("bitrate", .integer)
                t.column("master_url", .text)
                t.column("policy_key", .text)
                t.column("service_base_url", .text)
                t.column("allows_cellular", .boolean).notNull()
                t.column("license", .blob)
                t.column("license_terms", .blob)
                t.column("license_requested_at", .double)
                t.column("license_expires_at", .double)
                t.column("initial_playback_at", .double)
                t.column("poster_file", .text)
                t.column("thumbnail_file", .text)
                t.column("sequence", .integer).notNull()
            }
            try db.create(table: "track") { t in
                t.column("token", .text).notNull().references("download", onDelete: .cascade)
                t.column("position", .integer).notNull()
                t.column("kind", .text).notNull()
                t.column("language", .text)
                t.column("name", .text).notNull()
                t.column("playlist_url", .text).notNull()
                t.column("bandwidth", .integer)
                t.column("local_playlist", .text).notNull()
                t.primaryKey(["token", "position"])
            }
            try db.create(table: "segment") { t in
                t.column("token", .text).notNull().references("download", onDelete: .cascade)
                t.column("track", .integer).notNull()
                t.column("sequence", .integer).notNull()
                t.column("url", .text).notNull()
                t.column("file", .text).notNull()
                t.column("duration", .double).notNull()
                t.column("estimated_bytes", .integer).notNull()
                t.column("bytes", .integer)
                t.column("done", .boolean).notNull()
                t.primaryKey(["token", "track", "sequence"])
            }
            try db.create(table: "certificate") { t in
                t.primaryKey("identifier", .text)
                t.column("data", .blob).notNull()
            }
            try db.create(table: "setting") { t in
                t.primaryKey("name", .text)
                t.column("value", .blob).notNull()
            }
        }
        migrator.registerMigration("v2: license reports") { db in
            // First plays and releases waiting to reach the license server (sent when online).
            // A report carries all it needs: its download may be deleted before it is sent.
            try db.create(table: "license_report") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("kind", .text).notNull()
                t.column("token", .text)
                t.column("license_id", .text).notNull()
                t.column("content_key_id", .text).notNull()
                t.column("account_id", .text).notNull()
                t.column("video_id", .text).notNull()
                t.column("key_system", .blob).notNull()
                t.column("service_base_url", .text)
                t.column("policy_key", .text)
                t.column("created_at", .double).notNull()
                t.column("attempts", .integer).notNull().defaults(to: 0)
            }
        }
        migrator.registerMigration("v3: local playlists") { db in
            // The local playlists of a package, kept so a package folder that was removed (force-
            // stop) or damaged is written again when its download resumes.
            try db.create(table: "playlist") { t in
                t.column("token", .text).notNull().references("download", onDelete: .cascade)
                t.column("path", .text).notNull()
                t.column("text", .blob).notNull()
                t.primaryKey(["token", "path"])
            }
        }
        migrator.registerMigration("v4: analytics events") { db in
            // Download and playback events waiting to reach their collector (`origin` + /tracker),
            // oldest first by `seq`; `body` is the event's JSON as it is sent. `analytics_size`
            // holds the sum of `bytes`, kept by the triggers, for the storage limit.
            try db.create(table: "analytics_event") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("id", .text).notNull().unique()
                t.column("origin", .text).notNull()
                t.column("body", .blob).notNull()
                t.column("bytes", .integer).notNull()
                t.column("created_at", .double).notNull()
                t.column("attempts", .integer).notNull().defaults(to: 0)
            }
            try db.create(index: "analytics_event_origin", on: "analytics_event", columns: ["origin", "seq"])
            try db.execute(sql: """
                CREATE TABLE analytics_size (bytes INTEGER NOT NULL);
                INSERT INTO analytics_size (bytes) VALUES (0);
                CREATE TRIGGER analytics_event_added AFTER INSERT ON analytics_event
                    BEGIN UPDATE analytics_size SET bytes = bytes + NEW.bytes; END;
                CREATE TRIGGER analytics_event_removed AFTER DELETE ON analytics_event
                    BEGIN UPDATE analytics_size SET bytes = bytes - OLD.bytes; END;
                """)
        }
        migrator.registerMigration("v5: download tasks") { db in
            // The task-style façade's own fields: the app's content id (unique among records that
            // have one; records of the other façade have none and go by their video id) and its
            // metadata string.
            try db.alter(table: "download") { t in
                t.add(column: "content_id", .text)
                t.add(column: "task_metadata", .text)
            }
            try db.execute(sql: "CREATE UNIQUE INDEX download_content_id ON download(content_id) WHERE content_id IS NOT NULL")
        }
        migrator.registerMigration("v6: segment digests") { db in
            // The SHA-256 (hex) of a finished segment as its server's Repr-Digest gave it; NULL when
            // the server sent none (or the segment was found on disk after a crash, checked before it
            // was renamed into place but not yet recorded). `checkStorage(deep: true)` checks against it.
            try db.alter(table: "segment") { t in t.add(column: "digest", .text) }
        }
        migrator.registerMigration("v7: license stamps") { db in
            // The device's MAC over a record's license fields (`DownloadRecord.licenseSeal`). The
            // trusted-time mark and the device id move to per-device settings; a store of an older
            // SDK is adopted by its first owner (`adoptLegacyDeviceKey`).
            try db.alter(table: "download") { t in t.add(column: "license_seal", .text) }
        }
        return migrator
    }

    /// A read transaction: every read of the store goes through here (the pool check).
    private func read<T>(_ function: String = #function, _ body: (Database) throws -> T) throws -> T {
        poolCheck?.check(function)
        return try pool.read(body)
    }

    /// A write transaction: every write of the store goes through here (the pool check).
    private func write<T>(_ function: String = #function, _ body: (Database) throws -> T) throws -> T {
        poolCheck?.check(function)
        writesInFlight.add(1, ordering: .relaxed)
        defer { writesInFlight.subtract(1, ordering: .relaxed) }
        return try pool.write(body)
    }

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

    // MARK: License reports and trusted time

    /// Records the first play of `token` at `time` (seconds since 1970) and queues its report,
    /// in one transaction; false when a first play was already recorded.
    func recordFirstPlay(_ token: String, at time: Double, report: LicenseReport) throws -> Bool {
        try write { db in
            guard let before = try DownloadRecord.fetchOne(db, key: token), before.initialPlaybackAt == nil else { return false }
            var record = before
            record.initialPlaybackAt = time
            try save(record, before: before, db)
            var report = report
            try report.insert(db)
            return true
        }
    }

    func addReport(_ report: LicenseReport) throws {
        try write { db in
            var report = report
            try report.insert(db)
        }
    }

    /// Reports not yet sent, oldest first.
    func pendingReports() throws -> [LicenseReport] {
        try read { db in try LicenseReport.order(Column("id")).fetchAll(db) }
    }

    func removeReport(_ id: Int64) throws {
        _ = try write { db in try LicenseReport.deleteOne(db, key: id) }
    }

    func countReportAttempt(_ id: Int64) throws {
        try write { db in try db.execute(sql: "UPDATE license_report SET attempts = attempts + 1 WHERE id = ?", arguments: [id]) }
    }

    // MARK: Analytics

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

    /// Raises this device's trusted-time mark to `time` (seconds since 1970; never lowers it)
    /// and returns the mark as it was, in one transaction: every wall time the SDK observes
    /// goes through here before any decision is taken on it. The mark is stamped by the device:
    /// an edited mark, or none while a license this device stamped is stored (the mark is
    /// raised before a license is stored), throws 69304 `recordAltered`, unless `signed`: a
    /// license server's signed issue time replaces a mark that cannot be trusted.
    @discardableResult
    func observeTime(_ time: Double, signed: Bool = false) throws -> Double? {
        guard let device else { throw OfflineVideoError(.invalidLicense, .deviceSecret, "The offline store was opened without the device secret") }
        return try write { db in
            var previous: Double?
            if let stored = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [device.markSetting]) {
                previous = device.openMark(stored)
                if previous == nil && !signed {
                    throw OfflineVideoError(.invalidLicense, .recordAltered,
                                            "The trusted-time mark in the offline store was edited: licensed playback is refused until a license is renewed")
                }
            } else if !signed, try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM download WHERE license_seal LIKE ?)",
                                                   arguments: [device.binding + ".%"]) == true {
                throw OfflineVideoError(.invalidLicense, .recordAltered,
                                        "The trusted-time mark was removed from the offline store: licensed playback is refused until a license is renewed")
            }
            if time.isFinite, previous.map({ time > $0 }) ?? true {
                try db.execute(sql: "INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)",
                               arguments: [device.markSetting, device.stampMark(time)])
            }
            return previous
        }
    }

    /// A store an SDK before device binding wrote kept its license key in the store
    /// (`device_key`): its licenses are sealed again with this device's key (`reseal` gets the
    /// sealed license and the old key; nil leaves it, to read as altered), every record is
    /// stamped, the trusted-time mark and the device id become this device's, and the old key
    /// is deleted, in one transaction; nothing to do on a store without `device_key`. A store
    /// copied to another machine before its first owner ran this SDK is adopted there too: the
    /// one case binding cannot catch.
    func adoptLegacyDeviceKey(reseal: (Data, Data) -> Data?) throws {
        guard let device else { return }
        try write { db in
            guard let legacyKey = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'device_key'") else { return }
            for before in try DownloadRecord.fetchAll(db) {
                guard let sealed = before.license, let resealed = reseal(sealed, legacyKey) else { continue }
                var record = before
                record.license = resealed
                try save(record, before: before, freshLicense: true, db)  // a license that would not open stays unstamped
            }
            if let mark = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'trusted_time'")
                .flatMap({ Double(String(decoding: $0, as: UTF8.self)) }) {
                try db.execute(sql: "INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)", arguments: [device.markSetting, device.stampMark(mark)])
            }
            try db.execute(sql: "UPDATE OR IGNORE setting SET name = ? WHERE name = 'device_id'", arguments: [device.deviceIDSetting])
            try db.execute(sql: "DELETE FROM setting WHERE name IN ('device_key', 'trusted_time', 'device_id')")
        }
    }

    /// Writes a record (a new one when `before` is nil), stamping its license fields when this
    /// write changes them: the one place a stamp is made. A record whose stamp does not check
    /// (edited outside the SDK, or stored on another device) keeps it, whatever the write
    /// changes (a first play, a license the server sent back after a report: neither vouches
    /// for the rest), unless the write is a `freshLicense` (a renewal: a new license, its play
    /// window not started) or clears the license.
    private func save(_ record: DownloadRecord, before: DownloadRecord?, freshLicense: Bool = false, _ db: Database) throws {
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

    // MARK: Downloads

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

    // MARK: Plan

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
            let after = position ?? (sequence: -1, track: -1)
            return try SegmentRecord.fetchAll(db, sql: """
                SELECT * FROM segment WHERE token = ? AND done = 0 AND (sequence > ? OR (sequence = ? AND track > ?))
                ORDER BY sequence, track LIMIT ?
                """, arguments: [token, after.sequence, after.sequence, after.track, limit])
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

    // MARK: Certificates and settings

    func certificate(_ identifier: String) throws -> Data? {
        try read { db in try Data.fetchOne(db, sql: "SELECT data FROM certificate WHERE identifier = ?", arguments: [identifier]) }
    }

    func setCertificate(_ data: Data?, identifier: String) throws {
        try write { db in
            if let data {
                try db.execute(sql: "INSERT OR REPLACE INTO certificate (identifier, data) VALUES (?, ?)", arguments: [identifier, data])
            } else {
                try db.execute(sql: "DELETE FROM certificate WHERE identifier = ?", arguments: [identifier])
            }
        }
    }

    /// The setting `name`, made by `make` and stored on first use.
    func setting(_ name: String, orCreate make: @Sendable () -> Data) throws -> Data {
        poolCheck?.check()
        return try pool.setting(name, orCreate: make)
    }
}
