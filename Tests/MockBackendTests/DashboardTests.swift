import Foundation
import LicenseProtocol
import MicroHTTP
import TestKit
import Testing
import WireModels
@testable import MockBackend

/// The dashboard through `MockBackendApp.handle`: signing in, the cookie and form token each
/// form needs, every form changing what the admin API sees (through the admin API's own
/// functions, refusing in its sentences), the page's escaping; and its event stream live.
@Suite("Dashboard: sign-in, forms, escaping, the live request log")
struct DashboardTests {
    // MARK: Helpers

    /// `a=1&b=2`, each value percent-encoded as a browser would.
    static func form(_ fields: [(String, String)]) -> [UInt8] {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        return Array(fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
            .joined(separator: "&").utf8)
    }

    static func post(_ app: MockBackendApp, _ path: String, _ fields: [(String, String)], cookie: String?,
                     headers extra: [(String, String)] = [], secure: Bool = false) throws -> HTTPResponse {
        var headers = [("Content-Type", "application/x-www-form-urlencoded")] + extra
        if let cookie { headers.append(("Cookie", cookie)) }
        var request = try HTTPRequest(method: "POST", target: path, headers: HTTPHeaders(headers), body: form(fields))
        request.isSecure = secure
        return app.handleNow(request)
    }

    static func page(_ app: MockBackendApp, cookie: String?, secure: Bool = false) throws -> HTTPResponse {
        var request = try HTTPRequest(method: "GET", target: "/_dashboard", headers: HTTPHeaders(cookie.map { [("Cookie", $0)] } ?? []))
        request.isSecure = secure
        return app.handleNow(request)
    }

    /// The `name=value` of a `Set-Cookie` named `name`, and its attributes.
    static func setCookie(_ response: HTTPResponse, _ name: String) -> (pair: String, attributes: [String])? {
        for header in response.headers.values(for: "Set-Cookie") where header.hasPrefix(name + "=") {
            let parts = header.components(separatedBy: "; ")
            return (parts[0], Array(parts.dropFirst()))
        }
        return nil
    }

    /// Signs in through the form; the `Cookie` header value it earns.
    static func signIn(_ app: MockBackendApp, secure: Bool = false) throws -> String {
        let response = try post(app, "/_dashboard/login", [("token", app.adminToken)], cookie: nil, secure: secure)
        try #require(response.status == 303, "\(response.debugText)")
        return try #require(setCookie(response, "mock_admin")).pair
    }

    /// The form token a signed-in page carries in its forms.
    static func formToken(_ app: MockBackendApp, cookie: String) throws -> String {
        let html = try page(app, cookie: cookie).text()
        let marker = #"name="csrf" value=""#
        let start = try #require(html.range(of: marker)?.upperBound, "no form token in the page")
        return String(html[start...].prefix { $0 != "\"" })
    }

    /// The flash message a form's 303 carries, decoded.
    static func flash(_ response: HTTPResponse) throws -> DashboardSession.Flash {
        #expect(response.status == 303, "\(response.debugText)")
        let pair = try #require(setCookie(response, "mock_flash")?.pair, "no flash cookie")
        let value = try #require(DashboardSession.cookies(try HTTPRequest(method: "GET", target: "/", headers: HTTPHeaders([("Cookie", pair)])))["mock_flash"])
        return try #require(DashboardSession.Flash(cookieValue: value))
    }

    /// The message of the admin API's error array.
    static func adminMessage(_ response: HTTPResponse) throws -> String {
        try #require(try response.apiErrors().first?.message)
    }

    /// A signed-in session: the cookie and the page's form token.
    struct Session {
        var cookie: String
        var token: String
        func post(_ app: MockBackendApp, _ path: String, _ fields: [(String, String)] = []) throws -> HTTPResponse {
            try DashboardTests.post(app, path, [("csrf", token)] + fields, cookie: cookie)
        }
    }

    static func session(_ app: MockBackendApp) throws -> Session {
        let cookie = try signIn(app)
        return Session(cookie: cookie, token: try formToken(app, cookie: cookie))
    }

    // MARK: Signing in

