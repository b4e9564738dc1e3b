import Foundation

/// The dashboard page: what the backend holds right now, gathered once (`MockBackendApp.dashboardPage`)
/// and written out as HTML. Every value passes through `HTML`'s escaping; the script reads
/// times from `data-` attributes and never receives markup.
struct DashboardPage {
    struct Account {
        var id, name: String
        var fairPlay: Bool
        var videos: [Video]
    }

    struct Video {
        var id, name, protection: String
        /// The thumbnail's path and the length; nil while the video has no media (made through the CMS API, not ingested).
        var thumbnail: String?
        var referenceID: String?
        var offlineEnabled: Bool
        var lengthMilliseconds: Int?
    }

    var now: Date
    var offset: Double
    var baseURL: String
    var formToken: String
    var flash: DashboardSession.Flash?
    var accounts: [Account]
    var licenses: [MockBackendApp.AdminLicense]
    var videoNames: [String: String]
    var devices: [RegisteredDevice]
    /// What went wrong reading licenses or devices, shown in their place.
    var storageProblem: String?
    var faultSeed: UInt64
    var faults: [FaultInjector.Installed]
    var requests: [RequestLog.Entry]
    var requestLogCapacity: Int
    /// Analytics events the collector (`POST /tracker`) holds.
    var analyticsEvents: Int
    /// The newest ingest jobs, newest first.
    var ingestJobs: [IngestJob] = []

    /// The whole page.
    func render() -> HTML {
        let videoCount = accounts.reduce(0) { $0 + $1.videos.count }
        let flashBlock: HTML = flash.map { flash -> HTML in
            "<div class=\"flash \(flash.isError ? "error" : "ok")\" role=\"status\" id=\"flash\">\(flash.message)</div>"
        } ?? ""
        let body: HTML = """
            <header class="bar">
              <div class="brand"><span class="mark">mb</span><b>mock-backend</b><span class="sub">dashboard</span></div>
              <code>\(baseURL)</code>
              <div class="clock"><span>server clock</span><time id="server-clock">\(DashboardFormat.time(now))</time>\
            <span class="tag\(offset == 0 ? "" : " moved")" id="clock-offset">offset \(DashboardFormat.offset(offset))</span></div>
              <form method="post" action="/_dashboard/logout" class="inline">\(formTokenField)<button class="ghost small" type="submit">Sign out</button></form>
            </header>
            <nav class="toc">
              <a href="#clock">Clock</a><a href="#faults">Faults <span class="n">\(faults.count)</span></a>\
            <a href="#requests">Requests</a><a href="#licenses">Licenses <span class="n">\(licenses.count)</span></a>\
            <a href="#catalog">Catalog <span class="n">\(videoCount)</span></a><a href="#devices">Devices <span class="n">\(devices.count)</span></a>\
            <a href="#ingest-jobs">Ingest jobs <span class="n">\(ingestJobs.count)</span></a>\
            <span id="analytics-events" title="GET /_admin/v1/tracker/events">Analytics events <span class="n">\(analyticsEvents)</span></span>
            </nav>
            <main>
            \(flashBlock)
            <div class="row">\(clockSection)\(faultSection)</div>
            \(requestSection)
            \(licenseSection)
            \(catalogSection)
            \(deviceSection)
            \(ingestSection)
            </main>
            <footer>Everything here is also in the admin API (<code>/_admin/v1</code>, docs/openapi.yaml); \
            the forms call the same code.</footer>
            """
        return Self.document(title: "mock-backend · dashboard", serverNow: now, body: body)
    }

    /// The hidden form-token field every form carries.
    var formTokenField: HTML {
        "<input type=\"hidden\" name=\"\(DashboardSession.formTokenField)\" value=\"\(formToken)\">"
    }

    /// A page around `body`, with the inline style and script.
    static func document(title: String, serverNow: Date, body: HTML) -> HTML {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>\(title)</title>
        <style>\(HTML(stringLiteral: DashboardAssets.style))</style>
        </head>
        <body data-server-now="\(DashboardFormat.milliseconds(serverNow))">
        \(body)
        <script>\(HTML(stringLiteral: DashboardAssets.script))</script>
        </body>
        </html>

        """
    }

    /// The sign-in form, with a message when a token was refused.
    static func signIn(message: String?, now: Date) -> HTML {
        let refusal: HTML = message.map { message -> HTML in "<div class=\"flash error\" role=\"alert\" id=\"flash\">\(message)</div>" } ?? ""
        let body: HTML = """
            <main>
            <form class="card login" method="post" action="/_dashboard/login">
              <h1><span class="mark">mb</span>mock-backend dashboard</h1>
              <p>Sign in with the admin token: <code>mock-backend</code> prints it at start (<code>admin token …</code>), \
            or it is the <code>--admin-token</code> you gave.</p>
              \(refusal)
              <input type="password" name="token" id="token" placeholder="admin token" autocomplete="current-password" autofocus required>
              <button class="primary" type="submit" id="sign-in">Sign in</button>
            </form>
            </main>
            """
        return document(title: "mock-backend · sign in", serverNow: now, body: body)
    }
}
