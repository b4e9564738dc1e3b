import Dispatch
import Foundation
import Locking
import Logging
import Postgres
import WireModels
import Synchronization

/// The backend's store in PostgreSQL, for several `mock-backend` instances sharing one
/// database (`--database postgres://…`). Same tables and meaning as `SQLiteBackendStore`;
/// what SQLite gets from having one writer at a time, this gets from the database:
/// - secrets are made with `INSERT … ON CONFLICT DO NOTHING` then read back, so when two
///   instances make one at once both use the one stored first;
/// - a nonce is a primary key, so it is accepted once whichever instance sees it;
/// - a license decision takes a transaction-scoped advisory lock on its (account, user), so
///   two instances deciding for the same user run one after the other (see `process`);
/// - the schema is migrated under a session advisory lock, so instances starting together
///   migrate once.
/// Times are stored as float8 seconds since 1970, as in SQLite.
final class PostgresBackendStore: StoreMaintenance {
    let pool: PostgresPool
    private let url: String
    private let logger: Logger
    /// This instance's id in change notifications, so it does not reload what it changed itself.
    let instanceID = UUID().uuidString
    /// The thread that listens for other instances' changes, once started.
    private let watcher = Locked<ChangeWatcher?>(nil)
    /// License requests since the last nonce pruning (those not through `licenseWriter`).
    let sincePrune = Atomic<Int>(0)
    /// Group commit of the license requests decided on their nonce alone (see `process`).
    let licenseWriter: LicenseBatchWriter

    /// Connects (a pool of `connections`, the HTTP server's thread count) and migrates the schema.
    init(url: String, connections: Int, logger: Logger) throws {
        self.url = url
        self.logger = logger
        let pool = try PostgresPool(url: url, size: connections)
        self.pool = pool
        licenseWriter = LicenseBatchWriter(name: "license writer") { batch, prune in
            try PostgresBackendStore.commitLicenses(batch, pruneNonces: prune, in: pool)
        }
        try pool.checkConnection()
        try migrate()
    }

    var location: String { pool.redactedURL }

    func forgetState() throws {
        try pool.transaction { connection in
            for table in ["catalog_edit", "license_event", "license", "device", "used_spc", "tracker_event", "ingest_job"] {
                try connection.execute("DELETE FROM \(table)")
            }
        }
    }

    func checkReady() throws { try pool.checkConnection() }

    func close() {
        watcher.withLock { $0 }?.stop()
        pool.close()
    }

    // MARK: Schema

    /// Advisory-lock keys (class, object) of this schema; the class keeps them apart from any
    /// other application's single-key locks in the same database.
    static let lockClass: Int32 = 0x6D62  // "mb"
    static let migrationLock: Int32 = 0
    static let userLockClass: Int32 = 0x6D63

