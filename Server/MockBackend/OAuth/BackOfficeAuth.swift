import Foundation
import MicroHTTP
import WireModels

/// The bearer-token check of the back-office APIs (CMS, Dynamic Ingest, Ingest Profiles): a
/// token from `POST /v4/access_token`, unexpired on the mock's clock, for the account in the
/// path. Missing, unreadable, expired and other-account tokens all get the same 401 (the real
/// service has no separate "expired" code), in the body each API documents.
enum BackOfficeAPI {
    /// CMS and Dynamic Ingest: `[{"error_code":"UNAUTHORIZED","message":"Permission denied."}]`.
    case cms
    /// Ingest Profiles: `[{"error_code":"NOT_AUTHORIZED","message":"Credentials are required to access this resource."}]`.
    case ingestProfiles

    var unauthorized: HTTPError {
        switch self {
        case .cms: HTTPError(401, "UNAUTHORIZED", nil, "Permission denied.")
        case .ingestProfiles: HTTPError(401, "NOT_AUTHORIZED", nil, "Credentials are required to access this resource.")
        }
    }
}

extension MockBackendApp {
    /// The account in the path, when the request's bearer token is good for it now; else the
    /// API's 401. An account the catalog does not have is refused the same way (a token can only
    /// be issued for an account that exists, so a good token never names one).
    /// Then the answer's type: these APIs answer JSON only, so an `Accept` header that takes no
    /// JSON is `406 NOT_ACCEPTABLE` (no header takes anything).
    func backOfficeAccount(_ request: HTTPRequest, accountID: String, api: BackOfficeAPI) throws(HTTPError) -> Account {
        guard let text = PlaybackAuth.credential("Bearer", in: request.headers),
              let token = AccessToken(decoding: text, secret: oauthSecret),
              !token.isExpired(now: clock.now()), token.accountID == accountID,
              let account = catalog.accounts[accountID] else { throw api.unauthorized }
        let accepted = request.headers.values(for: "Accept")
        guard accepted.isEmpty || accepted.contains(where: BackOfficeAPI.takesJSON) else {
            throw HTTPError(406, "NOT_ACCEPTABLE", nil, "This API answers application/json only; the Accept header takes none of it")
        }
        return account
    }
}

extension BackOfficeAPI {
    /// Whether an `Accept` value (`type/subtype;q=…, …`) takes `application/json`: a range
    /// `application/json`, `application/*` or `*/*` whose quality is not 0.
    static func takesJSON(_ accept: String) -> Bool {
        accept.split(separator: ",").contains { range in
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let type = parts.first, ["application/json", "application/*", "*/*"].contains(type) else { return false }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
    }
}
