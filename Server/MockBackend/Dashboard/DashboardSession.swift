import Crypto
import Foundation
import MicroHTTP
import WireModels

/// Who may use the dashboard, and how its forms travel: the admin token in an `HttpOnly`,
/// `SameSite=Strict` cookie scoped to `/_dashboard` (checked with `isAdminToken`, the admin
/// API's own comparison), a form token derived from the admin token in every form (CSRF), and
/// a flash message carried across the 303 in a short-lived cookie.
enum DashboardSession {
    /// The cookie holding the admin token.
    static let cookie = "mock_admin"
    /// The cookie carrying one message to the next page.
    static let flashCookie = "mock_flash"
    /// The hidden field every form carries.
    static let formTokenField = "csrf"
    /// What the form token is an HMAC of (keyed with the admin token).
    private static let formTokenLabel = "mock-backend dashboard forms v1"

    /// Whether a request is signed in: no cookie, the admin token, or a cookie with another
    /// token (the server restarted with a new one).
    enum SignIn: Equatable { case none, valid, invalid }

    static func signIn(_ request: HTTPRequest, app: MockBackendApp) -> SignIn {
        guard let token = cookies(request)[cookie] else { return .none }
        return app.isAdminToken(token) ? .valid : .invalid
    }

    /// The form token of a server: hex HMAC-SHA256 of a fixed label keyed with its admin
    /// token. A page from another origin cannot read it, so it cannot forge a form post.
    static func formToken(adminToken: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data(formTokenLabel.utf8), using: SymmetricKey(data: Data(adminToken.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether a posted form carries this server's form token (compared in constant time).
    static func hasFormToken(_ form: FormFields, adminToken: String) -> Bool {
        guard let given = form.value(formTokenField) else { return false }
        return SecureBytes.constantTimeEqual(Array(given.utf8), Array(formToken(adminToken: adminToken).utf8))
    }

    // MARK: Cookies

    /// The request's cookies, values percent-decoded; the first of a repeated name wins.
    static func cookies(_ request: HTTPRequest) -> [String: String] {
        var cookies: [String: String] = [:]
        for header in request.headers.values(for: "Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                guard cookies[name] == nil, let value = decode(parts[1].trimmingCharacters(in: .whitespaces)) else { continue }
                cookies[name] = value
            }
        }
        return cookies
    }

    /// A `Set-Cookie` value scoped to the dashboard; `maxAge` 0 removes the cookie.
    static func setCookie(_ name: String, _ value: String, maxAge: Int? = nil) -> String {
        "\(name)=\(URLToken.percentEncode(value)); Path=/_dashboard; HttpOnly; SameSite=Strict" + (maxAge.map { "; Max-Age=\($0)" } ?? "")
    }

    /// Percent-decodes a cookie value the way `setCookie` encodes it; nil when malformed.
    private static func decode(_ value: String) -> String? {
        guard let parsed = try? RequestTarget(parsing: "/?v=" + value), parsed.query.count == 1 else { return nil }
        return parsed.query[0].value
    }

    // MARK: Flash

    /// A message for the page after a form: what was done, or the refusal.
    struct Flash: Equatable {
        var isError: Bool
        var message: String

        /// The flash cookie's value.
        var cookieValue: String { (isError ? "error:" : "ok:") + message }

        init(isError: Bool, message: String) {
            self.isError = isError
            self.message = message
        }

        init?(cookieValue: String) {
            guard let colon = cookieValue.firstIndex(of: ":") else { return nil }
            let kind = cookieValue[..<colon]
            guard kind == "ok" || kind == "error" else { return nil }
            isError = kind == "error"
            message = String(cookieValue[cookieValue.index(after: colon)...])
        }
    }
}

/// The fields of an `application/x-www-form-urlencoded` body, decoded by the same parser as
/// request queries (`+` as space, percent escapes).
struct FormFields {
    let fields: [(name: String, value: String)]

    /// Nil when the body is not valid form encoding.
    init?(_ body: [UInt8]) {
        guard let text = String(validating: body, as: UTF8.self), !text.contains("#"),
              let parsed = try? RequestTarget(parsing: "/?" + text) else { return nil }
        fields = parsed.query
    }

    /// The last value given for `name` (a hidden default followed by a checkbox gives the checkbox's).
    func value(_ name: String) -> String? {
        fields.last { $0.name == name }?.value
    }

    /// The value of `name` with surrounding spaces removed; nil when missing or blank.
    func nonBlank(_ name: String) -> String? {
        guard let value = value(name)?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }
}
