import Foundation
import GRDB

/// The store's schema, one named migration per change (GRDB runs those not yet applied, in order).
extension OfflineStore {
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
        migrator.registerMigration("v8: byte-range segments") { db in
            // A segment that is a byte range of its URL (`EXT-X-BYTERANGE`, an `EXT-X-MAP` with
            // `BYTERANGE`): where it starts in the remote file and how long it is. NULL for a
            // segment that is its whole URL. Init segments are rows with a sequence below 0.
            try db.alter(table: "segment") { t in
                t.add(column: "range_offset", .integer)
                t.add(column: "range_length", .integer)
            }
        }
        return migrator
    }
}
