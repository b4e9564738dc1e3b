import Foundation
import GRDB
import SQLiteSupport
import Testing
import TestKit
@testable import MockBackend

/// The backend's SQLite store copies its WAL into the database from a thread of its own
/// (`WALCheckpointer`), not in the writer's commits.
@Suite("SQLite WAL checkpoints")
struct WALCheckpointTests {
    @Test("commits far below the writer's own checkpoint are copied into the database file by the checkpointer")
    func checkpointerCopiesTheWAL() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let store = try SQLiteBackendStore(directory: folder.url)
        let commits = 2_000
        for index in 0..<commits {
            try await store.pool.write { db in
                try db.execute(sql: "INSERT INTO setting (name, value) VALUES (?, ?)", arguments: ["checkpoint-\(index)", Data(count: 200)])
            }
        }
        // The writer's own checkpoint waits for 64,000 frames: 2,000 small commits leave it to
        // the checkpointer. A round started after the last commit sees all of them.
        let written = store.checkpointer.roundsStarted
        #expect(try await eventually {
            guard let last = store.checkpointer.lastCheckpoint else { return false }
            return last.round > written && last.walFrames > 0 && last.checkpointed == last.walFrames
        }, "last checkpoint: \(String(describing: store.checkpointer.lastCheckpoint))")

        // The database file alone, without its WAL, holds every commit.
        let copy = try TemporaryDirectory()
        defer { copy.remove() }
        let alone = copy.url.appendingPathComponent("alone.sqlite").path
        try FileManager.default.copyItem(atPath: folder.url.appendingPathComponent("backend.sqlite").path, toPath: alone)
        let queue = try DatabaseQueue(path: alone)
        let count = try await queue.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM setting WHERE name LIKE 'checkpoint-%'")
        }
        #expect(count == commits)
    }
}
