import Foundation
import MicroHTTP
import WireModels

/// The dashboard: `/_dashboard`, an HTML page of what the backend holds (catalog, licenses,
/// devices, clock, fault rules, the request log live), behind a session the admin token opens
/// (`DashboardSession`: its lifetime runs on the real clock, `Date()`, never the mock's).
///
/// Every form answers 303 back to the page with a flash message. Each calls the very function
/// the admin API's handler calls (`setClockOffset`, `addFaultRules`, `removeFaultRule`,
/// `revokeLicense`, `saveItem`), so a refusal is the admin API's own sentence. The event
/// stream is the admin API's (`requestLogStream`), authorized by the cookie instead of a
/// header, since `EventSource` cannot send one.
extension MockBackendApp {
    static func addDashboardRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/") { _, _, _ in dashboardRedirect("/_dashboard") }
        router.add(["GET"], "/_dashboard") { app, request, _ in try app.dashboard(request) }
        router.add(["POST"], "/_dashboard/login") { app, request, _ in app.dashboardSignIn(request) }
        router.add(["POST"], "/_dashboard/logout") { app, request, _ in try app.dashboardSignOut(request) }
        router.add(["GET"], "/_dashboard/requests/stream") { app, request, _ in
            switch try DashboardSession.signIn(request, app: app, now: Date()) {
            case .none:
                throw HTTPError(401, "UNAUTHORIZED", "ADMIN_TOKEN_REQUIRED", "The dashboard's event stream needs its sign-in cookie: sign in at /_dashboard")
            case .invalid:
                throw HTTPError(401, "UNAUTHORIZED", "INVALID_ADMIN_TOKEN", Self.endedSession)
            case .valid:
                var filter = try requestFilter(request)
                // A reconnecting EventSource says where it stopped.
                if let last = request.headers["Last-Event-ID"].flatMap(Int.init), last >= 0 { filter.after = last }
                return try app.requestLogStream(filter)
            }
        }
        router.add(["POST"], "/_dashboard/clock") { app, request, _ in
            try app.dashboardForm(request, section: "clock") { form throws(CatalogEditError) in
                if let advance = form.nonBlank("advance") {
                    guard let seconds = DashboardFormat.seconds(advance) else { throw Self.offsetRefusal }
                    try app.setClockOffset(app.clock.offset + seconds)
                } else {
                    guard let seconds = form.nonBlank("offset").flatMap(DashboardFormat.seconds) else { throw Self.offsetRefusal }
                    try app.setClockOffset(seconds)
                }
                return "Clock offset \(DashboardFormat.offset(app.clock.offset)): now \(DashboardFormat.time(app.clock.now()))"
            }
        }
        router.add(["POST"], "/_dashboard/faults") { app, request, _ in
            try app.dashboardForm(request, section: "faults") { form throws(CatalogEditError) in
                let rule = try Self.faultRule(form)
                let added = try app.addFaultRules([rule])
                return "Fault rule \(added.first?.rule.id ?? "") added"
            }
        }
        router.add(["POST"], "/_dashboard/faults/:id/delete") { app, request, p in
            try app.dashboardForm(request, section: "faults") { _ throws(CatalogEditError) in
                try app.removeFaultRule(id: p["id"])
                return "Fault rule \(p["id"]) removed"
            }
        }
        router.add(["POST"], "/_dashboard/licenses/:license/revoke") { app, request, p in
            try app.dashboardForm(request, section: "licenses") { _ throws(CatalogEditError) in
                let license = try app.revokeLicense(id: p["license"])
                return "License \(license.id) revoked: its next renewal or first play is refused"
            }
        }
        router.add(["POST"], "/_dashboard/accounts/:account/videos/:video") { app, request, p in
            try app.dashboardForm(request, section: "catalog") { form throws(CatalogEditError) in
                var patch: [String: Any] = [:]
                if let name = form.value("name") { patch["name"] = name }
                if let offline = form.value("offline_enabled") { patch["offline_enabled"] = offline == "true" || offline == "on" }
                let video = try app.saveItem(CatalogFile.Video.self, account: p["account"], id: p["video"], body: patch, mode: .patch)
                return "Video \(video.id) saved: “\(video.name)”, offline_enabled \(video.offlineEnabled)"
            }
        }
    }

    private static let offsetRefusal = CatalogEditError(.invalid, "INVALID_OFFSET",
                                                        "Give the offset in seconds (3600, -90) or as a duration (90m, 2h, +30d, -1d 12h)")
    private static let endedSession = "Your dashboard session has ended (signed out, past its 12 hours, or the server's admin token changed): sign in again"
    private static let crossOrigin = "This form came from another page than this server's dashboard (Sec-Fetch-Site); nothing was changed"

    /// A fault rule from the form's fields; a field that is not a number is refused here,
    /// everything else by `addFaultRules`, as in the admin API.
    private static func faultRule(_ form: FormFields) throws(CatalogEditError) -> FaultRule {
        func number<T: LosslessStringConvertible>(_ field: String, _: T.Type, _ what: String) throws(CatalogEditError) -> T? {
            guard let text = form.nonBlank(field) else { return nil }
            guard let value = T(text) else { throw CatalogEditError(.invalid, "INVALID_RULE", "\(field) must be \(what)") }
            return value
        }
        var route: RouteClass?
        if let name = form.nonBlank("route") {
            guard let known = RouteClass(rawValue: name) else {
                throw CatalogEditError(.invalid, "INVALID_RULE", "route must be one of \(RouteClass.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            route = known
        }
        return FaultRule(route: route, path: form.nonBlank("path"), probability: try number("probability", Double.self, "a number from 0 to 1"),
                         times: try number("times", Int.self, "a whole number"), latencyMs: try number("latency_ms", Int.self, "a whole number"),
                         status: try number("status", Int.self, "a whole number"))
    }

    // MARK: Pages

    private func dashboard(_ request: HTTPRequest) throws -> HTTPResponse {
        switch try DashboardSession.signIn(request, app: self, now: Date()) {
        case .none: return dashboardSignInPage(request, message: nil, status: 200)
        case .invalid: return dashboardSignInPage(request, message: Self.endedSession, status: 401, clearCookie: true)
        case .valid(let session):
            let flashValue = DashboardSession.cookies(request)[DashboardSession.flashCookie]
            var response = dashboardPageResponse(session, flash: flashValue.flatMap(DashboardSession.Flash.init(cookieValue:)), status: 200)
            if flashValue != nil {
                response.headers.add("Set-Cookie", DashboardSession.setCookie(DashboardSession.flashCookie, "", maxAge: 0, secure: isHTTPSPage(request)))
            }
            return response
        }
    }

    /// Signs in: the admin token (compared by `isAdminToken`) starts a session. A refusal sets
    /// no cookie: a session already held stays.
    private func dashboardSignIn(_ request: HTTPRequest) -> HTTPResponse {
        if DashboardSession.isCrossOrigin(request) { return dashboardSignInPage(request, message: Self.crossOrigin, status: 403) }
        guard let token = FormFields(request.body)?.value("token")?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
            return dashboardSignInPage(request, message: "The dashboard needs the admin token: mock-backend prints it at start (admin token …)", status: 401)
        }
        guard isAdminToken(token) else { return dashboardSignInPage(request, message: "That is not this server's admin token", status: 401) }
        let started = DashboardSession.start(now: Date(), key: DashboardSession.key(adminToken: adminToken))
        var response = Self.dashboardRedirect("/_dashboard")
        response.headers.add("Set-Cookie", DashboardSession.setCookie(DashboardSession.cookie, started.value,
                                                                      maxAge: Int(DashboardSession.lifetime), secure: isHTTPSPage(request)))
        return response
    }

    /// Signs out: the session ends in the store (every instance refuses it from now on, a
    /// copied cookie too) and the cookie is removed. Like any form: from this server's page, with
    /// its form token; without a session (a post from another site carries no cookie), 403 and
    /// nothing removed.
    private func dashboardSignOut(_ request: HTTPRequest) throws -> HTTPResponse {
        try dashboardPost(request) { session, _ in
            try store.endDashboardSession(nonce: session.nonce, expiresAt: session.expiresAt, now: Date())
            var response = Self.dashboardRedirect("/_dashboard")
            response.headers.add("Set-Cookie", DashboardSession.setCookie(DashboardSession.cookie, "", maxAge: 0, secure: isHTTPSPage(request)))
            return response
        }
    }

    /// Runs a form: signed in (else the sign-in form, and nothing changed), with the session's
    /// form token (else the page and a 403; nothing changed), then `action`; answers 303 back to
    /// the page's `section` with what was done or the refusal in the flash cookie.
    private func dashboardForm(_ request: HTTPRequest, section: String,
                               _ action: (FormFields) throws(CatalogEditError) -> String) throws -> HTTPResponse {
        try dashboardPost(request) { _, form in
            let flash: DashboardSession.Flash
            do throws(CatalogEditError) {
                flash = DashboardSession.Flash(isError: false, message: try action(form))
            } catch {
                flash = DashboardSession.Flash(isError: true, message: error.message)
            }
            var response = Self.dashboardRedirect("/_dashboard#\(section)")
            // Browsers drop cookies over 4 KiB: a message that long (it may echo what was sent) is cut.
            var message = flash.cookieValue
            while URLToken.percentEncode(message).utf8.count > 3000 { message = String(message.dropLast(message.count / 4 + 1)) }
            response.headers.add("Set-Cookie", DashboardSession.setCookie(DashboardSession.flashCookie, message, maxAge: 60, secure: isHTTPSPage(request)))
            return response
        }
    }

    /// The checks every post behind the session passes, in order: not from another origin
    /// (403), a session cookie (none: 403, as a post from another site arrives, and the cookie
    /// the browser holds is left alone), a session that holds (else 401 and the dead cookie
    /// removed), the session's form token (403); then `action`.
    private func dashboardPost(_ request: HTTPRequest,
                               _ action: (DashboardSession.Session, FormFields) throws -> HTTPResponse) throws -> HTTPResponse {
        if DashboardSession.isCrossOrigin(request) { return dashboardSignInPage(request, message: Self.crossOrigin, status: 403) }
        let session: DashboardSession.Session
        switch try DashboardSession.signIn(request, app: self, now: Date()) {
        case .valid(let valid): session = valid
        case .none: return dashboardSignInPage(request, message: "Sign in first: the dashboard's forms need a session (this one came without its cookie); nothing was changed", status: 403)
        case .invalid: return dashboardSignInPage(request, message: Self.endedSession, status: 401, clearCookie: true)
        }
        guard let form = FormFields(request.body),
              DashboardSession.hasFormToken(form, session: session, key: DashboardSession.key(adminToken: adminToken)) else {
            let refusal = "This form did not come from this server's dashboard (its form token is missing or wrong); nothing was changed. Reload the page and try again"
            return dashboardPageResponse(session, flash: DashboardSession.Flash(isError: true, message: refusal), status: 403)
        }
        return try action(session, form)
    }

    /// The sign-in form. `clearCookie` removes the session cookie: only when the request carried
    /// one that no longer holds (a page answering a post without it must not touch the real one).
    private func dashboardSignInPage(_ request: HTTPRequest, message: String?, status: Int, clearCookie: Bool = false) -> HTTPResponse {
        var response = Self.dashboardHTML(DashboardPage.signIn(message: message, now: clock.now()), status: status)
        if clearCookie { response.headers.add("Set-Cookie", DashboardSession.setCookie(DashboardSession.cookie, "", maxAge: 0, secure: isHTTPSPage(request))) }
        return response
    }

    /// Whether the browser sees this page over HTTPS: it came over TLS, or through a proxy
    /// whose public base URL is HTTPS. Its cookies are `Secure` then.
    private func isHTTPSPage(_ request: HTTPRequest) -> Bool {
        request.isSecure || links(for: request).base.hasPrefix("https://")
    }

    private func dashboardPageResponse(_ session: DashboardSession.Session, flash: DashboardSession.Flash?, status: Int) -> HTTPResponse {
        let formToken = DashboardSession.formToken(for: session, key: DashboardSession.key(adminToken: adminToken))
        return Self.dashboardHTML(dashboardPage(flash: flash, formToken: formToken).render(), status: status)
    }

    /// A page with the headers every dashboard page carries.
    private static func dashboardHTML(_ page: HTML, status: Int) -> HTTPResponse {
        var response = HTTPResponse.text(page.text, status: status, contentType: "text/html; charset=utf-8")
        response.headers.add("Cache-Control", "no-store")
        response.headers.add("Content-Security-Policy", DashboardAssets.contentSecurityPolicy)
        response.headers.add("X-Content-Type-Options", "nosniff")
        response.headers.add("X-Frame-Options", "DENY")
        response.headers.add("Referrer-Policy", "no-referrer")
        return response
    }

    private static func dashboardRedirect(_ location: String) -> HTTPResponse {
        var response = HTTPResponse.text("See \(location)\n", status: 303)
        response.headers.add("Location", location)
        response.headers.add("Cache-Control", "no-store")
        return response
    }
}
