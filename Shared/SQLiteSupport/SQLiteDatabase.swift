package import Foundation
package import GRDB

/// How one of the project's SQLite databases is opened: the offline store's and the mock
/// backend's differ only in these.
package struct SQLiteSetup: Sendable {
    /// The database file's name inside its folder.
    package var fileName: String
    /// Statements every new connection runs first (pragmas).
    package var pragmas: [String]
    /// How long a statement waits for a lock another connection or process holds before it
    /// fails with SQLITE_BUSY; nil fails at once (GRDB's default).
    package var busyTimeout: TimeInterval?
    /// A lock file in the folder held while the database is opened and migrated, so that two
    /// processes opening a fresh folder at once do not both create the tables (GRDB's migrator
    /// reads which migrations are applied before it takes SQLite's write lock); nil for none.
    package var migrationLockFile: String?

    /// GRDB's configuration of a connection: the busy timeout, the pragmas first.
    var configuration: Configuration {
        var configuration = Configuration()
        if let timeout = busyTimeout { configuration.busyMode = .timeout(timeout) }
        let pragmas = pragmas
        configuration.prepareDatabase { db in
            for pragma in pragmas { try db.execute(sql: pragma) }
        }
        return configuration
    }

    /// A setup.
    package init(fileName: String, pragmas: [String], busyTimeout: TimeInterval? = nil, migrationLockFile: String? = nil) {
        self.fileName = fileName
        self.pragmas = pragmas
        self.busyTimeout = busyTimeout
        self.migrationLockFile = migrationLockFile
    }
}

/// Opening the project's SQLite databases (GRDB, WAL).
package enum SQLiteDatabase {
    /// Opens (creating) `setup.fileName` in `directory` (created too) and applies `migrator`.
    /// Throws `LockFileError` when the migration lock cannot be taken, else GRDB's and the
    /// file system's errors.
    package static func open(in directory: URL, _ setup: SQLiteSetup, migrator: DatabaseMigrator) throws -> DatabasePool {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let lock = try setup.migrationLockFile.map { try LockFile.waiting(at: directory.appendingPathComponent($0).path) }
        defer { withExtendedLifetime(lock) {} }
        let pool = try DatabasePool(path: directory.appendingPathComponent(setup.fileName).path, configuration: setup.configuration)
        try migrator.migrate(pool)
        return pool
    }
}

extension DatabaseWriter {
    /// The value of setting `name` in the `setting` table (`name` TEXT primary key, `value`
    /// BLOB), made by `make` and stored on first use, in one transaction.
    package func setting(_ name: String, orCreate make: () -> Data) throws -> Data {
        try write { db in
            if let value = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [name]) { return value }
            let value = make()
            try db.execute(sql: "INSERT INTO setting (name, value) VALUES (?, ?)", arguments: [name, value])
            return value
        }
    }
}