    @Test("GET / redirects; without a cookie the sign-in form; a wrong token is refused (401, the form and the reason, no cookie touched); the right one starts a session: a signed value, not the token, in an HttpOnly SameSite=Strict cookie for /_dashboard with a 12-hour Max-Age")
    func signingIn() async throws {
        try await withApp { app, _ in
            let root = try app.request("GET", "/")
            #expect(root.status == 303 && root.headers["Location"] == "/_dashboard")

            let anonymous = try Self.page(app, cookie: nil)
            #expect(anonymous.status == 200 && anonymous.headers["Content-Type"] == "text/html; charset=utf-8")
            #expect(try anonymous.text().contains(#"action="/_dashboard/login""#) && !(try anonymous.text().contains(#"id="licenses""#)))

            for wrong in ["", "nope", app.adminToken + "x", String(app.adminToken.dropLast())] {
                let refused = try Self.post(app, "/_dashboard/login", [("token", wrong)], cookie: nil)
                #expect(refused.status == 401, "token \(wrong)")
                #expect(try refused.text().contains(#"action="/_dashboard/login""#))
                #expect(try refused.text().contains(wrong.isEmpty ? "The dashboard needs the admin token" : "That is not this server&#39;s admin token"))
                #expect(refused.headers.values(for: "Set-Cookie").isEmpty, "a refused sign-in leaves any session alone")
            }

            let before = Date()
            let accepted = try Self.post(app, "/_dashboard/login", [("token", app.adminToken)], cookie: nil)
            #expect(accepted.status == 303 && accepted.headers["Location"] == "/_dashboard")
            let cookie = try #require(Self.setCookie(accepted, "mock_admin"))
            #expect(cookie.attributes == ["Path=/_dashboard", "HttpOnly", "SameSite=Strict", "Max-Age=43200"], "no Secure over plain HTTP")
            // EXPIRY.NONCE.MAC: never the token, nor anything made only from it.
            let value = String(cookie.pair.dropFirst("mock_admin=".count))
            #expect(!value.contains(app.adminToken) && value != app.adminToken)
            let parts = value.split(separator: ".").map(String.init)
            try #require(parts.count == 3, "\(value)")
            let expiry = try #require(TimeInterval(parts[0]))
            #expect(expiry >= (before.timeIntervalSince1970 + 43200).rounded(.down) && expiry <= Date().timeIntervalSince1970 + 43200)
            #expect(parts[1].count == 32 && parts[2].count == 64 && (parts[1] + parts[2]).allSatisfy(\.isHexDigit))
            let second = try Self.signIn(app)
            #expect(second != cookie.pair, "every sign-in a new session")

            let signedIn = try Self.page(app, cookie: cookie.pair)
            #expect(signedIn.status == 200)
            let html = try signedIn.text()
            for section in ["clock", "faults", "requests", "licenses", "catalog", "devices"] {
                #expect(html.contains(#"<section id="\#(section)""#), "section \(section)")
            }
            let policy = try #require(signedIn.headers["Content-Security-Policy"])
            #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'sha256-") && !policy.contains("unsafe-inline"))
            #expect(signedIn.headers["Cache-Control"] == "no-store" && signedIn.headers["X-Frame-Options"] == "DENY")

            // The admin token itself as the cookie (what the cookie used to hold), a forged MAC, another
            // server's session: the form again, 401, the dead cookie removed.
            let otherKey = DashboardSession.key(adminToken: "another-server-admin-token")
            for stale in [app.adminToken, parts[0] + "." + parts[1] + "." + String(repeating: "0", count: 64),
                          DashboardSession.start(now: Date(), key: otherKey).value] {
                let refused = try Self.page(app, cookie: "mock_admin=\(stale)")
                #expect(try refused.status == 401 && refused.text().contains("sign in again"), "\(stale)")
                #expect(Self.setCookie(refused, "mock_admin")?.attributes.contains("Max-Age=0") == true)
            }
        }
    }

