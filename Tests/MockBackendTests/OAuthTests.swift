import Foundation
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// Client credentials through the admin API, access tokens from `POST /v4/access_token`, and
/// the bearer check the back-office APIs make, on both stores.
@Suite("OAuth v4: client credentials and access tokens")
struct OAuthTests {
    /// A client credential of `account`, made through the admin API.
    static func makeClient(_ app: MockBackendApp, account: String = Fixture.northwind) throws -> (id: String, secret: String) {
        let response = try app.request("POST", "/_admin/v1/accounts/\(account)/client_credentials", body: Array(#"{"name":"tests"}"#.utf8))
        try #require(response.status == 201, "\(response.debugText)")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [String: Any])
        return (try #require(body["client_id"] as? String), try #require(body["client_secret"] as? String))
    }

    /// `POST /v4/access_token` with Basic credentials and the grant in a form body.
    static func tokenResponse(_ app: MockBackendApp, id: String, secret: String) throws -> HTTPResponse {
        try app.request("POST", "/v4/access_token",
                        headers: [("Authorization", "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()),
                                  ("Content-Type", "application/x-www-form-urlencoded")],
                        body: Array("grant_type=client_credentials".utf8))
    }

    /// An access token for a new client of `account`.
    static func token(_ app: MockBackendApp, account: String = Fixture.northwind) throws -> String {
        let (id, secret) = try makeClient(app, account: account)
        let response = try tokenResponse(app, id: id, secret: secret)
        try #require(response.status == 200, "\(response.debugText)")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [String: Any])
        return try #require(body["access_token"] as? String)
    }

    static func oauthError(_ response: HTTPResponse) throws -> String? {
        (try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [String: Any])?["error"] as? String
    }

    @Test("a client made through the admin API gets a 300 s Bearer token, with Basic or form credentials and grant_type in the body or the query", arguments: StoreKind.allCases)
    func tokenForClientCredentials(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let (id, secret) = try Self.makeClient(app)
            let listed = try app.request("GET", "/_admin/v1/accounts/\(Fixture.northwind)/client_credentials")
            #expect(listed.status == 200)
            #expect(try listed.text().contains(#""client_secret":null"#), "the secret is shown only once")
            #expect(try !listed.text().contains(secret))

            let basic = try Self.tokenResponse(app, id: id, secret: secret)
            #expect(basic.status == 200, "\(basic.debugText)")
            #expect(basic.headers["Cache-Control"] == "no-store")
            #expect(basic.headers["Pragma"] == "no-cache")
            #expect(basic.headers["Content-Type"] == "application/json;charset=UTF-8")
            let body = try #require(try JSONSerialization.jsonObject(with: Data(basic.bytes())) as? [String: Any])
            #expect(body["token_type"] as? String == "Bearer")
            #expect(body["expires_in"] as? Int == 300)
            let token = try #require(body["access_token"] as? String)
            #expect(token.first == "A")
            #expect(token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })

            // The Ruby sample's form fields, with the grant in the query, and a JSON body.
            let form = try app.request("POST", "/v4/access_token?grant_type=client_credentials",
                                       headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                       body: Array("client_id=\(id)&client_secret=\(secret)".utf8))
            #expect(form.status == 200, "\(form.debugText)")
            // BrightcovePY: the grant in the query, no body, no Content-Type.
            let bare = try app.request("POST", "/v4/access_token?grant_type=client_credentials",
                                       headers: [("Authorization", "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString())])
            #expect(bare.status == 200, "\(bare.debugText)")

            // A second instance on the same store (PostgreSQL: another process's view) accepts the token.
            let other = try makeApp()
            #expect(throws: Never.self) { try other.backOfficeAccount(Self.bearer(token), accountID: Fixture.northwind, api: .cms) }
        }
    }

    @Test("a wrong secret, an unknown or deleted client and missing credentials are 400 invalid_client; a missing or other grant is unsupported_grant_type", arguments: StoreKind.allCases)
    func refusals(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let (id, secret) = try Self.makeClient(app)
            let wrong = try Self.tokenResponse(app, id: id, secret: secret + "x")
            #expect(wrong.status == 400)
            #expect(try Self.oauthError(wrong) == "invalid_client")
            #expect(try Self.oauthError(Self.tokenResponse(app, id: "nobody", secret: secret)) == "invalid_client")
            let none = try app.request("POST", "/v4/access_token", body: Array("grant_type=client_credentials".utf8))
            #expect(none.status == 400)
            #expect(try Self.oauthError(none) == "invalid_client")
            let noGrant = try app.request("POST", "/v4/access_token", body: Array("client_id=\(id)&client_secret=\(secret)".utf8))
            #expect(noGrant.status == 400)
            #expect(try Self.oauthError(noGrant) == "unsupported_grant_type")
            #expect(try Self.oauthError(app.request("POST", "/v4/access_token?grant_type=password",
                                                    body: Array("client_id=\(id)&client_secret=\(secret)".utf8))) == "unsupported_grant_type")
            #expect(try app.request("DELETE", "/_admin/v1/accounts/\(Fixture.northwind)/client_credentials/\(id)").status == 204)
            #expect(try app.request("DELETE", "/_admin/v1/accounts/\(Fixture.northwind)/client_credentials/\(id)").status == 404)
            #expect(try Self.oauthError(Self.tokenResponse(app, id: id, secret: secret)) == "invalid_client")
            #expect(try app.request("POST", "/_admin/v1/accounts/9999/client_credentials").status == 404)
            #expect(try app.request("POST", "/_admin/v1/accounts/\(Fixture.northwind)/client_credentials",
                                    headers: [("Authorization", "Bearer wrong-admin-token-0000")]).status == 401)
        }
    }

