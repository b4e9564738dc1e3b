import Foundation
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// Instances sharing one PostgreSQL database hear of each other's changes (LISTEN/NOTIFY), and
/// an instance whose database goes away says so with 503s and comes back with it.
@Suite("Shared state across instances (PostgreSQL)")
struct SharedStateTests {
    @Test("a catalog edit, a clock move, fault rules and a playback key made through one instance reach the other")
    func changesReachTheOtherInstance() async throws {
        try await withSharedStore(.postgres) { makeApp in
            let (a, b) = (try makeApp(), try makeApp())
            var latencies: [Duration] = []
            func reaches(_ what: String, _ condition: () throws -> Bool) async throws {
                let start = ContinuousClock.now
                #expect(try await eventually(timeout: .seconds(120)) { try condition() }, "\(what) did not reach the other instance")
                latencies.append(ContinuousClock.now - start)
            }

            let edit = try AdminCatalogTests.send(a, "PATCH", "\(AdminCatalogTests.videos)/\(Fixture.clearVideo)", ["name": "Edited on A"])
            #expect(edit.status == 200, "\(edit.debugText)")
            try await reaches("the catalog edit") { try b.video(Fixture.clearVideo).name == "Edited on A" }

            #expect(try a.request("POST", "/_admin/v1/clock", body: Array(#"{"offset_seconds": 86400}"#.utf8)).status == 200)
            try await reaches("the clock") { b.clock.offset == 86400 }

            let rule = try a.request("POST", "/_admin/v1/faults", headers: [("Content-Type", "application/json")],
                                     body: Array(#"{"id":"shared","route":"segment","status":503}"#.utf8))
            #expect(rule.status == 201, "\(rule.debugText)")
            try await reaches("the fault rule") { b.faults.rules.map(\.rule.id) == ["shared"] }
            #expect(try b.request("DELETE", "/_admin/v1/faults/shared").status == 204)
            try await reaches("the fault rule's removal") { a.faults.rules.isEmpty }

            try a.registerPlaybackKey()
            try await reaches("the playback key") { !b.restrictions.list(accountID: Fixture.northwind).isEmpty }

            // A reset through B puts A's catalog back too.
            #expect(try b.request("POST", "/_admin/v1/reset").status == 204)
            try await reaches("the reset") { try a.video(Fixture.clearVideo).name != "Edited on A" }
            // The issue asks for "within a second"; the ceiling above is generous for a loaded machine,
            // and the figures are printed for the README.
            print("shared-state latencies (ms):", latencies.map { Int($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000) })
        }
    }

    @Test("while its database cannot be reached an instance answers 503 DATABASE_UNAVAILABLE with Retry-After, stays alive, and recovers")
    func databaseGoneAndBack() async throws {
        let server = try await TestPostgres.shared()
        try await withSharedStore(.postgres) { makeApp in
            let app = try makeApp()
            let other = try makeApp()
            #expect(try app.request("GET", "/readyz").status == 200)
            let url = try #require(app.configuration.databaseURL)
            let name = try #require(url.split(separator: "/").last.map(String.init))
            _ = try await server.psql(server.url, "ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
            _ = try await server.psql(server.url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()")

            #expect(try await eventually { try app.request("GET", "/readyz").status == 503 })
            let ready = try app.request("GET", "/readyz")
            try expectError(ready, 503, "SERVICE_UNAVAILABLE", "DATABASE_UNAVAILABLE")
            #expect(ready.headers["Retry-After"] == "1")
            #expect(try app.request("GET", "/healthz").status == 200)
            let client = try LicenseTestClient(app)
            let refused = try client.send(device: "during-outage").response
            try expectError(refused, 503, "SERVICE_UNAVAILABLE", "DATABASE_UNAVAILABLE")
            try expectError(try app.request("GET", "/_admin/v1/licenses"), 503, "SERVICE_UNAVAILABLE", "DATABASE_UNAVAILABLE")

            _ = try await server.psql(server.url, "ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
            #expect(try await eventually { try app.request("GET", "/readyz").status == 200 })
            _ = try client.license(device: "after-outage")
            // The instances hear each other again once their listeners reconnect.
            #expect(try app.request("POST", "/_admin/v1/clock", body: Array(#"{"offset_seconds": 60}"#.utf8)).status == 200)
            #expect(try await eventually { other.clock.offset == 60 })
        }
    }
}
