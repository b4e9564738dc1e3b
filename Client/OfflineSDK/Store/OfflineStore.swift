import Foundation
import GRDB
import SQLiteSupport
import Synchronization

/// The SDK's SQLite database (GRDB, WAL): offline videos, their tracks and segments,
/// application certificates and device settings. Every state change goes through here
/// before it is announced, so a crash never leaves an announced state unrecorded.
///
/// By concern: opening, the transactions every call goes through, certificates and settings
/// here; `+Migrations` (the schema), `+Downloads` (records and states), `+Plan` (tracks,
/// segments, package files), `+Licenses` (first plays, reports, trusted time), `+Analytics`.
/// Every call is synchronous SQLite and may wait for another process's lock: never call it
/// from the cooperative pool (`BlockingWork`).
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

    /// A read transaction: every read of the store goes through here (the pool check).
    func read<T>(_ function: String = #function, _ body: (Database) throws -> T) throws -> T {
        PoolCheck.note(function, into: poolCheck)
        return try pool.read(body)
    }

    /// A write transaction: every write of the store goes through here (the pool check).
    func write<T>(_ function: String = #function, _ body: (Database) throws -> T) throws -> T {
        PoolCheck.note(function, into: poolCheck)
        writesInFlight.add(1, ordering: .relaxed)
        defer { writesInFlight.subtract(1, ordering: .relaxed) }
        return try pool.write(body)
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
        PoolCheck.note(into: poolCheck)
        return try pool.setting(name, orCreate: make)
    }
}
