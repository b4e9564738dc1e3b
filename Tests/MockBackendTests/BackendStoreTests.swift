import Foundation
import LicenseProtocol
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// Which store a test runs against.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// Runs `body` with `count` apps sharing one store of `kind`, each with a data directory of
/// its own (SQLite: one app per folder, so `count` apps are the same folder opened one after
/// the other; PostgreSQL: a fresh database of TestKit's server, as several instances).
func withSharedStore<T>(_ kind: StoreKind, _ body: (_ makeApp: () throws -> MockBackendApp) async throws -> T) async throws -> T {
    let folder = try TemporaryDirectory()
    defer { folder.remove() }
    let database: String? = kind == .postgres ? try await TestPostgres.shared().makeDatabase() : nil
    var made = 0
    return try await body {
        made += 1
        let number = made
        // SQLite: every app opens the same folder; PostgreSQL: every app its own folder (its own segment cache), one database.
        let directory = database == nil ? folder.url : folder.url.appendingPathComponent("instance-\(number)")
        return try makeApp(dataDirectory: directory) { $0.databaseURL = database; $0.threadCount = 4 }
    }
}

/// The store's contract, against SQLite and PostgreSQL alike (route level: through
/// `MockBackendApp.handle`, with real SPCs).
@Suite("Backend store: SQLite and PostgreSQL")
struct BackendStoreTests {
    static func token(_ app: MockBackendApp, user: String, limit: Int) -> String {
        let now = Int(app.clock.now().timeIntervalSince1970)
        return TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","uid":"\#(user)","dlimit":\#(limit),"exp":\#(now + 3600)}"#)
    }

