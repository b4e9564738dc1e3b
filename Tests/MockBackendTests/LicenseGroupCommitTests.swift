import Foundation
import GRDB
import LicenseProtocol
import MicroHTTP
import Postgres
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// Group commit (`LicenseBatchWriter`): requests that arrive together are decided in one
/// transaction (SQLite: every request; PostgreSQL: those decided on their nonce alone, in one
/// statement), and the rules hold inside a batch as across batches. Each test makes its batch
/// for certain: it holds what the writer needs (SQLite: the write connection; PostgreSQL: the
/// nonce table, locked from another connection), lets the writer take a first request (and
/// block on it), queues the batch behind it, and only then lets go. Each of these runs on a
/// thread of its own from the moment it is made (`ThreadWork`), not whenever a busy
/// cooperative pool gets to a task.
@Suite("License group commit")
struct LicenseGroupCommitTests {
    /// An app whose license writer is held until `release()`.
    final class HeldWriter: Sendable {
        let app: MockBackendApp
        let writer: LicenseBatchWriter
        let client: LicenseTestClient
        private let gate = DispatchSemaphore(value: 0)
        private let holding: ThreadWork<Void>
        private let first: ThreadWork<Int>

        /// Holds what the writer writes through, then sends a first license request the writer takes alone.
        init(_ app: MockBackendApp) async throws {
            self.app = app
            client = try LicenseTestClient(app)
            let (gate, client) = (gate, client)
            let entered = DispatchSemaphore(value: 0)
            let hold: @Sendable () throws -> Void
            if let store = app.store as? SQLiteBackendStore {
                writer = store.licenseWriter
                hold = { try store.pool.write { _ in entered.signal(); gate.wait() } }
            } else {
                let store = try #require(app.store as? PostgresBackendStore)
                writer = store.licenseWriter
                hold = {
                    try store.pool.transaction { connection in
                        try connection.execute("LOCK TABLE used_spc IN EXCLUSIVE MODE")
                        entered.signal()
                        gate.wait()
                    }
                }
            }
            holding = ThreadWork(hold)
            try await offPool { entered.wait() }
            let writer = writer
            let before = writer.batchesTaken
            first = ThreadWork { try client.send(device: "first").response.status }
            #expect(try await eventually { writer.batchesTaken == before + 1 && writer.waiting == 0 })
        }

        /// Sends `work` concurrently and waits until all of it is queued behind the held writer.
        func queue<T: Sendable>(_ work: [@Sendable () throws -> T]) async throws -> [ThreadWork<T>] {
            let writer = writer
            let waiting = writer.waiting
            let tasks = work.map { ThreadWork($0) }
            #expect(try await eventually { writer.waiting == waiting + work.count })
            return tasks
        }

        /// Lets the writer go: the first request's batch, then the queued one.
        func release() async throws {
            gate.signal()
            try await holding.value
            #expect(try await first.value == 200)
        }
    }

    static let offline = LicenseTestClient.offline(LicenseProfile(.purchase))

