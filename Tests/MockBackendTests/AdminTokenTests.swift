import Foundation
import MicroHTTP
import TestKit
import Testing
@testable import MockBackend

/// The admin token: too short is refused at start (the flag, the environment, the library), and
/// an empty credential is never compared with it.
@Suite("The admin token: a minimum length at start, empty credentials refused")
struct AdminTokenTests {
    /// `mock-backend` with `arguments` after `/usr/bin/env` sets `environment`; its output once it exits.
    static func refusedStart(_ environment: [String], _ arguments: [String]) async throws -> ProcessOutput {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let process = try RunningProcess("/usr/bin/env", environment + [BalancedCluster.executable, "--port", "0",
                                                                        "--data-dir", directory.url.path] + arguments)
        // Either it refuses and exits, or it starts listening (and would never exit by itself).
        let started = try await process.waitForOutput { $0.contains("listening on") }
        process.kill()
        let output = await process.wait()
        #expect(!started && output.exitCode != 0, "it started: \(output.stdoutText)")
        return output
    }

    @Test("an empty or short --admin-token is refused at start, saying the minimum", arguments: [
        ("", "--admin-token is empty: give one of at least 16 characters"),
        ("secret", "--admin-token has 6 characters: it must have at least 16"),
        ("0123456789abcde", "--admin-token has 15 characters: it must have at least 16"),
    ])
    func shortFlag(token: String, message: String) async throws {
        let output = try await Self.refusedStart([], ["--admin-token", token])
        #expect(output.stderrText.contains(message), "\(output.stderrText)")
    }

    @Test("MOCK_BACKEND_ADMIN_TOKEN set but empty, or short, is refused at start like the flag", arguments: [
        ("", "MOCK_BACKEND_ADMIN_TOKEN is empty: give one of at least 16 characters"),
        ("secret", "MOCK_BACKEND_ADMIN_TOKEN has 6 characters: it must have at least 16"),
    ])
    func shortEnvironment(token: String, message: String) async throws {
        let output = try await Self.refusedStart(["MOCK_BACKEND_ADMIN_TOKEN=\(token)"], [])
        #expect(output.stderrText.contains(message), "\(output.stderrText)")
    }

    @Test("the library refuses a short token too; 16 characters start; a token with spaces is refused")
    func library() async throws {
        try await withTemporaryDirectory { directory in
            for token in ["", "0123456789abcde", "0123456789 abcdef"] {
                #expect(throws: BackendConfigurationError.self, "token \(token)") {
                    try makeApp(dataDirectory: directory) { $0.adminToken = token }
                }
            }
            let app = try makeApp(dataDirectory: directory) { $0.adminToken = "0123456789abcdef" }
            #expect(try app.request("GET", "/_admin/v1/health", headers: [("X-Admin-Token", "0123456789abcdef")]).status == 200)
        }
    }

    @Test("an empty Authorization: Bearer or X-Admin-Token is no token (ADMIN_TOKEN_REQUIRED), and does not hide the other header")
    func emptyCredentials() async throws {
        try await withApp { app, _ in
            // (Each names an Authorization header: the helper adds the token to requests without one.)
            for headers in [[("Authorization", "Basic bm8="), ("X-Admin-Token", "")], [("Authorization", "Bearer ")], [("Authorization", "Bearer")],
                            [("Authorization", "Bearer   "), ("X-Admin-Token", " ")]] {
                try expectError(try app.request("POST", "/_admin/v1/clock", headers: headers, body: Array(#"{"offset_seconds": 60}"#.utf8)),
                                401, "UNAUTHORIZED", "ADMIN_TOKEN_REQUIRED")
            }
            #expect(app.clock.offset == 0)
            #expect(!app.isAdminToken(""))
            let other = try app.request("GET", "/_admin/v1/health", headers: [("Authorization", "Bearer "), ("X-Admin-Token", app.adminToken)])
            #expect(other.status == 200, "\(other.debugText)")
        }
    }
}
