import Foundation
import MicroHTTP
import WireModels

/// Who a Playback API request is from: the policy key's account and rights, and the
/// playback-restriction JWT if one came along.
struct PlaybackCaller: Sendable {
    var account: Account
    var searchEnabled: Bool
    var token: PlaybackToken?
}

/// What the backend uses of a playback-restriction JWT whose RS256 signature, account and
/// times have been verified.
struct PlaybackToken: Sendable {
    /// `conid`: the one video the token allows, if it names one.
    var contentID: String?
    /// `uid`: the user whose devices are counted.
    var userID: String?
    /// `dlimit`: that user's device limit.
    var deviceLimit: Int?
    /// `vod.ssai`: the server-side ad insertion configuration a static URL VMAP is made for.
    var ssaiConfigID: String?
}

/// Reads credentials the three ways the real Playback API accepts a policy key, and a JWT
/// the two ways it accepts one.
enum PlaybackAuth {
    /// The policy key from `BCOV-Policy`, `Authorization: BCOV-Policy …` or `Accept: …;pk=…`.
    static func policyKey(in headers: HTTPHeaders) -> String? {
        if let key = headers["BCOV-Policy"]?.trimmingCharacters(in: .whitespaces), !key.isEmpty { return key }
        if let key = credential("BCOV-Policy", in: headers) { return key }
        for accept in headers.values(for: "Accept") {
            for parameter in accept.split(separator: ";").dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces) == "pk" {
                    return pair[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// The raw JWT from `Authorization: Bearer …`, `BCOV-Auth` or the `bcov_auth` query parameter
    /// (static URL delivery's way, accepted wherever a token is): the one place a token is read.
    static func bearerToken(in request: HTTPRequest) -> String? {
        if let token = request.headers["BCOV-Auth"]?.trimmingCharacters(in: .whitespaces), !token.isEmpty { return token }
        if let token = credential("Bearer", in: request.headers), !token.isEmpty { return token }
        if let token = request.queryValue("bcov_auth")?.trimmingCharacters(in: .whitespaces), !token.isEmpty { return token }
        return nil
    }

    /// The credentials of the first `Authorization: {scheme} …` field (the scheme compared
    /// case-insensitively), trimmed.
    static func credential(_ scheme: String, in headers: HTTPHeaders) -> String? {
        for value in headers.values(for: "Authorization") {
            let parts = value.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].caseInsensitiveCompare(scheme) == .orderedSame {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// Authenticates a Playback API request for `accountID`; the error is a ready refusal.
    /// A JWT, when present, must verify (`PlaybackRestrictions.verify`). Without a policy key, a
    /// JWT alone opens the account it verifies for (the key-less Playback API of accounts with
    /// playback restrictions); it never opens search.
    static func authenticate(_ request: HTTPRequest, accountID: String, catalog: Catalog, restrictions: PlaybackRestrictions,
                             now: Date) throws(HTTPError) -> PlaybackCaller {
        guard let key = policyKey(in: request.headers) else {
            if bearerToken(in: request) != nil, catalog.accounts[accountID] != nil {
                return try authenticateToken(request, accountID: accountID, catalog: catalog, restrictions: restrictions, now: now)
            }
            throw HTTPError(401, PlaybackAPIErrorCode.invalidPolicyKey, nil,
                            "Request policy key is missing: send it as BCOV-Policy, Authorization: BCOV-Policy or Accept: application/json;pk=…, "
                                + "or send a playback-restriction JWT alone (Authorization: Bearer, BCOV-Auth or ?bcov_auth=)")
        }
        guard let (account, searchEnabled) = catalog.account(forPolicyKey: key) else {
            throw HTTPError(401, PlaybackAPIErrorCode.invalidPolicyKey, nil, "Request policy key is invalid")
        }
        guard account.id == accountID else {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.accountID,
                            "Policy key is for account \(account.id), not \(accountID)")
        }
        let token = try bearerToken(in: request).map { raw throws(HTTPError) in
            try restrictions.verify(raw, accountID: accountID, now: now)
        }
        return PlaybackCaller(account: account, searchEnabled: searchEnabled, token: token)
    }

    /// Authenticates by the playback-restriction JWT alone (no policy key is read): the key-less
    /// Playback API, and static URL delivery, which needs one. Without a token, 401
    /// `ACCESS_DENIED`/`TOKEN_REQUIRED`; a token that does not verify for `accountID`, its refusal.
    static func authenticateToken(_ request: HTTPRequest, accountID: String, catalog: Catalog, restrictions: PlaybackRestrictions,
                                  now: Date) throws(HTTPError) -> PlaybackCaller {
        guard let raw = bearerToken(in: request) else {
            throw HTTPError(401, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenRequired,
                            "A playback-restriction JWT is required: send it as ?bcov_auth=JWT, BCOV-Auth or Authorization: Bearer")
        }
        let token = try restrictions.verify(raw, accountID: accountID, now: now)
        guard let account = catalog.accounts[accountID] else {
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound, "No account \(accountID)")
        }
        return PlaybackCaller(account: account, searchEnabled: false, token: token)
    }

    /// A token naming a content id (`conid`) only opens that video (by id or reference id).
    static func checkContent(_ token: PlaybackToken?, _ video: CatalogVideo) throws(HTTPError) {
        if let content = token?.contentID, !content.isEmpty, content != video.id, content != video.referenceID {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenValidation,
                            "Token is for content \(content), not video \(video.id)")
        }
    }
}