    /// Migrations, applied in order, each once; never edit one, add the next.
    static let migrations: [(version: Int, name: String, sql: String)] = [
        (1, "settings, keys, certificates, licenses, catalog edits, analytics events", """
            CREATE TABLE setting (name text PRIMARY KEY, value bytea NOT NULL);
            CREATE TABLE content_key (video_id text PRIMARY KEY, key_id text NOT NULL UNIQUE, key bytea NOT NULL, iv bytea NOT NULL,
                                      created_at float8 NOT NULL);
            CREATE TABLE application_certificate (account_id text PRIMARY KEY, certificate bytea NOT NULL, private_key bytea NOT NULL,
                                                  created_at float8 NOT NULL);
            CREATE TABLE license (id text PRIMARY KEY, account_id text NOT NULL, video_id text NOT NULL, key_id text NOT NULL,
                                  device_id text NOT NULL, user_id text, kind text NOT NULL, issued_at float8 NOT NULL, rental_end float8,
                                  play_duration float8, first_play float8, expires_at float8, persistable boolean NOT NULL,
                                  request_nonce bytea NOT NULL, released_at float8, updated_at float8 NOT NULL, revoked_at float8);
            CREATE INDEX license_by_user_device ON license (account_id, user_id, device_id) WHERE user_id IS NOT NULL;
            CREATE INDEX license_by_issue ON license (issued_at DESC, id DESC);
            CREATE TABLE license_event (id bigserial PRIMARY KEY, license_id text NOT NULL, event text NOT NULL, at float8 NOT NULL,
                                        kind text, expires_at float8, first_play float8);
            CREATE INDEX license_event_by_license ON license_event (license_id);
            CREATE TABLE device (account_id text NOT NULL, user_id text NOT NULL, device_id text NOT NULL, registered_at float8 NOT NULL,
                                 PRIMARY KEY (account_id, user_id, device_id));
            CREATE TABLE used_nonce (nonce bytea PRIMARY KEY, expires_at float8 NOT NULL);
            CREATE INDEX used_nonce_by_expiry ON used_nonce (expires_at);
            CREATE TABLE playback_key (account_id text NOT NULL, key_id text NOT NULL, public_key text NOT NULL, created_at float8 NOT NULL,
                                       PRIMARY KEY (account_id, key_id));
            CREATE TABLE catalog_edit (seq bigserial NOT NULL, kind text NOT NULL, id text NOT NULL, body bytea, PRIMARY KEY (kind, id));
            CREATE TABLE tracker_event (seq bigserial PRIMARY KEY, id text NOT NULL UNIQUE, event text NOT NULL, video_id text NOT NULL,
                                        account_id text NOT NULL, time float8 NOT NULL, position float8, device_id text, token text,
                                        session text, details bytea, received_at float8 NOT NULL);
            CREATE INDEX tracker_event_by_video ON tracker_event (video_id);
            """),
        (2, "state shared by instances (clock offset, fault rules)", """
            CREATE TABLE shared_state (topic text PRIMARY KEY, value bytea NOT NULL, updated_at float8 NOT NULL);
            """),
        (3, "ended dashboard sessions", """
            CREATE TABLE ended_dashboard_session (nonce text PRIMARY KEY, expires_at float8 NOT NULL);
            """),
        (4, "license terms as one value", """
            ALTER TABLE license ADD COLUMN terms text;
            UPDATE license SET terms = json_build_object(
                'account_id', account_id, 'content_key_id', key_id, 'device_id', device_id,
                'expires_at', round(expires_at * 1000)::bigint, 'first_play', round(first_play * 1000)::bigint,
                'issued_at', round(issued_at * 1000)::bigint, 'kind', kind, 'license_id', id, 'persistable', persistable,
                'play_duration', round(play_duration * 1000)::bigint, 'rental_end', round(rental_end * 1000)::bigint,
                'request_nonce', replace(encode(request_nonce, 'base64'), E'\\n', ''), 'version', 1, 'video_id', video_id)::text;
            ALTER TABLE license ALTER COLUMN terms SET NOT NULL,
                DROP COLUMN key_id, DROP COLUMN kind, DROP COLUMN rental_end, DROP COLUMN play_duration, DROP COLUMN first_play,
                DROP COLUMN expires_at, DROP COLUMN request_nonce;
            """),
        oauthClientMigration,
        ingestJobMigration,
        // SQLite's "v9": `SQLiteBackendStore.keyUsedSPCsByTime`. The key is
        // `LicenseTransaction.replayKey`: the expiry's milliseconds (floored, as there), 8 bytes
        // big-endian (`int8send`), then the nonce.
        (7, "used SPCs keyed by time", """
            CREATE TABLE used_spc (key bytea PRIMARY KEY, expires_at float8 NOT NULL);
            CREATE INDEX used_spc_by_expiry ON used_spc (expires_at);
            INSERT INTO used_spc (key, expires_at)
                SELECT int8send(floor(expires_at * 1000)::bigint) || nonce, expires_at FROM used_nonce ON CONFLICT DO NOTHING;
            DROP TABLE used_nonce;
            """),
    ]

    /// Applies the missing migrations, each in its own transaction, holding a session
    /// advisory lock the whole time: a second instance starting at the same moment waits,
    /// then finds them applied.
    private func migrate() throws {
        try pool.withConnection { connection in
            try connection.query("SELECT pg_advisory_lock($1::int, $2::int)", [.int(Int64(Self.lockClass)), .int(Int64(Self.migrationLock))])
            defer { _ = try? connection.query("SELECT pg_advisory_unlock($1::int, $2::int)", [.int(Int64(Self.lockClass)), .int(Int64(Self.migrationLock))]) }
            try connection.execute("CREATE TABLE IF NOT EXISTS schema_migration (version int PRIMARY KEY, name text NOT NULL, applied_at float8 NOT NULL)")
            let applied = Set(try connection.query("SELECT version FROM schema_migration").rows.map { try $0["version"] as Int })
            if let newest = applied.max(), newest > Self.migrations.map(\.version).max() ?? 0 {
                throw PostgresError(.queryFailed, "the database has schema version \(newest), newer than this mock-backend knows; upgrade it")
            }
            for migration in Self.migrations where !applied.contains(migration.version) {
                try connection.transaction { connection in
                    try connection.execute(migration.sql)
                    try connection.query("INSERT INTO schema_migration (version, name, applied_at) VALUES ($1, $2, $3)",
                                         [.int(Int64(migration.version)), .text(migration.name), .double(Date().timeIntervalSince1970)])
                }
            }
        }
    }
}

