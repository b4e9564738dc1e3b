import Foundation
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// The Ingest Profiles API: the standard profiles the mock ingests with, and the account's
/// default (kept in the catalog, shared by instances); on both stores.
@Suite("Ingest Profiles API")
struct IngestProfileTests {
    static func call(_ app: MockBackendApp, _ method: String, _ path: String, token: String?, _ body: Any? = nil) throws -> HTTPResponse {
        try CMSVideoTests.cms(app, method, path, token: token, body)
    }

    @Test("the standard profiles by list, name and id; the static ladder is the real one; unknown 404; no token 401 NOT_AUTHORIZED")
    func profiles() async throws {
        try await withApp { app, _ in
            let token = try OAuthTests.token(app)
            let list = try CMSVideoTests.array(Self.call(app, "GET", "/profiles", token: token))
            #expect(list.compactMap { $0["name"] as? String } == ["multi-platform-standard-static", "mock-fast-static"])
            let byName = try CMSVideoTests.object(Self.call(app, "GET", "/profiles/multi-platform-standard-static", token: token))
            #expect(byName["id"] as? String == "6198c17bbbdc42a4bb60a41f")
            #expect(byName["account_id"] as? Int == -1)
            #expect(byName["brightcove_standard"] as? Bool == true)
            let origin = try #require(byName["dynamic_origin"] as? [String: Any])
            #expect(origin["renditions"] as? [String] == ["default/audio64", "default/audio96", "default/audio128", "default/video450",
                                                          "default/video700", "default/video900", "default/video1200", "default/video1700",
                                                          "default/video2000"])
            #expect((origin["images"] as? [[String: Any]])?.compactMap { $0["label"] as? String } == ["poster", "thumbnail"])
            let byID = try CMSVideoTests.object(Self.call(app, "GET", "/profiles/6198c17bbbdc42a4bb60a41f", token: token))
            #expect(byID["name"] as? String == "multi-platform-standard-static")
            try CMSVideoTests.expectCMSError(try Self.call(app, "GET", "/profiles/nope", token: token), 404, "NOT_FOUND")
            let refused = try Self.call(app, "GET", "/profiles", token: nil)
            #expect(refused.status == 401)
            #expect(try refused.text() == #"[{"error_code":"NOT_AUTHORIZED","message":"Credentials are required to access this resource."}]"#)
            #expect(try app.request("GET", "/v1/accounts/\(Fixture.contoso)/profiles",
                                    headers: [("Authorization", "Bearer \(try OAuthTests.token(app, account: Fixture.contoso))")]).status == 200)
            #expect(try app.request("GET", "/v1/accounts/\(Fixture.contoso)/profiles", headers: [("Authorization", "Bearer \(token)")]).status == 401)
        }
    }

    @Test("the account's default is the static ladder until a configuration is set; POST once (then 409), PUT to change; another instance uses it", arguments: StoreKind.allCases)
    func configuration(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let token = try OAuthTests.token(app)
            let initial = try CMSVideoTests.object(Self.call(app, "GET", "/configuration", token: token))
            #expect(initial["default_profile_id"] as? String == "multi-platform-standard-static")
            #expect(initial["account_id"] as? Int == Int(Fixture.northwind))
            #expect((initial["id"] as? String)?.count == 24)
            let made = try Self.call(app, "POST", "/configuration", token: token, ["account_id": Int(Fixture.northwind)!, "default_profile_id": "mock-fast-static"])
            #expect(made.status == 200, "\(made.debugText)")
            #expect(try CMSVideoTests.object(made)["default_profile_id"] as? String == "mock-fast-static")
            try CMSVideoTests.expectCMSError(try Self.call(app, "POST", "/configuration", token: token, ["default_profile_id": "mock-fast-static"]),
                                             409, "CONFLICT")
            try CMSVideoTests.expectCMSError(try Self.call(app, "PUT", "/configuration", token: token, ["default_profile_id": "nope"]),
                                             422, "UNPROCESSABLE_ENTITY")
            #expect(app.defaultIngestProfile(of: Fixture.northwind).name == "mock-fast-static")
            #expect(app.defaultIngestProfile(of: Fixture.contoso).name == "multi-platform-standard-static")
            let other = try makeApp()
            #expect(try await eventually { other.defaultIngestProfile(of: Fixture.northwind).name == "mock-fast-static" })
            let changed = try Self.call(app, "PUT", "/configuration", token: token, ["default_profile_id": "6198c17bbbdc42a4bb60a41f"])
            #expect(try CMSVideoTests.object(changed)["default_profile_id"] as? String == "multi-platform-standard-static")
            // PostgreSQL: the running instance hears of it; SQLite (one process's store): an instance started now reads it.
            let witness = kind == .postgres ? other : try makeApp()
            #expect(try await eventually { witness.defaultIngestProfile(of: Fixture.northwind).name == "multi-platform-standard-static" })
        }
    }
}