    @Test("over HTTPS (or behind an HTTPS public base URL) the session and flash cookies are Secure")
    func secureCookies() async throws {
        try await withApp { app, _ in
            let cookie = try Self.signIn(app, secure: true)
            let login = try Self.post(app, "/_dashboard/login", [("token", app.adminToken)], cookie: nil, secure: true)
            #expect(Self.setCookie(login, "mock_admin")?.attributes == ["Path=/_dashboard", "HttpOnly", "SameSite=Strict", "Max-Age=43200", "Secure"])
            #expect(try Self.page(app, cookie: cookie, secure: true).status == 200)
            let token = try Self.formToken(app, cookie: cookie)
            let moved = try Self.post(app, "/_dashboard/clock", [("csrf", token), ("offset", "60")], cookie: cookie, secure: true)
            #expect(moved.status == 303 && Self.setCookie(moved, "mock_flash")?.attributes.last == "Secure")
        }
        try await withTemporaryDirectory { directory in
            // Plain HTTP behind a proxy that serves the public base URL over HTTPS.
            let proxied = try MockBackendApp(configuration: BackendConfiguration(dataDirectory: directory),
                                             baseURL: "https://mock.team.example", logger: quietLogger)
            let login = try Self.post(proxied, "/_dashboard/login", [("token", proxied.adminToken)], cookie: nil)
            #expect(Self.setCookie(login, "mock_admin")?.attributes.last == "Secure")
        }
    }

    @Test("signing out ends the session: the same cookie replayed is refused by the page, every form and the event stream")
    func signOutEndsTheSession() async throws {
        try await withApp { app, _ in
            let session = try Self.session(app)
            let other = try Self.session(app)
            // Without the form token (another page's post), nothing ends.
            let forged = try Self.post(app, "/_dashboard/logout", [], cookie: session.cookie)
            #expect(forged.status == 403 && Self.setCookie(forged, "mock_admin") == nil)
            #expect(try Self.page(app, cookie: session.cookie).status == 200)

            let signOut = try session.post(app, "/_dashboard/logout")
            #expect(signOut.status == 303 && signOut.headers["Location"] == "/_dashboard")
            #expect(Self.setCookie(signOut, "mock_admin")?.pair == "mock_admin=" && Self.setCookie(signOut, "mock_admin")?.attributes.contains("Max-Age=0") == true)

            // A copy of the cookie kept from before: refused everywhere.
            let replayed = try Self.page(app, cookie: session.cookie)
            #expect(try replayed.status == 401 && replayed.text().contains("sign in again"))
            let form = try session.post(app, "/_dashboard/clock", [("offset", "3600")])
            #expect(form.status == 401 && app.clock.offset == 0)
            try expectError(try app.request("GET", "/_dashboard/requests/stream", headers: [("Cookie", session.cookie)]),
                            401, "UNAUTHORIZED", "INVALID_ADMIN_TOKEN")
            // Another session goes on.
            #expect(try Self.page(app, cookie: other.cookie).status == 200)
            #expect(try other.post(app, "/_dashboard/clock", [("offset", "60")]).status == 303 && app.clock.offset == 60)
        }
    }

    @Test("a session ends after 12 hours of real time; moving the mock's clock by days does not end it")
    func sessionLifetime() async throws {
        try await withApp { app, _ in
            let key = DashboardSession.key(adminToken: app.adminToken)
            let expired = DashboardSession.start(now: Date().addingTimeInterval(-DashboardSession.lifetime - 1), key: key).value
            #expect(try Self.page(app, cookie: "mock_admin=\(expired)").status == 401)
            let almost = DashboardSession.start(now: Date().addingTimeInterval(-DashboardSession.lifetime + 120), key: key).value
            #expect(try Self.page(app, cookie: "mock_admin=\(almost)").status == 200)
            // Forged far into the future: a MAC by this key never says more than 12 hours.
            let session = DashboardSession.Session(expiresAt: Date().addingTimeInterval(30 * 86400), nonce: String(repeating: "ab", count: 16))
            #expect(try Self.page(app, cookie: "mock_admin=\(DashboardSession.value(of: session, key: key))").status == 401)

            let fresh = try Self.session(app)
            #expect(try fresh.post(app, "/_dashboard/clock", [("advance", "30d")]).status == 303)
            #expect(app.clock.offset == 30 * 86400)
            #expect(try Self.page(app, cookie: fresh.cookie).status == 200)
        }
    }