// MARK: Secrets

extension PostgresBackendStore: SecretStorage {
    func setting(_ name: String, orCreate make: () -> [UInt8]) throws -> [UInt8] {
        try pool.withConnection { connection in
            if let row = try connection.query("SELECT value FROM setting WHERE name = $1", [.text(name)]).rows.first { return try row["value"] }
            try connection.query("INSERT INTO setting (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", [.text(name), .bytes(make())])
            return try connection.query("SELECT value FROM setting WHERE name = $1", [.text(name)]).rows[0]["value"]
        }
    }

    func contentKey(videoID: String, now: Date) throws -> ContentKey {
        try pool.withConnection { connection in
            let select = "SELECT key_id, key, iv FROM content_key WHERE video_id = $1"
            if let row = try connection.query(select, [.text(videoID)]).rows.first { return try Self.contentKey(row) }
            let key = ContentKey.random()
            try connection.query("""
                INSERT INTO content_key (video_id, key_id, key, iv, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (video_id) DO NOTHING
                """, [.text(videoID), .text(key.keyID), .bytes(key.key), .bytes(key.iv), .double(now.timeIntervalSince1970)])
            return try Self.contentKey(connection.query(select, [.text(videoID)]).rows[0])
        }
    }

    private static func contentKey(_ row: PostgresRow) throws -> ContentKey {
        ContentKey(keyID: try row["key_id"], key: try row["key"], iv: try row["iv"])
    }

    func applicationIdentity(accountID: String, now: Date, orCreate make: () throws -> StoredIdentity) throws -> StoredIdentity {
        try pool.withConnection { connection in
            let select = "SELECT certificate, private_key FROM application_certificate WHERE account_id = $1"
            if let row = try connection.query(select, [.text(accountID)]).rows.first {
                return StoredIdentity(certificate: try row["certificate"], privateKey: try row["private_key"])
            }
            let identity = try make()
            try connection.query("""
                INSERT INTO application_certificate (account_id, certificate, private_key, created_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (account_id) DO NOTHING
                """, [.text(accountID), .bytes(identity.certificate), .bytes(identity.privateKey), .double(now.timeIntervalSince1970)])
            let row = try connection.query(select, [.text(accountID)]).rows[0]
            return StoredIdentity(certificate: try row["certificate"], privateKey: try row["private_key"])
        }
    }
}

// MARK: Catalog edits

extension PostgresBackendStore: CatalogEditStorage {
    func catalogEdits() throws -> [LiveCatalog.Edit] {
        try pool.withConnection { connection in
            try connection.query("SELECT kind, id, body FROM catalog_edit ORDER BY seq").rows.compactMap { row in
                try LiveCatalog.Edit(kind: row["kind"], id: row["id"], body: (row["body"] as [UInt8]?).map { Data($0) })
            }
        }
    }

    func storeCatalogEdit(_ edit: LiveCatalog.Edit) throws {
        let (kind, id, body) = try edit.stored
        // An upsert keeps the row's seq: edits are laid over the file in the order things were first edited.
        _ = try pool.withConnection { connection in
            try connection.query("""
                INSERT INTO catalog_edit (kind, id, body) VALUES ($1, $2, $3) ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body
                """, [.text(kind), .text(id), PostgresValue(body.map { [UInt8]($0) })])
        }
    }
}

// MARK: Playback keys

extension PostgresBackendStore: PlaybackKeyStorage {
    func playbackKeys() throws -> [StoredPlaybackKey] {
        try pool.withConnection { connection in
            try connection.query("SELECT account_id, key_id, public_key, created_at FROM playback_key").rows.map { row in
                StoredPlaybackKey(accountID: try row["account_id"], id: try row["key_id"], publicKeyPEM: try row["public_key"],
                                  createdAt: Date(timeIntervalSince1970: try row["created_at"]))
            }
        }
    }

