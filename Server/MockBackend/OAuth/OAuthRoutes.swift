import Foundation
import MicroHTTP
import WireModels

/// OAuth API v4: `POST /v4/access_token` (client credentials grant), and the admin API's
/// client credentials (`/_admin/v1/accounts/{account}/client_credentials`), which stand in for
/// Studio's: made per account, the secret returned once.
extension MockBackendApp {
    static func addOAuthRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["POST"], "/v4/access_token") { app, request, _ in
            app.accessTokenResponse(request)
        }
        router.add(["GET"], "/_admin/v1/accounts/:account/client_credentials") { app, _, p in
            let account = try app.adminAccountID(p["account"])
            let clients = try CatalogEditError.storage { try app.store.oauthClients(accountID: account) }
            return APIResponse.json(["client_credentials": clients.map { ClientCredentialBody($0, secret: nil) }])
        }
        router.add(["POST"], "/_admin/v1/accounts/:account/client_credentials") { app, request, p in
            let account = try app.adminAccountID(p["account"])
            let body = request.body.isEmpty ? [:] : try JSONBody.object(request.body, example: #"{"name": "my integration"}"#)
            let name: String
            switch body["name"] {
            case nil: name = "mock-backend"
            case let given as String where (1...255).contains(given.count): name = given
            default: throw CatalogEditError(.invalid, "INVALID_BODY", "name must be a string of 1-255 characters")
            }
            let (client, secret) = OAuthClient.make(accountID: account, name: name, now: app.clock.now())
            try CatalogEditError.storage { try app.store.insertOAuthClient(client) }
            return APIResponse.json(ClientCredentialBody(client, secret: secret), status: 201)
        }
        router.add(["DELETE"], "/_admin/v1/accounts/:account/client_credentials/:client") { app, _, p in
            let account = try app.adminAccountID(p["account"])
            guard try CatalogEditError.storage({ try app.store.deleteOAuthClient(accountID: account, id: p["client"]) }) else {
                throw CatalogEditError(.notFound, "CLIENT_NOT_FOUND", "No client \(p["client"]) in account \(account)")
            }
            return HTTPResponse(status: 204)
        }
    }

    /// A new client credential of `accountID` and its secret, stored (the CLI's `--client-credentials`).
    public func makeClientCredentials(accountID: String, name: String) throws -> (clientID: String, clientSecret: String) {
        _ = try adminAccountID(accountID)
        let (client, secret) = OAuthClient.make(accountID: accountID, name: name, now: clock.now())
        try store.insertOAuthClient(client)
        return (client.id, secret)
    }

    /// `accountID` when the catalog has that account; else 404 `ACCOUNT_NOT_FOUND`.
    func adminAccountID(_ accountID: String) throws(CatalogEditError) -> String {
        guard catalog.accounts[accountID] != nil else { throw CatalogEditError(.notFound, "ACCOUNT_NOT_FOUND", "No account \(accountID)") }
        return accountID
    }

    /// The answer to `POST /v4/access_token`: a token, or the RFC 6749 error object.
    private func accessTokenResponse(_ request: HTTPRequest) -> HTTPResponse {
        let form = OAuthForm(request)
        guard !form.holdsNUL else {
            return HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_BODY", "Form fields may not contain a NUL character (%00)").response
        }
        // The grant may come in the query, the body or both; every one given must be client_credentials.
        let grants = [request.queryValue("grant_type"), form.value("grant_type")].compactMap { $0 }
        guard !grants.isEmpty, grants.allSatisfy({ $0 == "client_credentials" }) else {
            return OAuthError.unsupportedGrantType.response
        }
        guard let (id, secret) = PlaybackAuth.credential("Basic", in: request.headers).flatMap(Self.basicCredentials)
                ?? form.value("client_id").flatMap({ id in form.value("client_secret").map { (id, $0) } }) else {
            return OAuthError.invalidClient.response
        }
        let client: OAuthClient?
        do { client = try store.oauthClient(id: id) } catch {
            return APIResponse.error(for: error, request: request, logger: logger)
        }
        guard let client, client.accepts(secret: secret), catalog.accounts[client.accountID] != nil else {
            return OAuthError.invalidClient.response
        }
        let token = AccessToken.issue(for: client, now: clock.now()).encoded(secret: oauthSecret)
        struct Body: Encodable {
            var accessToken: String, tokenType = "Bearer", expiresIn = Int(AccessToken.lifetime)
            enum CodingKeys: String, CodingKey { case accessToken = "access_token", tokenType = "token_type", expiresIn = "expires_in" }
        }
        var response = APIResponse.json(Body(accessToken: token))
        OAuthError.setHeaders(&response)
        return response
    }

    /// `client_id:client_secret` from a Basic credential's base64; nil when it is not that.
    private static func basicCredentials(_ encoded: String) -> (String, String)? {
        guard let data = Data(base64Encoded: encoded.trimmingCharacters(in: .whitespaces)),
              let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }
}