    @Test("a post from another site (no cookie under SameSite=Strict, or Sec-Fetch-Site cross-site) answers 403, changes nothing and leaves the real session's cookie alone")
    func crossSitePosts() async throws {
        try await withApp { app, _ in
            let session = try Self.session(app)
            let posts: [(String, [(String, String)])] = [
                ("/_dashboard/clock", [("offset", "3600")]), ("/_dashboard/logout", []), ("/_dashboard/faults", [("status", "503")]),
            ]
            for (path, fields) in posts {
                // What a browser sends from another site: no SameSite=Strict cookie.
                let withoutCookie = try Self.post(app, path, [("csrf", session.token)] + fields, cookie: nil,
                                                  headers: [("Sec-Fetch-Site", "cross-site"), ("Origin", "https://evil.example")])
                #expect(withoutCookie.status == 403, "\(path)")
                #expect(withoutCookie.headers.values(for: "Set-Cookie").isEmpty, "\(path) must not clear the session cookie")
                let bare = try Self.post(app, path, [("csrf", session.token)] + fields, cookie: nil)
                #expect(bare.status == 403 && bare.headers.values(for: "Set-Cookie").isEmpty, "\(path) without a cookie")
                // Another port of localhost is the same site: the cookie comes along; the browser says where from.
                for site in ["same-site", "cross-site"] {
                    let sameSite = try Self.post(app, path, [("csrf", session.token)] + fields, cookie: session.cookie, headers: [("Sec-Fetch-Site", site)])
                    #expect(sameSite.status == 403 && sameSite.headers.values(for: "Set-Cookie").isEmpty, "\(path) from \(site)")
                }
            }
            let login = try Self.post(app, "/_dashboard/login", [("token", app.adminToken)], cookie: nil, headers: [("Sec-Fetch-Site", "cross-site")])
            #expect(login.status == 403 && login.headers.values(for: "Set-Cookie").isEmpty)
            #expect(app.clock.offset == 0 && app.faults.rules.isEmpty)
            #expect(try Self.page(app, cookie: session.cookie).status == 200, "the real session still holds")
            // The browser's own page says same-origin: accepted.
            let own = try Self.post(app, "/_dashboard/clock", [("csrf", session.token), ("offset", "60")], cookie: session.cookie,
                                    headers: [("Sec-Fetch-Site", "same-origin")])
            #expect(own.status == 303 && app.clock.offset == 60)
        }
    }