    func insertPlaybackKey(_ key: StoredPlaybackKey) throws -> Bool {
        try pool.withConnection { connection in
            try connection.query("""
                INSERT INTO playback_key (account_id, key_id, public_key, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING
                """, [.text(key.accountID), .text(key.id), .text(key.publicKeyPEM), .double(key.createdAt.timeIntervalSince1970)]).affectedRows == 1
        }
    }

    func deletePlaybackKey(accountID: String, id: String) throws -> Bool {
        try pool.withConnection { connection in
            try connection.query("DELETE FROM playback_key WHERE account_id = $1 AND key_id = $2", [.text(accountID), .text(id)]).affectedRows == 1
        }
    }
}

// MARK: Dashboard sessions

extension PostgresBackendStore: DashboardSessionStorage {
    func endDashboardSession(nonce: String, expiresAt: Date, now: Date) throws {
        try pool.transaction { connection in
            try connection.query("INSERT INTO ended_dashboard_session (nonce, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                                 [.text(nonce), .double(expiresAt.timeIntervalSince1970)])
            try connection.query("DELETE FROM ended_dashboard_session WHERE expires_at < $1", [.double(now.timeIntervalSince1970)])
        }
    }

    func isDashboardSessionEnded(nonce: String) throws -> Bool {
        try pool.withConnection { connection in
            !(try connection.query("SELECT 1 FROM ended_dashboard_session WHERE nonce = $1", [.text(nonce)]).rows.isEmpty)
        }
    }
}

// MARK: Analytics events

extension PostgresBackendStore: TrackerStorage {
    func record(_ events: [TrackerEvent], receivedAt: Date) throws -> Int {
        try pool.transaction { connection in
            var new = 0
            for event in events {
                new += try connection.query("""
                    INSERT INTO tracker_event (id, event, video_id, account_id, time, position, device_id, token, session, details, received_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING
                    """, [.text(event.id), .text(event.event), .text(event.videoID), .text(event.accountID), .double(event.time.timeIntervalSince1970),
                          PostgresValue(event.position), PostgresValue(event.deviceID), PostgresValue(event.token), PostgresValue(event.session),
                          PostgresValue(try event.storedDetails.map { [UInt8]($0) }), .double(receivedAt.timeIntervalSince1970)]).affectedRows
            }
            return new
        }
    }

    func events(_ filter: TrackerFilter, limit: Int) throws -> (events: [RecordedTrackerEvent], total: Int) {
        let conditions = filter.conditions
        let clause = Self.whereClause(conditions.map(\.column))
        let arguments = conditions.map { PostgresValue.text($0.value) }
        return try pool.transaction(.repeatableRead) { connection in
            let total: Int = try connection.query("SELECT count(*) AS n FROM tracker_event \(clause)", arguments).rows[0]["n"]
            let rows = try connection.query("SELECT * FROM tracker_event \(clause) ORDER BY seq DESC LIMIT $\(arguments.count + 1)",
                                            arguments + [.int(Int64(limit))]).rows
            let events = try rows.map { row in
                RecordedTrackerEvent(event: TrackerEvent(id: try row["id"], event: try row["event"], videoID: try row["video_id"],
                                                         accountID: try row["account_id"], time: Date(timeIntervalSince1970: try row["time"]),
                                                         position: try row["position"], deviceID: try row["device_id"], token: try row["token"],
                                                         session: try row["session"],
                                                         details: try TrackerEvent.details(stored: (row["details"] as [UInt8]?).map { Data($0) })),
                                     receivedAt: Date(timeIntervalSince1970: try row["received_at"]))
            }
            return (events, total)
        }
    }

    func trackerEventCount() throws -> Int {
        try pool.withConnection { try $0.query("SELECT count(*) AS n FROM tracker_event").rows[0]["n"] }
    }

    func clearTrackerEvents() throws {
        try pool.withConnection { try $0.execute("DELETE FROM tracker_event") }
    }

