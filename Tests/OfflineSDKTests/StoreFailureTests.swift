import Foundation
import GRDB
@testable import OfflineSDK
import SQLiteSupport
import TestKit
import Testing

@Suite("Store failures: what happened, and the code of what was being done")
struct StoreFailureTests {
    @Test("SQLite and system errors map to the reason of what happened, keeping the error underneath")
    func reasons() {
        let cases: [(any Error, OfflineVideoError.Reason)] = [
            (DatabaseError(resultCode: .SQLITE_BUSY), .storageBusy),
            (DatabaseError(resultCode: .SQLITE_LOCKED), .storageBusy),
            (DatabaseError(resultCode: .SQLITE_FULL), .diskFull),
            (DatabaseError(resultCode: .SQLITE_READONLY), .storageReadOnly),
            (DatabaseError(resultCode: .SQLITE_CORRUPT), .storageCorrupt),
            (DatabaseError(resultCode: .SQLITE_NOTADB), .storageCorrupt),
            (DatabaseError(resultCode: .SQLITE_IOERR), .storage),
            (POSIXError(.ENOSPC), .diskFull),
            (POSIXError(.EDQUOT), .diskFull),
            (POSIXError(.EROFS), .storageReadOnly),
            (POSIXError(.EACCES), .storageReadOnly),
            (POSIXError(.ENOTDIR), .storage),
            (CocoaError(.fileWriteOutOfSpace, userInfo: [NSUnderlyingErrorKey: POSIXError(.ENOSPC)]), .diskFull),
            (LockFileError(path: "/x/store.lock", action: "open", systemError: EROFS), .storageReadOnly),
        ]
        for (error, reason) in cases {
            let mapped = OfflineVideoError.storeFailure(error, during: .query, "The offline store failed")
            #expect(mapped.reason == reason, "\(error)")
            #expect(mapped.code == .storageFailure)
            #expect(mapped.underlying.map { "\($0)" } == "\(error)")
        }
    }