    static func trackerBatch(_ ids: [String]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: ids.map { id in
            ["id": id, "event": "play_started", "video_id": Fixture.fairPlayVideo, "account_id": Fixture.northwind,
             "time": "2026-11-25T17:00:00.000Z", "position": 0] as [String: Any]
        }))
    }

    @Test("secrets, licenses, nonces, devices, revocations, catalog edits, analytics events and playback keys outlive the instance that made them", arguments: StoreKind.allCases)
    func stateOutlivesTheInstance(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let first = try makeApp()
            try first.registerPlaybackKey()
            let client = try LicenseTestClient(first)
            let license = try client.license(device: "A", token: Self.token(first, user: "u1", limit: 1))
            let replayed = try client.makeRequest(device: "A")
            let offline = LicenseTestClient.offline(LicenseProfile(.purchase))
            #expect(try client.post(replayed.body(), headers: offline).status == 200)
            let revoked = try client.license(device: "R")
            #expect(try first.request("POST", "/_admin/v1/licenses/\(revoked.terms.licenseID)/revoke").status == 200)
            let edit = try AdminCatalogTests.send(first, "PATCH", "\(AdminCatalogTests.videos)/\(Fixture.clearVideo)", ["name": "Edited once"])
            #expect(edit.status == 200, "\(edit.debugText)")
            #expect(try TrackerTests.receipt(TrackerTests.post(first, try JSONSerialization.jsonObject(with: Data(Self.trackerBatch(["e1", "e2"]))))).new == 2)

            // A second instance (a restart, or another process on the same database) sees all of it.
            let second = try makeApp()
            #expect(second.adminToken == first.adminToken)
            #expect(try second.video(Fixture.clearVideo).name == "Edited once")
            #expect(second.contentKeys[Fixture.fairPlayVideo] == first.contentKeys[Fixture.fairPlayVideo])
            let secondClient = try LicenseTestClient(second)
            #expect(secondClient.certificate.derEncoded == client.certificate.derEncoded)
            #expect(try second.licenses.license(id: license.terms.licenseID)?.terms.deviceID == "A")
            #expect(try second.licenses.history(licenseID: license.terms.licenseID).map(\.event) == ["acquire"])
            #expect(try second.licenses.license(id: revoked.terms.licenseID)?.revokedAt != nil)
            #expect(try second.licenses.devices(accountID: Fixture.northwind, userID: "u1") == ["A"])
            // The nonce used through the first is refused by the second; u1's one slot is taken.
            try expectError(try secondClient.post(replayed.body(), headers: offline), 403, "ACCESS_DENIED", "SPC_REPLAYED")
            try expectError(try secondClient.send(device: "B", token: Self.token(second, user: "u1", limit: 1)).response,
                            403, "ACCESS_DENIED", "DENIED_BY_DEVICE_LIMITING")
            // The playback key registered through the first verifies tokens on the second.
            _ = try secondClient.license(device: "A", token: Self.token(second, user: "u1", limit: 1))
            #expect(try TrackerTests.receipt(TrackerTests.post(second, try JSONSerialization.jsonObject(with: Data(Self.trackerBatch(["e2", "e3"]))))).new == 1)
            #expect(try second.tracker.trackerEventCount() == 3)
            let listed = try second.tracker.events(TrackerFilter(videoID: Fixture.fairPlayVideo), limit: 2)
            #expect(listed.total == 3)
            #expect(listed.events.map(\.event.id) == ["e3", "e2"])
            #expect(try second.licenses.licenses(LicenseFilter(state: "revoked"), now: second.clock.now(), limit: 10).map(\.terms.licenseID)
                    == [revoked.terms.licenseID])

            // A reset through the second forgets the state for every instance after it; secrets stay.
            #expect(try second.request("POST", "/_admin/v1/reset").status == 204)
            let third = try makeApp()
            #expect(try third.video(Fixture.clearVideo).name != "Edited once")
            #expect(try third.licenses.license(id: license.terms.licenseID) == nil)
            #expect(try third.tracker.trackerEventCount() == 0)
            #expect(third.adminToken == first.adminToken)
            #expect(third.contentKeys[Fixture.fairPlayVideo] == first.contentKeys[Fixture.fairPlayVideo])
        }
    }

    @Test("eight requests racing for one user's last device slot give one license and seven refusals", arguments: StoreKind.allCases)
    func lastDeviceSlotGoesOnce(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let first = try makeApp()
            try first.registerPlaybackKey()
            // PostgreSQL: two instances share the race; SQLite: one process, its threads.
            let apps = kind == .postgres ? [first, try makeApp()] : [first]
            let clients = try apps.map { try LicenseTestClient($0) }
            let token = Self.token(first, user: "racer", limit: 1)
            let statuses = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for n in 0..<8 {
                    let client = clients[n % clients.count]
                    group.addTask {
                        try await offPool {
                            let response = try client.send(device: "device-\(n)", token: token).response
                            return (response.status, response.status == 200 ? "" : try response.apiErrors().first?.errorSubcode ?? "")
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0.0 == 200 }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0.1 == "DENIED_BY_DEVICE_LIMITING" }.count == 7, "\(statuses)")
            #expect(try first.licenses.devices(accountID: Fixture.northwind, userID: "racer").count == 1)
        }
    }

    @Test("the same SPCs sent to two instances at once are each accepted once")
    func nonceAcceptedOnceAcrossInstances() async throws {
        try await withSharedStore(.postgres) { makeApp in
            let (a, b) = (try makeApp(), try makeApp())
            let (clientA, clientB) = (try LicenseTestClient(a), try LicenseTestClient(b))
            let offline = LicenseTestClient.offline(LicenseProfile(.purchase))
            let bodies = try (0..<10).map { n in try clientA.makeRequest(device: "d\(n)").body() }
            let statuses = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for (n, body) in bodies.enumerated() {
                    for client in [clientA, clientB] {
                        group.addTask { try await offPool { (n, try client.post(body, headers: offline).status) } }
                    }
                }
                return try await group.reduce(into: [Int: [Int]]()) { $0[$1.0, default: []].append($1.1) }
            }
            for (n, pair) in statuses { #expect(pair.sorted() == [200, 403], "SPC \(n): \(pair)") }
            // An anonymous acquisition is one statement (the nonce, and the writes only if it is
            // new): the refused replays wrote nothing.
            let stored = try a.licenses.licenses(LicenseFilter(), now: a.clock.now(), limit: 100)
            #expect(stored.count == 10, "\(stored.map(\.terms.licenseID))")
            for license in stored { #expect(try a.licenses.events(licenseID: license.terms.licenseID).map(\.event) == ["acquire"]) }
        }
    }

    @Test("instances starting together on an empty database migrate it once and agree on every secret")
    func concurrentStarts() async throws {
        let url = try await TestPostgres.shared().makeDatabase()
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let apps = try await withThrowingTaskGroup(of: MockBackendApp.self) { group in
            for n in 0..<4 {
                group.addTask {
                    try await offPool {
                        try makeApp(dataDirectory: folder.url.appendingPathComponent("i\(n)")) { $0.databaseURL = url }
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(apps.map(\.adminToken)).count == 1)
        #expect(Set(apps.map { $0.contentKeys[Fixture.fairPlayVideo]?.keyID }).count == 1)
        #expect(Set(try apps.map { try LicenseTestClient($0).certificate.derEncoded }).count == 1)
        let server = try await TestPostgres.shared()
        #expect(try await server.psql(url, "SELECT count(*) FROM schema_migration").trimmingCharacters(in: .whitespacesAndNewlines)
                == String(PostgresBackendStore.migrations.count))
    }

    @Test("a database that cannot be reached stops the start with a message naming it, without its password")
    func unreachableDatabase() async throws {
        let port = try freePort()
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        do {
            _ = try makeApp(dataDirectory: folder.url) { $0.databaseURL = "postgres://me:hunter2@127.0.0.1:\(port)/mock" }
            Issue.record("started without its database")
        } catch {
            let text = "\(error)"
            #expect(text.contains("127.0.0.1:\(port)"), "\(text)")
            #expect(text.contains("connectionFailed"), "\(text)")
            #expect(!text.contains("hunter2"), "\(text)")
        }
    }
}