    @Test("one SPC sent eight times in one batch, beside other requests, is accepted once; the others are all issued",
          arguments: StoreKind.allCases)
    func nonceOnceInABatch(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let held = try await HeldWriter(app)
            let client = held.client
            let replayed = try client.makeRequest(device: "replayed").body()
            let others = try (0..<4).map { n in try client.makeRequest(device: "other-\(n)").body() }
            let tasks = try await held.queue((0..<8).map { _ in { @Sendable in try client.post(replayed, headers: Self.offline) } }
                                             + others.map { body in { @Sendable in try client.post(body, headers: Self.offline) } })
            let batches = held.writer.batchesTaken
            try await held.release()
            var responses: [HTTPResponse] = []
            for task in tasks { responses.append(try await task.value) }
            #expect(held.writer.batchesTaken == batches + 1, "the queued requests were one batch")
            let replays = responses.prefix(8)
            #expect(replays.filter { $0.status == 200 }.count == 1)
            for response in replays where response.status != 200 {
                try expectError(response, 403, "ACCESS_DENIED", "SPC_REPLAYED")
            }
            #expect(responses.suffix(4).map(\.status) == [200, 200, 200, 200])
            let stored = try app.licenses.licenses(LicenseFilter(), now: app.clock.now(), limit: 100)
            #expect(Set(stored.map(\.terms.deviceID)) == ["first", "replayed", "other-0", "other-1", "other-2", "other-3"])
            #expect(stored.count == 6)
        }
    }

    @Test("eight requests for one user's last device slot in one batch: one license, seven refusals, one device")
    func lastDeviceSlotOnceInABatch() async throws {
        try await withApp { app, _ in
            try app.registerPlaybackKey()
            let held = try await HeldWriter(app)
            let client = held.client
            let token = BackendStoreTests.token(app, user: "racer", limit: 1)
            let tasks = try await held.queue((0..<8).map { n in { @Sendable in try client.send(device: "device-\(n)", token: token).response } })
            try await held.release()
            var responses: [HTTPResponse] = []
            for task in tasks { responses.append(try await task.value) }
            #expect(responses.filter { $0.status == 200 }.count == 1)
            for response in responses where response.status != 200 {
                try expectError(response, 403, "ACCESS_DENIED", "DENIED_BY_DEVICE_LIMITING")
            }
            #expect(try app.licenses.devices(accountID: Fixture.northwind, userID: "racer").count == 1)
        }
    }

    @Test("a renewal and a release of one license in one batch are decided in order, with their history")
    func renewalThenReleaseInABatch() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let token = BackendStoreTests.token(app, user: "u", limit: 2)
            try app.registerPlaybackKey()
            let license = try client.license(device: "A", token: token)
            let id = license.terms.licenseID
            let held = try await HeldWriter(app)
            let renew = try client.makeRequest(.renew, licenseID: id, device: "A").body()
            let release = try client.makeRequest(.release, licenseID: id, device: "A").body()
            let afterRelease = try client.makeRequest(.renew, licenseID: id, device: "A").body()
            let headers = Self.offline + [("BCOV-Auth", token)]
            var tasks: [ThreadWork<HTTPResponse>] = []
            // One at a time into the queue, so the batch holds them in this order.
            for body in [renew, release, afterRelease] {
                tasks += try await held.queue([{ @Sendable in try client.post(body, headers: headers) }])
            }
            try await held.release()
            var responses: [HTTPResponse] = []
            for task in tasks { responses.append(try await task.value) }
            #expect(responses[0].status == 200)
            #expect(responses[1].status == 204)
            try expectError(responses[2], 410, "GONE", "LICENSE_RELEASED")
            #expect(try app.licenses.history(licenseID: id).map(\.event) == ["acquire", "renew", "release"])
            #expect(try app.licenses.devices(accountID: Fixture.northwind, userID: "u").isEmpty)
        }
    }

    @Test("a store failure in a batch fails every request of it with a 500 and writes none of it; the next batch is written",
          arguments: StoreKind.allCases)
    func storeFailureFailsTheWholeBatch(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            // A trigger that refuses the license of device "poison".
            let poison: @Sendable (_ on: Bool) throws -> Void
            if let store = app.store as? SQLiteBackendStore {
                poison = { on in
                    try store.pool.write { db in
                        try db.execute(sql: on ? """
                            CREATE TRIGGER poison BEFORE INSERT ON license WHEN NEW.device_id = 'poison'
                            BEGIN SELECT RAISE(ABORT, 'poisoned'); END
                            """ : "DROP TRIGGER poison")
                    }
                }
            } else {
                let store = try #require(app.store as? PostgresBackendStore)
                poison = { on in
                    try store.pool.withConnection { connection in
                        try connection.execute(on ? """
                            CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
                            BEGIN IF NEW.device_id = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF; RETURN NEW; END $$;
                            CREATE TRIGGER poison BEFORE INSERT ON license FOR EACH ROW EXECUTE FUNCTION poison();
                            """ : "DROP TRIGGER poison ON license; DROP FUNCTION poison()")
                    }
                }
            }
            try await offPool { try poison(true) }
            let held = try await HeldWriter(app)
            let client = held.client
            let bodies = try ["good-1", "poison", "good-2"].map { try client.makeRequest(device: $0).body() }
            let tasks = try await held.queue(bodies.map { body in { @Sendable in try client.post(body, headers: Self.offline) } })
            try await held.release()
            for task in tasks {
                let response = try await task.value
                #expect(response.status == 500, "\(response.debugText)")
                #expect(try response.apiErrors().first?.errorCode == PlaybackAPIErrorCode.serverError)
            }
            let stored = try app.licenses.licenses(LicenseFilter(), now: app.clock.now(), limit: 100)
            #expect(stored.map(\.terms.deviceID) == ["first"])
            // Nothing of the batch was kept, not even the nonces: the good SPCs are accepted when sent again.
            try await offPool { try poison(false) }
            #expect(try client.post(bodies[0], headers: Self.offline).status == 200)
            #expect(try client.post(bodies[2], headers: Self.offline).status == 200)
        }
    }
}
