import Foundation
import MicroHTTP
import WireModels

/// The Ingest Profiles API (`/v1/accounts/{account}/profiles`, `…/configuration`; reference §4):
/// the standard profiles the mock can ingest with, and the account's default, kept in its
/// catalog entry (stored and shared like any catalog edit). Custom profiles are not supported:
/// `POST /profiles`, `PUT` and `DELETE` answer 405.
extension MockBackendApp {
    static func addIngestProfileRoutes(to router: inout Router<MockBackendApp>) {
        let account = "/v1/accounts/:account"
        router.add(["GET"], "\(account)/profiles") { app, request, p in
            try app.ingestProfiles(request, p) { _ in APIResponse.json(IngestProfile.standard.map(IngestProfileBody.init)) }
        }
        router.add(["GET"], "\(account)/profiles/:profile") { app, request, p in
            try app.ingestProfiles(request, p) { _ in
                guard let profile = IngestProfile.named(p["profile"]) else {
                    throw CMSError(404, "NOT_FOUND", "No profile \(p["profile"]); the mock's are \(IngestProfile.standard.map(\.name).joined(separator: ", "))")
                }
                return APIResponse.json(IngestProfileBody(profile: profile))
            }
        }
        router.add(["GET"], "\(account)/configuration") { app, request, p in
            try app.ingestProfiles(request, p) { account in
                APIResponse.json(IngestConfigurationBody(configuration: app.ingestConfiguration(of: account.id), accountID: account.id))
            }
        }
        for method in ["POST", "PUT"] {
            router.add([method], "\(account)/configuration") { app, request, p in
                try app.ingestProfiles(request, p) { account in
                    let configuration = try app.setIngestConfiguration(account: account.id, body: Self.cmsBody(request), creating: method == "POST")
                    return APIResponse.json(IngestConfigurationBody(configuration: configuration, accountID: account.id))
                }
            }
        }
    }

    /// The Ingest Profiles API's checks: a token for the account (401 `NOT_AUTHORIZED` otherwise).
    private func ingestProfiles(_ request: HTTPRequest, _ p: RouteParameters, _ body: (Account) throws -> HTTPResponse) throws -> HTTPResponse {
        try CMSError.translating {
            let account = try backOfficeAccount(request, accountID: p["account"], api: .ingestProfiles)
            try refuseDuplicateParameters(request)
            return try body(account)
        }
    }

    /// The account's configuration: the one set, or the system default's (never stored).
    func ingestConfiguration(of accountID: String) -> IngestConfiguration {
        if let stored = live.document.accounts.first(where: { $0.id == accountID })?.ingestConfiguration { return stored }
        let stamp = IngestProfile.systemDefault.dateLastModified
        return IngestConfiguration(id: Self.configurationID(accountID), defaultProfileID: IngestProfile.systemDefault.name,
                                   dateCreated: stamp, dateLastModified: stamp, version: stamp)
    }

    /// The profile Dynamic Ingest uses for `accountID` when a request names none.
    func defaultIngestProfile(of accountID: String) -> IngestProfile {
        IngestProfile.named(ingestConfiguration(of: accountID).defaultProfileID) ?? IngestProfile.systemDefault
    }

    /// POST (409 `CONFLICT` when one is set) or PUT the account's default profile.
    private func setIngestConfiguration(account: String, body: [String: Any], creating: Bool) throws -> IngestConfiguration {
        let allowed: Set<String> = ["id", "account_id", "default_profile_id", "default_live_profile_id"]
        if let unknown = body.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw CMSError(422, "UNPROCESSABLE_ENTITY", "\(unknown): ILLEGAL_FIELD")
        }
        if let id = body["id"], !(id is String) { throw CMSError(422, "UNPROCESSABLE_ENTITY", "id must be a string") }
        if let live = body["default_live_profile_id"], !(live is String || live is NSNull) {
            throw CMSError(422, "UNPROCESSABLE_ENTITY", "default_live_profile_id must be a string or null")
        }
        if let given = body["account_id"] {
            let text = (given as? String) ?? (try? CMSVideoChanges.member("account_id", of: body) as Int?)?.map(String.init) ?? nil
            guard text == account else { throw CMSError(422, "UNPROCESSABLE_ENTITY", "account_id must be \(account) (the account in the path) or left out") }
        }
        guard let name = body["default_profile_id"] as? String, let profile = IngestProfile.named(name) else {
            throw CMSError(422, "UNPROCESSABLE_ENTITY", "default_profile_id must name one of \(IngestProfile.standard.map(\.name).joined(separator: ", "))")
        }
        let now = Int64((clock.now().timeIntervalSince1970 * 1000).rounded())
        var result: IngestConfiguration?
        try live.edit(now: clock.now()) { document throws(CatalogEditError) -> LiveCatalog.Edit in
            guard var entry = document.accounts.first(where: { $0.id == account }) else {
                throw CatalogEditError(.notFound, "NOT_FOUND", "No account \(account)")
            }
            if creating, entry.ingestConfiguration != nil {
                throw CatalogEditError(.conflict, "CONFLICT", "Could not create configuration: the account has one; PUT it")
            }
            let configuration = IngestConfiguration(id: Self.configurationID(account), defaultProfileID: profile.name,
                                                    dateCreated: entry.ingestConfiguration?.dateCreated ?? now, dateLastModified: now, version: now)
            entry.ingestConfiguration = configuration
            result = configuration
            return .account(entry)
        }
        guard let result else { throw CatalogEditError(.storageFailed, "STORAGE_FAILED", "the edit was lost") }
        return result
    }

    /// A 24-hex id for the account's configuration, the same on every instance.
    private static func configurationID(_ accountID: String) -> String {
        String(StableID.uuid("ingest-configuration:\(accountID)").replacingOccurrences(of: "-", with: "").prefix(24))
    }
}