    @Test("the code says what the SDK was doing: opening 69300, a download 69302, a query 69305, a license request 69403")
    func codes() {
        let busy = DatabaseError(resultCode: .SQLITE_BUSY)
        #expect(OfflineVideoError.storeFailure(busy, during: .open, "x").code.rawValue == 69300)
        #expect(OfflineVideoError.storeFailure(busy, during: .download, "x").code.rawValue == 69302)
        #expect(OfflineVideoError.storeFailure(busy, during: .query, "x").code.rawValue == 69305)
        #expect(OfflineVideoError.storeFailure(busy, during: .licenseRequest, "x").code.rawValue == 69403)
        // An SDK error passes through as it is.
        let refusal = OfflineVideoError(.invalidParameter, .invalidState, "no")
        #expect(OfflineVideoError.storeFailure(refusal, during: .download, "x") == refusal)
        // The message: the context, then the system's words; a lock file's own sentence.
        #expect(OfflineVideoError.storeFailure(POSIXError(.EROFS), during: .open, "Cannot open /x").message
                == "Cannot open /x: Read-only file system")
        #expect(OfflineVideoError.storeFailure(LockFileError(path: "/x/store.lock", action: "lock", systemError: EIO), during: .open, "Cannot open the store").message
                == "Cannot lock /x/store.lock: Input/output error")
    }

    @Test("a database file that is not a database: the manager's init throws storageCorrupt (69300) with SQLite's error")
    func corruptDatabase() async throws {
        let storage = try TemporaryDirectory()
        defer { storage.remove() }
        try Data(repeating: 0x5A, count: 8192).write(to: storage.url.appendingPathComponent("offline.sqlite"))
        do {
            _ = try await OfflineVideoManager(configuration: testConfiguration(storage))
            Issue.record("a manager opened a store that is not a database")
        } catch {
            #expect(error.code == .invalidParameter)
            #expect(error.reason == .storageCorrupt)
            #expect(error.message.hasPrefix("Cannot open the offline store in \(storage.url.path): "))
            #expect((error.underlying as? DatabaseError)?.resultCode == .SQLITE_NOTADB)
        }
    }

    @Test("a database another connection keeps locked past the busy timeout fails with storageBusy")
    func busyDatabase() async throws {
        let storage = try TemporaryDirectory()
        defer { storage.remove() }
        var setup = OfflineStore.setup
        setup.busyTimeout = 0.05
        let store = try await BlockingWork.run { [setup] in try OfflineStore(directory: storage.url, setup: setup) }
        let other = try DatabaseQueue(path: storage.url.appendingPathComponent("offline.sqlite").path)
        // GRDB's synchronous write, in a function of its own (in an async test the async one is
        // chosen, and it would run the expectations below outside the test's task).
        func whileLocked(_ body: (Database) throws -> Void) throws { try other.writeWithoutTransaction(body) }
        try whileLocked { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            do {
                _ = try store.setting("device_id") { Data("x".utf8) }
                Issue.record("a write went through while another connection held the write lock")
            } catch {
                let mapped = OfflineVideoError.storeFailure(error, during: .query, "The offline store failed")
                #expect(mapped.reason == .storageBusy)
                #expect(mapped.code == .storageFailure)
                #expect((mapped.underlying as? DatabaseError)?.resultCode == .SQLITE_BUSY)
            }
            try db.execute(sql: "ROLLBACK")
        }
        // Once the other connection lets go, the same call succeeds.
        #expect(try await store.offPool { try $0.setting("device_id") { Data("x".utf8) } } == Data("x".utf8))
    }

    @Test("SQLite refusing a write to a read-only database maps to storageReadOnly")
    func readOnlyDatabase() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent("plain.sqlite").path
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "CREATE TABLE setting (name TEXT PRIMARY KEY, value BLOB)") }
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        let reader = try DatabaseQueue(path: path, configuration: configuration)
        do {
            _ = try reader.setting("a") { Data([0]) }
            Issue.record("a read-only connection wrote")
        } catch {
            let mapped = OfflineVideoError.storeFailure(error, during: .download, "The offline store failed")
            #expect(mapped.reason == .storageReadOnly)
            #expect(mapped.code == .downloadFailure)
        }
    }

    @Test("a storage folder on a read-only file system: owner and reader alike get storageReadOnly (69300) naming the file")
    func readOnlyFileSystem() async throws {
        try await withTmpfs(size: "4m") { mountPoint in
            let folder = mountPoint.appendingPathComponent("offline")
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("packages"), withIntermediateDirectories: true)
            let remount = try await Run.process("/bin/mount", ["-o", "remount,ro", mountPoint.path])
            try #require(remount.exitCode == 0, "\(remount.stderrText)")

            var configuration = OfflineVideoManagerConfiguration(storageDirectory: folder)
            for role in [StorageRole.owner, .reader] {
                configuration.role = role
                do {
                    _ = try await OfflineVideoManager(configuration: configuration)
                    Issue.record("a manager opened a store on a read-only file system")
                } catch let error as OfflineVideoError {
                    let lockFile = role == .owner ? "owner.lock" : "store.lock"
                    #expect(error.code == .invalidParameter)
                    #expect(error.reason == .storageReadOnly)
                    #expect(error.message == "Cannot open \(folder.appendingPathComponent(lockFile).path): Read-only file system")
                    #expect(OfflineVideoError.systemError(of: try #require(error.underlying)) == EROFS)
                }
            }
        }
    }

    @Test("reasons are stable strings: known ones decode to the same reason, an unknown one is kept, not refused")
    func reasonStrings() throws {
        let decoded = try JSONDecoder().decode([OfflineVideoError.Reason].self, from: Data(#"["disk_full","storage_in_use","from_a_newer_sdk"]"#.utf8))
        #expect(decoded == [.diskFull, .storageInUse, OfflineVideoError.Reason(rawValue: "from_a_newer_sdk")])
        #expect(String(decoding: try JSONEncoder().encode(decoded), as: UTF8.self) == #"["disk_full","storage_in_use","from_a_newer_sdk"]"#)
        // A failed download stored with a reason this SDK does not know still reads back.
        let stored = try JSONDecoder().decode(StoredError.self, from: Data(#"{"code":69302,"reason":"from_a_newer_sdk","message":"m"}"#.utf8))
        #expect(stored.error.reason.rawValue == "from_a_newer_sdk")
        #expect(stored.error.code == .downloadFailure)
    }

    @Test("equality ignores the underlying error")
    func equality() {
        let a = OfflineVideoError(.storageFailure, .storageBusy, "m", underlying: DatabaseError(resultCode: .SQLITE_BUSY))
        let b = OfflineVideoError(.storageFailure, .storageBusy, "m")
        #expect(a == b)
        #expect(a != OfflineVideoError(.storageFailure, .storage, "m"))
    }
}
