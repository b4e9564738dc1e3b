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

/// A playback-restriction JWT, decoded. Part 1 checks its shape, account and times;
/// the RS256 signature is verified by the license-server work (issue 3).
struct PlaybackToken: Sendable {
    var raw: String
    var accountID: String?
    var contentID: String?
    var expiresAt: Date?
    var notBefore: Date?
    var userID: String?
    var deviceLimit: Int?
}

/// Reads credentials the three ways the real Playback API accepts a policy key, and a JWT
/// the two ways it accepts one.
enum PlaybackAuth {
    /// The policy key from `BCOV-Policy`, `Authorization: BCOV-Policy …` or `Accept: …;pk=…`.
    static func policyKey(in headers: HTTPHeaders) -> String? {
        if let key = headers["BCOV-Policy"]?.trimmingCharacters(in: .whitespaces), !key.isEmpty { return key }
        for value in headers.values(for: "Authorization") {
            let parts = value.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].caseInsensitiveCompare("BCOV-Policy") == .orderedSame {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
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

    /// The raw JWT from `Authorization: Bearer …` or `BCOV-Auth`.
    static func bearerToken(in headers: HTTPHeaders) -> String? {
        if let token = headers["BCOV-Auth"]?.trimmingCharacters(in: .whitespaces), !token.isEmpty { return token }
        for value in headers.values(for: "Authorization") {
            let parts = value.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].caseInsensitiveCompare("Bearer") == .orderedSame {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// Authenticates a Playback API request for `accountID`; the error is a ready response.
    static func authenticate(_ request: HTTPRequest, accountID: String, catalog: Catalog, now: Date) -> Result<PlaybackCaller, ErrorResponse> {
        guard let key = policyKey(in: request.headers) else {
            return .failure(ErrorResponse(401, PlaybackAPIErrorCode.invalidPolicyKey, nil,
                                          "Request policy key is missing: send it as BCOV-Policy, Authorization: BCOV-Policy or Accept: application/json;pk=…"))
        }
        guard let (account, searchEnabled) = catalog.account(forPolicyKey: key) else {
            return .failure(ErrorResponse(401, PlaybackAPIErrorCode.invalidPolicyKey, nil, "Request policy key is invalid"))
        }
        guard account.id == accountID else {
            return .failure(ErrorResponse(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.accountID,
                                          "Policy key is for account \(account.id), not \(accountID)"))
        }
        var caller = PlaybackCaller(account: account, searchEnabled: searchEnabled, token: nil)
        if let raw = bearerToken(in: request.headers) {
            switch decodeToken(raw) {
            case .failure(let error): return .failure(error)
            case .success(let token):
                if let claimed = token.accountID, claimed != accountID {
                    return .failure(ErrorResponse(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.accountID,
                                                  "Token is for account \(claimed), not \(accountID)"))
                }
                if let exp = token.expiresAt, exp <= now {
                    return .failure(ErrorResponse(401, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenValidation,
                                                  "Token expired at \(WireDate.string(from: exp))"))
                }
                if let nbf = token.notBefore, nbf > now {
                    return .failure(ErrorResponse(401, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenValidation,
                                                  "Token is not valid before \(WireDate.string(from: nbf))"))
                }
                caller.token = token
            }
        }
        return .success(caller)
    }

    /// Decodes a compact JWS: three base64url parts, a JSON header naming an algorithm and a
    /// JSON object payload. Anything else is 401 `ACCESS_DENIED`/`TOKEN_VALIDATION`.
    static func decodeToken(_ raw: String) -> Result<PlaybackToken, ErrorResponse> {
        let malformed = ErrorResponse(401, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenValidation,
                                      "Token is not a well-formed JWT")
        let parts = raw.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[2].isEmpty,
              let headerData = Base64URL.decode(parts[0]), let payloadData = Base64URL.decode(parts[1]),
              let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
              header["alg"] is String,
              let claims = try? JSONSerialization.jsonObject(with: payloadData) as? [String: Any]
        else { return .failure(malformed) }
        func string(_ name: String) -> String? {
            if let s = claims[name] as? String { return s }
            if let n = claims[name] as? NSNumber { return n.stringValue }
            return nil
        }
        func date(_ name: String) -> Date? { (claims[name] as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue) } }
        return .success(PlaybackToken(raw: raw, accountID: string("accid"), contentID: string("conid"),
                                      expiresAt: date("exp"), notBefore: date("nbf"), userID: string("uid"),
                                      deviceLimit: (claims["dlimit"] as? NSNumber)?.intValue))
    }
}

/// base64url without padding, as JWTs use it.
enum Base64URL {
    static func decode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") || base64.hasSuffix("=") else { return nil }
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

/// A refusal, turned into the error array by `response`.
struct ErrorResponse: Error, Sendable {
    var status: Int
    var code: String
    var subcode: String?
    var message: String

    init(_ status: Int, _ code: String, _ subcode: String?, _ message: String) {
        self.status = status
        self.code = code
        self.subcode = subcode
        self.message = message
    }

    var response: HTTPResponse { APIResponse.error(status, code, subcode, message) }
}
