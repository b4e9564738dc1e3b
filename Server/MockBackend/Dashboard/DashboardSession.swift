import Crypto
import Foundation
import MicroHTTP
import WireModels

/// Who may use the dashboard, and how its forms travel.
///
/// Signing in with the admin token earns a **session**: the `mock_admin` cookie holds
/// `EXPIRY.NONCE.MAC` (the expiry in Unix seconds, 16 random bytes in hex, and a hex
/// HMAC-SHA256 of the two), never the token. The MAC's key is derived from the admin token, so
/// every instance started with the same token (one team mock behind a balancer) accepts the
/// session, and a new token ends every session. A session lasts `lifetime` on the real clock
/// (the mock's clock moves by days at a developer's wish; a session must not). Signing out
/// ends it before then: its nonce is kept in the store (`DashboardSessionStorage`) until it
/// would have expired, so a copy of the cookie is refused afterwards by any instance.
///
/// The cookie is `HttpOnly`, `SameSite=Strict`, scoped to `/_dashboard`, `Secure` when the page
/// came over HTTPS, with a `Max-Age` of the lifetime. Every form carries a form token bound to
/// the session (CSRF), and a POST a browser marks as coming from another site
/// (`Sec-Fetch-Site`) is refused before anything else. A flash message travels across the 303
/// in a short-lived cookie.
enum DashboardSession {
    /// The cookie holding the session.
    static let cookie = "mock_admin"
    /// The cookie carrying one message to the next page.
    static let flashCookie = "mock_flash"
    /// The hidden field every form carries.
    static let formTokenField = "csrf"
    /// How long a session lasts (real time).
    static let lifetime: TimeInterval = 12 * 3600
    /// What the session key is an HMAC of (keyed with the admin token).
    private static let keyLabel = "mock-backend dashboard sessions v1"

    /// A signed-in session: when it ends (whole seconds) and its random nonce (32 hex digits).
    struct Session: Equatable {
        var expiresAt: Date
        var nonce: String
    }

    /// Whether a request is signed in: no cookie, a session that holds, or a cookie that does
    /// not (forged, expired, signed out, or made with another admin token).
    enum SignIn: Equatable { case none, valid(Session), invalid }

    /// The key sessions and form tokens are signed with: HMAC-SHA256 of a fixed label keyed with
    /// the admin token (the same on every instance with that token).
    static func key(adminToken: String) -> SymmetricKey {
        SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(keyLabel.utf8), using: SymmetricKey(data: Data(adminToken.utf8)))))
    }

    /// A new session, `lifetime` from `now`, and its cookie value.
    static func start(now: Date, key: SymmetricKey) -> (session: Session, value: String) {
        let session = Session(expiresAt: Date(timeIntervalSince1970: (now.timeIntervalSince1970 + lifetime).rounded(.down)),
                              nonce: Hex.lowercase(SecureBytes.random(16)))
        return (session, value(of: session, key: key))
    }

    /// The cookie value of `session`: `EXPIRY.NONCE.MAC`.
    static func value(of session: Session, key: SymmetricKey) -> String {
        let signed = "\(Int64(session.expiresAt.timeIntervalSince1970)).\(session.nonce)"
        return signed + "." + mac(signed, key: key)
    }

    /// The session a cookie value holds, if its MAC is right and it has not expired by `now`
    /// (ended sessions are the store's to tell: `signIn`).
    static func session(from value: String, key: SymmetricKey, now: Date) -> Session? {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let seconds = Int64(parts[0]), parts[1].utf8.count == 32, parts[1].allSatisfy(\.isHexDigit) else { return nil }
        let signed = "\(parts[0]).\(parts[1])"
        guard SecureBytes.constantTimeEqual(Array(parts[2].utf8), Array(mac(signed, key: key).utf8)) else { return nil }
        let expiresAt = Date(timeIntervalSince1970: TimeInterval(seconds))
        // Signed by this key, so never issued for longer than `lifetime`; checked anyway.
        guard now < expiresAt, expiresAt.timeIntervalSince(now) <= lifetime + 60 else { return nil }
        return Session(expiresAt: expiresAt, nonce: String(parts[1]))
    }

    /// Whether `request` carries a session that holds at `now` (real time): signed with this
    /// server's key, unexpired, and not ended in the store (which may throw: refused then).
    static func signIn(_ request: HTTPRequest, app: MockBackendApp, now: Date) throws -> SignIn {
        guard let value = cookies(request)[cookie] else { return .none }
        guard let session = session(from: value, key: key(adminToken: app.adminToken), now: now),
              !(try app.store.isDashboardSessionEnded(nonce: session.nonce)) else { return .invalid }
        return .valid(session)
    }

    /// The form token of a session: hex HMAC of its nonce. A page from another origin cannot
    /// read it, so it cannot forge a form post; it dies with the session.
    static func formToken(for session: Session, key: SymmetricKey) -> String {
        mac("form." + session.nonce, key: key)
    }

    /// Whether a posted form carries the session's form token (compared in constant time).
    static func hasFormToken(_ form: FormFields, session: Session, key: SymmetricKey) -> Bool {
        guard let given = form.value(formTokenField) else { return false }
        return SecureBytes.constantTimeEqual(Array(given.utf8), Array(formToken(for: session, key: key).utf8))
    }

    /// Whether a browser says the request came from another site (or another origin of this
    /// one: another port of `localhost` is the same site, and `SameSite` lets its posts carry
    /// the cookie). Clients that send no `Sec-Fetch-Site` (curl, tests) are not browsers.
    static func isCrossOrigin(_ request: HTTPRequest) -> Bool {
        guard let site = request.headers["Sec-Fetch-Site"] else { return false }
        return site != "same-origin" && site != "none"
    }

    private static func mac(_ text: String, key: SymmetricKey) -> String {
        Hex.lowercase(Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
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

    /// A `Set-Cookie` value scoped to the dashboard, `Secure` when the page came over HTTPS;
    /// `maxAge` 0 removes the cookie.
    static func setCookie(_ name: String, _ value: String, maxAge: Int, secure: Bool) -> String {
        "\(name)=\(URLToken.percentEncode(value)); Path=/_dashboard; HttpOnly; SameSite=Strict; Max-Age=\(maxAge)" + (secure ? "; Secure" : "")
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