/// The token request's fields, wherever the client put them: a form body (the documented way),
/// or a JSON object (some clients send `Content-Type: application/json`). An empty or
/// unreadable body has no fields (the query and the Authorization header may still carry them).
private struct OAuthForm {
    private var fields: [String: String] = [:]
    /// Whether any field holds a NUL (refused, as everywhere: `JSONBody.refuseNUL`).
    private(set) var holdsNUL = false

    init(_ request: HTTPRequest) {
        defer { holdsNUL = fields.contains { $0.key.utf8.contains(0) || $0.value.utf8.contains(0) } }
        guard !request.body.isEmpty else { return }
        if let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] {
            fields = object.compactMapValues { $0 as? String }
        } else if let form = FormFields(request.body) {
            for field in form.fields { fields[field.name] = field.value }
        }
    }

    func value(_ name: String) -> String? { fields[name].flatMap { $0.isEmpty ? nil : $0 } }
}

/// The OAuth API's refusals: 400 with RFC 6749's `{"error","error_description"}` (the real
/// body is undocumented; see the reference, §1.1), never cached.
enum OAuthError {
    case invalidClient, unsupportedGrantType

    var response: HTTPResponse {
        let (error, description) = switch self {
        case .invalidClient:
            ("invalid_client", #"The "client_id" parameter is missing, does not name a client registration that is applicable for the requested call, or is not properly authenticated."#)
        case .unsupportedGrantType:
            ("unsupported_grant_type", "grant_type must be client_credentials (in the body or the query)")
        }
        var response = APIResponse.json(["error": error, "error_description": description], status: 400)
        OAuthError.setHeaders(&response)
        return response
    }

    static func setHeaders(_ response: inout HTTPResponse) {
        response.headers.set("Content-Type", "application/json;charset=UTF-8")
        response.headers.set("Cache-Control", "no-store")
        response.headers.set("Pragma", "no-cache")
    }
}

/// A client credential as the admin API shows it, shaped like the OAuth API's own
/// (`client_secret` only in the answer that made it, `null` after).
private struct ClientCredentialBody: Encodable {
    var clientID: String
    var clientSecret: String?
    var accountID: String
    var name: String
    var issuedAt: String

    init(_ client: OAuthClient, secret: String?) {
        clientID = client.id
        clientSecret = secret
        accountID = client.accountID
        name = client.name
        issuedAt = WireDate.string(from: client.issuedAt)
    }

    enum CodingKeys: String, CodingKey {
        case name
        case clientID = "client_id", clientSecret = "client_secret", accountID = "account_id", issuedAt = "issued_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(clientID, forKey: .clientID)
        try container.encode(clientSecret, forKey: .clientSecret)  // null when not shown
        try container.encode(accountID, forKey: .accountID)
        try container.encode(name, forKey: .name)
        try container.encode(issuedAt, forKey: .issuedAt)
    }
}