    static func bearer(_ token: String?) throws -> HTTPRequest {
        try HTTPRequest(method: "GET", target: "/v1/accounts/\(Fixture.northwind)/videos",
                        headers: HTTPHeaders(token.map { [("Authorization", "Bearer \($0)")] } ?? []))
    }

    @Test("a token opens its own account until the mock's clock passes 300 s; another account, a forged or missing token are the API's 401")
    func bearerCheck() async throws {
        try await withApp { app, _ in
            let token = try Self.token(app)
            #expect(try app.backOfficeAccount(Self.bearer(token), accountID: Fixture.northwind, api: .cms).id == Fixture.northwind)
            #expect(throws: BackOfficeAPI.cms.unauthorized) { try app.backOfficeAccount(Self.bearer(token), accountID: Fixture.contoso, api: .cms) }
            #expect(throws: BackOfficeAPI.ingestProfiles.unauthorized) {
                try app.backOfficeAccount(Self.bearer(nil), accountID: Fixture.northwind, api: .ingestProfiles)
            }
            var forged = Array(token)
            forged[forged.count / 2] = forged[forged.count / 2] == "a" ? "b" : "a"
            #expect(throws: BackOfficeAPI.cms.unauthorized) { try app.backOfficeAccount(Self.bearer(String(forged)), accountID: Fixture.northwind, api: .cms) }
            app.clock.advance(by: 298)
            #expect(throws: Never.self) { try app.backOfficeAccount(Self.bearer(token), accountID: Fixture.northwind, api: .cms) }
            app.clock.advance(by: 2)
            #expect(throws: BackOfficeAPI.cms.unauthorized) { try app.backOfficeAccount(Self.bearer(token), accountID: Fixture.northwind, api: .cms) }
        }
    }

    @Test("the back-office APIs answer JSON only: an Accept header that takes none is 406 NOT_ACCEPTABLE (after the token check); none, */*, application/* or application/json with a quality go on")
    func acceptHeader() async throws {
        try await withApp { app, _ in
            let token = try Self.token(app)
            for path in ["/v1/accounts/\(Fixture.northwind)/videos", "/v1/accounts/\(Fixture.northwind)/profiles"] {
                for accept in ["text/html", "application/xml, text/*;q=0.9", "application/json;q=0"] {
                    let refused = try app.request("GET", path, headers: [("Authorization", "Bearer \(token)"), ("Accept", accept)])
                    #expect(refused.status == 406, "\(path) \(accept): \(refused.debugText)")
                    let errors = try JSONSerialization.jsonObject(with: Data(refused.bytes())) as? [[String: Any]]
                    #expect(errors?.first?["error_code"] as? String == "NOT_ACCEPTABLE", "\(refused.debugText)")
                }
                for accept in [nil, "*/*", "application/*", "text/html, application/json;q=0.5", "APPLICATION/JSON; charset=utf-8"] {
                    let headers = [("Authorization", "Bearer \(token)")] + (accept.map { [("Accept", $0)] } ?? [])
                    #expect(try app.request("GET", path, headers: headers).status == 200, "\(path) \(accept ?? "no Accept")")
                }
                #expect(try app.request("GET", path, headers: [("Accept", "text/html")]).status == 401, "the token is checked first")
            }
        }
    }

    @Test("the mock-backend command: --client-credentials ACCOUNT prints a credential that gets a token; an unknown account stops it with a sentence")
    func commandPrintsCredentials() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let process = try RunningProcess(BalancedCluster.executable, ["--port", "0", "--data-dir", directory.url.path, "--log-level", "warning",
                                                                      "--client-credentials", Fixture.northwind])
        defer { process.kill() }
        let printed = try await process.waitForOutput { $0.contains("client credentials ") && $0.hasSuffix("\n") }
        try #require(printed, "\(process.stdoutSoFar)")
        let lines = process.stdoutSoFar.split(separator: "\n").map(String.init)
        let base = try #require(lines.first { $0.hasPrefix("listening on ") }).dropFirst("listening on ".count)
        let words = try #require(lines.first { $0.hasPrefix("client credentials ") }).split(separator: " ").map(String.init)
        try #require(words.count == 5 && words[2] == Fixture.northwind, "\(words)")
        let token = try await Curl.fetch("\(base)/v4/access_token", ["-u", "\(words[3]):\(words[4])", "-d", "grant_type=client_credentials"])
        #expect(token.status == 200, "\(token.text)")

        let refused = try await Run.process(BalancedCluster.executable, ["--port", "0", "--data-dir", directory.url.appendingPathComponent("second").path,
                                                                                    "--client-credentials", "9999"])
        #expect(refused.exitCode != 0)
        #expect(String(decoding: refused.stderr, as: UTF8.self).contains("cannot make client credentials for account 9999"))
    }

    @Test("live: curl gets a token the documented way (Basic, form body) from a server on port 0")
    func liveToken() async throws {
        try await withLiveServer { server in
            let (id, secret) = try Self.makeClient(server.app)
            let response = try await Curl.fetch("\(server.baseURL)/v4/access_token",
                                                ["-u", "\(id):\(secret)", "-d", "grant_type=client_credentials"])
            #expect(response.status == 200, "\(response.text)")
            #expect(response.text.contains(#""expires_in":300"#))
            #expect(response.text.contains(#""token_type":"Bearer""#))
            let wrong = try await Curl.fetch("\(server.baseURL)/v4/access_token", ["-u", "\(id):nope", "-d", "grant_type=client_credentials"])
            #expect(wrong.status == 400)
            #expect(wrong.text.contains(#""error":"invalid_client""#))
        }
    }
}