    /// `WHERE a = $1 AND b = $2 …` for `columns` (names from the code, values always bound), or "".
    static func whereClause(_ columns: [String]) -> String {
        columns.isEmpty ? "" : "WHERE " + columns.enumerated().map { "\($1) = $\($0 + 1)" }.joined(separator: " AND ")
    }
}

// MARK: Shared state

/// Changes travel by LISTEN/NOTIFY on one channel: the payload is "topic instance-id", and the
/// notification is sent in the transaction that stores the value, so it arrives only once the
/// value can be read. Why not a polled version counter: a notification arrives in
/// milliseconds and costs nothing while nothing changes; what it cannot do (reach an instance
/// whose listening connection was down) is covered by reloading every topic on reconnecting.
extension PostgresBackendStore: SharedStateStorage {
    static let channel = "mock_backend_changes"

    func sharedValue(_ topic: SharedTopic) throws -> [UInt8]? {
        try pool.withConnection { connection in
            try connection.query("SELECT value FROM shared_state WHERE topic = $1", [.text(topic.rawValue)]).rows.first?["value"]
        }
    }

    func publish(_ topic: SharedTopic, value: [UInt8]?) throws {
        try pool.transaction { connection in
            if let value {
                try connection.query("""
                    INSERT INTO shared_state (topic, value, updated_at) VALUES ($1, $2, $3)
                    ON CONFLICT (topic) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                    """, [.text(topic.rawValue), .bytes(value), .double(Date().timeIntervalSince1970)])
            }
            try connection.query("SELECT pg_notify($1, $2)", [.text(Self.channel), .text(topic.rawValue + " " + instanceID)])
        }
    }

    func watchChanges(_ onChange: @escaping @Sendable (SharedTopic) -> Void) {
        let started = ChangeWatcher(url: url, instanceID: instanceID, logger: logger, onChange: onChange)
        let previous = watcher.withLock { state in defer { state = started }; return state }
        previous?.stop()
        started.start()
    }
}

/// A thread with a connection of its own that LISTENs for other instances' changes. Each time
/// it starts listening (the first time too) it reports every topic, since changes sent before
/// (between the instance's loading its state and this LISTEN, or while the connection was
/// broken) never reach it. When the connection breaks it connects again every second.
final class ChangeWatcher: Sendable {
    private let url: String
    private let instanceID: String
    private let logger: Logger
    private let onChange: @Sendable (SharedTopic) -> Void
    private let stopped = Locked(false)
    /// Signalled once the first LISTEN is in place (or failed).
    private let firstAttempt = DispatchSemaphore(value: 0)

    init(url: String, instanceID: String, logger: Logger, onChange: @escaping @Sendable (SharedTopic) -> Void) {
        self.url = url
        self.instanceID = instanceID
        self.logger = logger
        self.onChange = onChange
    }

    /// Starts the thread and returns once it listens and has reported every topic (or failed
    /// to connect, then it keeps trying), so a change made after the instance started is never missed.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "mock-backend-changes"
        thread.start()
        _ = firstAttempt.wait(timeout: .now() + 15)
    }

    /// Ends the thread within its wait (half a second).
    func stop() { stopped.withLock { $0 = true } }

    private var isStopped: Bool { stopped.withLock { $0 } }

    private func run() {
        var attempts = 0
        while !isStopped {
            attempts += 1
            do {
                let connection: PostgresConnection
                do {
                    connection = try PostgresConnection(url: url)
                    try connection.execute("LISTEN \(PostgresBackendStore.channel)")
                } catch {
                    if attempts == 1 { firstAttempt.signal() }
                    throw error
                }
                if attempts > 1 { logger.notice("listening for other instances' changes again; reloading everything") }
                for topic in SharedTopic.allCases { onChange(topic) }
                // The first time, `start` returns only now: the instance serves nothing while this
                // reload runs, so it can never put back what a first request just changed.
                if attempts == 1 { firstAttempt.signal() }
                while !isStopped {
                    for notification in try connection.notifications(waitingUpTo: .milliseconds(500)) {
                        let parts = notification.payload.split(separator: " ", maxSplits: 1).map(String.init)
                        guard parts.count == 2, parts[1] != instanceID, let topic = SharedTopic(rawValue: parts[0]) else { continue }
                        onChange(topic)
                    }
                }
            } catch {
                guard !isStopped else { return }
                logger.warning("not hearing other instances' changes: \(error); trying again in a second")
                // Waits on the stop flag's clock, not a sleep in a test: this is the server's retry pace.
                for _ in 0..<10 where !isStopped { usleep(100_000) }
            }
        }
    }
}