    @Test("instances sharing a store and an admin token accept each other's sessions, and a sign-out on one ends it on all", arguments: StoreKind.allCases)
    func sessionsAcrossInstances(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let first = try makeApp()
            let second = try makeApp()
            #expect(first.adminToken == second.adminToken)
            let session = try Self.session(first)
            #expect(try Self.page(second, cookie: session.cookie).status == 200)
            #expect(try session.post(second, "/_dashboard/logout").status == 303)
            #expect(try Self.page(first, cookie: session.cookie).status == 401)
            #expect(try Self.page(second, cookie: session.cookie).status == 401)
            // A restarted instance still refuses it.
            let third = try makeApp()
            #expect(try Self.page(third, cookie: session.cookie).status == 401)
        }
    }

    @Test("without the session cookie every form is refused (403, the sign-in form; a dead cookie: 401) and the event stream answers 401; nothing changes")
    func cookieRequired() async throws {
        try await withApp { app, _ in
            let token = try Self.session(app).token
            let forms: [(String, [(String, String)])] = [
                ("/_dashboard/clock", [("offset", "3600")]),
                ("/_dashboard/faults", [("route", "segment"), ("status", "503")]),
                ("/_dashboard/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)", [("name", "Changed")]),
                ("/_dashboard/licenses/any/revoke", []),
                ("/_dashboard/faults/rule-1/delete", []),
            ]
            for (path, fields) in forms {
                for (cookie, status) in [(nil, 403), ("mock_admin=wrong", 401), ("mock_admin=\(app.adminToken)", 401), ("other=\(app.adminToken)", 403)] {
                    let refused = try Self.post(app, path, [("csrf", token)] + fields, cookie: cookie)
                    #expect(refused.status == status, "\(path) with \(cookie ?? "no cookie")")
                    #expect(try refused.text().contains(#"action="/_dashboard/login""#))
                }
                // The admin API's header is not the dashboard's sign-in.
                let header = try app.request("POST", path, headers: [("Authorization", "Bearer \(app.adminToken)")], body: Self.form([("csrf", token)] + fields))
                #expect(header.status == 403)
            }
            #expect(app.clock.offset == 0 && app.faults.rules.isEmpty)
            #expect(try app.video(Fixture.clearVideo).name == "Color Bars (clear)")

            try expectError(try app.request("GET", "/_dashboard/requests/stream"), 401, "UNAUTHORIZED", "ADMIN_TOKEN_REQUIRED")
            try expectError(try app.request("GET", "/_dashboard/requests/stream", headers: [("Cookie", "mock_admin=nope")]),
                            401, "UNAUTHORIZED", "INVALID_ADMIN_TOKEN")
        }
    }

    @Test("a form without its session's form token (missing, another session's, another server's, cut short) is refused with 403 and changes nothing")
    func formTokenRequired() async throws {
        try await withApp { app, _ in
            let cookie = try Self.signIn(app)
            let token = try Self.formToken(app, cookie: cookie)
            let key = DashboardSession.key(adminToken: app.adminToken)
            let value = try #require(DashboardSession.cookies(try HTTPRequest(method: "GET", target: "/", headers: HTTPHeaders([("Cookie", cookie)])))["mock_admin"])
            let session = try #require(DashboardSession.session(from: value, key: key, now: Date()))
            #expect(token == DashboardSession.formToken(for: session, key: key) && token.count == 64)
            let otherSession = try Self.session(app)
            #expect(otherSession.token != token, "each session its own form token")
            let otherServer = DashboardSession.formToken(for: session, key: DashboardSession.key(adminToken: "another-server-admin-token"))
            for wrong in [nil, "", otherSession.token, otherServer, String(token.dropLast()), token.uppercased()] {
                let fields = (wrong.map { [("csrf", $0)] } ?? []) + [("offset", "3600")]
                let refused = try Self.post(app, "/_dashboard/clock", fields, cookie: cookie)
                #expect(refused.status == 403, "form token \(wrong ?? "missing")")
                #expect(try refused.text().contains("form token is missing or wrong"))
                let fault = try Self.post(app, "/_dashboard/faults", (wrong.map { [("csrf", $0)] } ?? []) + [("status", "503")], cookie: cookie)
                #expect(fault.status == 403)
            }
            #expect(app.clock.offset == 0 && app.faults.rules.isEmpty)
        }
    }

    // MARK: Forms

    @Test("the clock form: an offset in seconds or as a duration, +1h/+1d/+30d, reset; refusals in words, the admin API's for the range")
    func clockForm() async throws {
        try await withApp { app, _ in
            let session = try Self.session(app)
            let set = try session.post(app, "/_dashboard/clock", [("offset", "3600")])
            #expect(set.headers["Location"] == "/_dashboard#clock")
            #expect(try Self.flash(set).isError == false && app.clock.offset == 3600)
            _ = try session.post(app, "/_dashboard/clock", [("advance", "86400")])
            #expect(app.clock.offset == 90000)
            _ = try session.post(app, "/_dashboard/clock", [("advance", "2592000")])
            #expect(app.clock.offset == 90000 + 2_592_000)
            _ = try session.post(app, "/_dashboard/clock", [("offset", "-2h 30m")])
            #expect(app.clock.offset == -9000)
            #expect(try Self.page(app, cookie: session.cookie).text().contains("offset -2h 30m"))

            let soon = try Self.flash(try session.post(app, "/_dashboard/clock", [("offset", "soon")]))
            #expect(soon.isError && soon.message.hasPrefix("Give the offset in seconds"))
            let tooFar = try Self.flash(try session.post(app, "/_dashboard/clock", [("offset", "1e20")]))
            let admin = try app.request("POST", "/_admin/v1/clock", body: Array(#"{"offset_seconds": 1e20}"#.utf8))
            #expect(try tooFar.isError && tooFar.message == Self.adminMessage(admin))
            #expect(app.clock.offset == -9000, "refusals change nothing")

            _ = try session.post(app, "/_dashboard/clock", [("offset", "0")])
            #expect(app.clock.offset == 0)
        }
    }

    @Test("the fault form adds a rule the admin API lists and the page shows with its hits; remove takes it away; refusals are the admin API's sentences")
    func faultForm() async throws {
        try await withApp { app, _ in
            let session = try Self.session(app)
            let added = try session.post(app, "/_dashboard/faults", [("route", "playback_api"), ("path", ""), ("status", "503"),
                                                                    ("probability", ""), ("latency_ms", ""), ("times", "2")])
            #expect(added.headers["Location"] == "/_dashboard#faults")
            #expect(try Self.flash(added) == DashboardSession.Flash(isError: false, message: "Fault rule rule-1 added"))
            #expect(app.faults.rules.map(\.rule) == [FaultRule(id: "rule-1", route: .playbackAPI, times: 2, status: 503)])
            let listed = try app.request("GET", "/_admin/v1/faults").text()
            #expect(listed.contains(#""id":"rule-1""#))

            // The rule takes a request; the page counts it.
            try expectError(try app.playback("/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)"), 503, "SERVER_ERROR", "FAULT_INJECTED")
            let html = try Self.page(app, cookie: session.cookie).text()
            #expect(html.contains(#"<tr data-rule-id="rule-1">"#) && html.contains(#"<td class="num hits">1</td><td class="num left">1</td>"#))

            // Refused as the admin API refuses.
            let noEffect = try Self.flash(try session.post(app, "/_dashboard/faults", [("route", "segment")]))
            let adminNoEffect = try app.request("POST", "/_admin/v1/faults", body: Array(#"{"route": "segment"}"#.utf8))
            #expect(try noEffect.isError && noEffect.message == Self.adminMessage(adminNoEffect))
            let badProbability = try Self.flash(try session.post(app, "/_dashboard/faults", [("status", "503"), ("probability", "2")]))
            let adminBadProbability = try app.request("POST", "/_admin/v1/faults", body: Array(#"{"status": 503, "probability": 2}"#.utf8))
            #expect(try badProbability.isError && badProbability.message == Self.adminMessage(adminBadProbability))
            let notANumber = try Self.flash(try session.post(app, "/_dashboard/faults", [("status", "five hundred")]))
            #expect(notANumber == DashboardSession.Flash(isError: true, message: "status must be a whole number"))
            #expect(app.faults.rules.count == 1)

            let removed = try session.post(app, "/_dashboard/faults/rule-1/delete")
            #expect(try Self.flash(removed) == DashboardSession.Flash(isError: false, message: "Fault rule rule-1 removed"))
            #expect(app.faults.rules.isEmpty)
            let again = try Self.flash(try session.post(app, "/_dashboard/faults/rule-1/delete"))
            let adminAgain = try app.request("DELETE", "/_admin/v1/faults/rule-1")
            #expect(try again.isError && again.message == Self.adminMessage(adminAgain))
        }
    }

    @Test("licenses show their state and expiry on the server's clock; the revoke form revokes as the admin API does")
    func licensesAndRevoke() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app, videoID: Fixture.fairPlayVideo)
            let rentalEnd = app.clock.now().addingTimeInterval(3600)
            let rental = try client.license(headers: LicenseTestClient.offline(LicenseProfile(.rental(absoluteExpiration: rentalEnd, playDuration: nil))))
            let purchase = try client.license(device: "device-2")
            let session = try Self.session(app)

            var html = try Self.page(app, cookie: session.cookie).text()
            let expires = try #require(rental.terms.expiresAt)
            #expect(html.contains(#"<tr data-license-id="\#(rental.terms.licenseID)">"#))
            #expect(html.contains(#"data-expires="\#(Int((expires.timeIntervalSince1970 * 1000).rounded()))""#))
            #expect(html.contains(#"data-state="active">active</span>"#))
            #expect(html.contains("Color Bars (FairPlay, to buy)"), "the license's video by name")

            // Past the rental's end on the server's clock, the page says so.
            try app.setClockOffset(7200)
            html = try Self.page(app, cookie: session.cookie).text()
            let rentalRow = try #require(html.components(separatedBy: #"<tr data-license-id="\#(rental.terms.licenseID)">"#).last?
                .components(separatedBy: "</tr>").first)
            #expect(rentalRow.contains(#"data-state="expired""#) && rentalRow.contains("expired 1h ago"))
            try app.setClockOffset(0)

            let revoked = try session.post(app, "/_dashboard/licenses/\(purchase.terms.licenseID)/revoke")
            #expect(revoked.headers["Location"] == "/_dashboard#licenses")
            #expect(try Self.flash(revoked).isError == false)
            let shown = try app.request("GET", "/_admin/v1/licenses/\(purchase.terms.licenseID)").text()
            #expect(shown.contains(#""state":"revoked""#) && shown.contains(#""event":"revoke""#))
            html = try Self.page(app, cookie: session.cookie).text()
            let purchaseRow = try #require(html.components(separatedBy: #"<tr data-license-id="\#(purchase.terms.licenseID)">"#).last?
                .components(separatedBy: "</tr>").first)
            #expect(purchaseRow.contains(#"data-state="revoked""#) && !purchaseRow.contains("Revoke</button>"))

            let unknown = try Self.flash(try session.post(app, "/_dashboard/licenses/nope/revoke"))
            let adminUnknown = try app.request("POST", "/_admin/v1/licenses/nope/revoke")
            #expect(try unknown.isError && unknown.message == Self.adminMessage(adminUnknown))
        }
    }

    @Test("the video form renames and sets offline_enabled through the admin API's save path; names are escaped on the page and in the flash")
    func videoFormAndEscaping() async throws {
        try await withApp { app, _ in
            let session = try Self.session(app)
            let hostile = "<script>alert(1)</script>"
            let path = "/_dashboard/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)"
            // As a browser sends an unchecked box: only the hidden "false".
            let saved = try session.post(app, path, [("name", hostile), ("offline_enabled", "false")])
            #expect(saved.headers["Location"] == "/_dashboard#catalog")
            let flash = try Self.flash(saved)
            #expect(!flash.isError && flash.message.contains(hostile))
            let video = try app.video(Fixture.clearVideo)
            #expect(video.name == hostile && video.offlineEnabled == false)
            #expect(try app.request("GET", "/_admin/v1/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)").text()
                .contains(#""offline_enabled":false"#))

            // The flash and the catalog both carry the name: escaped, never markup.
            let flashPair = try #require(Self.setCookie(saved, "mock_flash")).pair
            let html = try Self.page(app, cookie: "\(session.cookie); \(flashPair)").text()
            #expect(!html.contains(hostile))
            #expect(html.contains(#"value="&lt;script&gt;alert(1)&lt;/script&gt;""#))
            #expect(html.contains(#"id="flash">Video \#(Fixture.clearVideo) saved: “&lt;script&gt;alert(1)&lt;/script&gt;”"#))
            #expect(html.components(separatedBy: "<script").count == 2, "only the page's own script")

            // Checked again: the hidden "false" then the checkbox's "true".
            _ = try session.post(app, path, [("name", "Back"), ("offline_enabled", "false"), ("offline_enabled", "true")])
            #expect(try app.video(Fixture.clearVideo).offlineEnabled == true && (try app.video(Fixture.clearVideo).name) == "Back")

            let missing = try Self.flash(try session.post(app, "/_dashboard/accounts/\(Fixture.northwind)/videos/nope", [("name", "x")]))
            let adminMissing = try app.request("PATCH", "/_admin/v1/accounts/\(Fixture.northwind)/videos/nope", body: Array(#"{"name":"x"}"#.utf8))
            #expect(try missing.isError && missing.message == Self.adminMessage(adminMissing))
            let otherAccount = try Self.flash(try session.post(app, "/_dashboard/accounts/\(Fixture.contoso)/videos/\(Fixture.clearVideo)", [("name", "x")]))
            #expect(otherAccount.isError)
        }
    }

    @Test("the page shows every account's videos with the Playback API's thumbnail, protection and offline_enabled, the clock and the request log")
    func pageContents() async throws {
        try await withApp { app, _ in
            let session = try Self.session(app)
            let html = try Self.page(app, cookie: session.cookie).text()
            #expect(html.contains("Northwind Media") && html.contains("Contoso Studios"))
            for id in Fixture.northwindVideos + [Fixture.contosoClearVideo] {
                let wire = try app.video(id, account: id == Fixture.contosoClearVideo ? Fixture.contoso : Fixture.northwind,
                                         key: id == Fixture.contosoClearVideo ? Fixture.contosoSearchKey : Fixture.northwindSearchKey)
                let thumbnail = try app.target(of: try #require(wire.thumbnail))
                #expect(html.contains(#"src="\#(thumbnail)""#), "thumbnail of \(id)")
                let row = try #require(html.components(separatedBy: #"<tr data-video-id="\#(id)">"#).last?.components(separatedBy: "</tr>").first)
                #expect(row.contains(wire.offlineEnabled ? " checked>" : "\"true\" form=\"video-\(id)\">"), "offline_enabled of \(id)")
                let image = try app.request("GET", thumbnail)
                #expect(image.status == 200 && image.headers["Content-Type"] == "image/jpeg")
            }
            #expect(html.contains(#"<span class="badge fairplay">fairplay</span>"#) && html.contains(#"<span class="badge aes128">aes128</span>"#))
            #expect(html.contains(#"id="server-clock""#) && html.contains("offset none"))
            #expect(html.contains(#"<tbody id="request-rows" data-after="0">"#))
        }
    }

    // MARK: Pieces

    @Test("HTML escapes every interpolated string, and only strings: markup fragments go in as they are")
    func escaping() {
        #expect(HTML.escape(#"<a href="x" title='y'>&amp;</a>"#) == "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;")
        let name = "\"><img src=x onerror=alert(1)>"
        let fragment: HTML = "<b>\(name)</b>"
        let page: HTML = "<p title=\"\(name)\">\(fragment)\(7)</p>"
        #expect(page.text == "<p title=\"&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\"><b>&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</b>7</p>")
    }

    @Test("clock offsets from the form: seconds or d/h/m/s durations with a sign, anything else nil; offsets and spans written back")
    func offsets() {
        #expect(DashboardFormat.seconds("3600") == 3600 && DashboardFormat.seconds("-90.5") == -90.5)
        #expect(DashboardFormat.seconds("+1h") == 3600 && DashboardFormat.seconds("30d") == 2_592_000)
        #expect(DashboardFormat.seconds("-1d 12h") == -129_600 && DashboardFormat.seconds(" 1h30m ") == 5400)
        for bad in ["", "h", "1x", "1h 2", "--1", "1 h", "nan", "inf"] { #expect(DashboardFormat.seconds(bad) == nil, "\(bad)") }
        #expect(DashboardFormat.offset(0) == "none" && DashboardFormat.offset(90000) == "+1d 1h" && DashboardFormat.offset(-9000) == "-2h 30m")
        #expect(DashboardFormat.offset(61.5) == "+1m 1.500s" && DashboardFormat.offset(86400 + 300) == "+1d 0h 5m")
        #expect(DashboardFormat.offset(-30 * 86400) == "-30d" && DashboardFormat.offset(0.25) == "+0.250s")
        #expect(DashboardFormat.span(3600) == "1h" && DashboardFormat.span(3661) == "1h 1m" && DashboardFormat.span(-59.9) == "59s")
        #expect(DashboardFormat.span(2 * 86400 + 5 * 3600 + 7) == "2d 5h" && DashboardFormat.span(61) == "1m 1s")
    }

    // MARK: Live

    @Test("the page's event stream is the admin API's request log, signed in by the cookie, and resumes after Last-Event-ID")
    func liveStream() async throws {
        try await withLiveServer { server in
            let cookie = try Self.signIn(server.app)
            let follower = try RunningProcess("/usr/bin/curl", ["-sS", "-N", "-H", "Cookie: \(cookie)",
                                                                server.baseURL + "/_dashboard/requests/stream?path_prefix=/playback"])
            #expect(try await eventually { server.activeRequests >= 1 })
            _ = try await server.fetchVideo(Fixture.clearVideo, key: Fixture.northwindPlayKey)
            _ = try await Curl.fetch(server.baseURL + "/playback/v1/accounts/\(Fixture.northwind)/videos/nope")
            #expect(try await follower.waitForOutput { completeServerSentEvents($0, type: "request").count == 2 })
            let events = completeServerSentEvents(follower.stdoutSoFar, type: "request").joined(separator: "\n\n")
            #expect(events.contains(#""status":200"#) && events.contains(#""status":401"#))
            follower.kill(SIGTERM)
            _ = await follower.wait()

            // Reconnecting with Last-Event-ID: only what came after it.
            let firstID = try #require(server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/playback")).first?.id)
            let resumed = try RunningProcess("/usr/bin/curl", ["-sS", "-N", "-H", "Cookie: \(cookie)", "-H", "Last-Event-ID: \(firstID)",
                                                               server.baseURL + "/_dashboard/requests/stream?path_prefix=/playback"])
            #expect(try await resumed.waitForOutput { !completeServerSentEvents($0, type: "request").isEmpty })
            let after = completeServerSentEvents(resumed.stdoutSoFar, type: "request")
            #expect(after.count == 1, "\(resumed.stdoutSoFar)")
            #expect(after.first?.contains(#""status":401"#) == true && after.first?.contains("id: \(firstID)\n") == false)
            resumed.kill(SIGTERM)
            _ = await resumed.wait()

            let refused = try await Curl.fetch(server.baseURL + "/_dashboard/requests/stream")
            #expect(refused.status == 401)
        }
    }
}
