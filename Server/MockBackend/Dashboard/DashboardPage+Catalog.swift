import Foundation
import WireModels

/// The page's view of what the backend serves: licenses, the catalog per account, devices.
extension DashboardPage {
    var licenseSection: HTML {
        let rows: [HTML] = licenses.map { license in
            let video = videoNames[license.videoID].map { name -> HTML in "\(name)<div class=\"muted mono\">\(license.videoID)</div>" }
                ?? "<span class=\"mono\">\(license.videoID)</span>"
            var kind = license.kind
            // The client sets the rental's end from its own clock just before the server issues it: to the second.
            if let end = license.rentalEnd { kind += " " + DashboardFormat.span(end.timeIntervalSince(license.issuedAt).rounded()) }
            if let window = license.playDuration { kind += ", play window " + DashboardFormat.span(window) }
            let expiry: HTML = license.expiresAt.map { expiry -> HTML in
                """
                <div class="nowrap">\(DashboardFormat.time(expiry))</div>\
                <div class="countdown" data-expires="\(DashboardFormat.milliseconds(expiry))">\(DashboardFormat.countdown(to: expiry, now: now))</div>
                """
            } ?? "<span class=\"muted\">never</span>"
            let revocable = license.state == "active" || license.state == "expired"
            let revoke: HTML = revocable ? """
                <form method="post" action="/_dashboard/licenses/\(URLToken.percentEncode(license.id))/revoke" class="inline">\
                \(formTokenField)<button type="submit" class="danger small">Revoke</button></form>
                """ : ""
            return """
                <tr data-license-id="\(license.id)"><td class="mono" title="\(license.id)">\(String(license.id.prefix(13)))…</td>\
                <td>\(video)</td><td>\(kind)</td>\
                <td><span class="mono">\(license.deviceID)</span>\(license.userID.map { user -> HTML in "<div class=\"muted\">user \(user)</div>" } ?? "")</td>\
                <td class="nowrap">\(DashboardFormat.time(license.issuedAt))</td><td>\(expiry)</td>\
                <td><span class="badge state \(license.state)" data-state="\(license.state)">\(license.state)</span></td>\
                <td class="num">\(revoke)</td></tr>
                """
        }
        let content: HTML = if let storageProblem {
            "<div class=\"empty\">Cannot read licenses: \(storageProblem)</div>"
        } else if rows.isEmpty {
            "<div class=\"empty\">No licenses yet: FairPlay license requests (<code>POST /license/v1/fairplay/…</code>) make them.</div>"
        } else {
            """
            <table><thead><tr><th>License</th><th>Video</th><th>Kind</th><th>Device</th><th>Issued</th><th>Expires</th>\
            <th>State</th><th></th></tr></thead><tbody id="license-rows">\(rows)</tbody></table>
            """
        }
        return """
            <section id="licenses" class="card">
              <header><h2>Licenses</h2><span class="hint">newest first · expiry counts down on the server's clock</span></header>
              \(content)
            </section>
            """
    }

    var catalogSection: HTML {
        let blocks: [HTML] = accounts.map { account in
            let rows: [HTML] = account.videos.map { video in
                let form = "video-\(video.id)"
                return """
                    <tr data-video-id="\(video.id)"><td>\(video.thumbnail.map { src -> HTML in "<img class=\"thumb\" src=\"\(src)\" alt=\"\" width=\"96\" height=\"54\">" } ?? "<span class=\"muted\">no media</span>")</td>\
                    <td><input class="name" type="text" name="name" value="\(video.name)" form="\(form)" aria-label="Name"></td>\
                    <td><span class="mono">\(video.id)</span>\(video.referenceID.map { ref -> HTML in "<div class=\"muted mono\">ref:\(ref)</div>" } ?? "")</td>\
                    <td><span class="badge \(video.protection)">\(video.protection)</span></td>\
                    <td><input type="hidden" name="offline_enabled" value="false" form="\(form)">\
                    <label class="check"><input type="checkbox" name="offline_enabled" value="true" form="\(form)"\
                    \(video.offlineEnabled ? " checked" : "")> offline</label></td>\
                    <td class="num">\(video.lengthMilliseconds.map { DashboardFormat.length(milliseconds: $0) } ?? "–")</td>\
                    <td class="num"><form method="post" action="/_dashboard/accounts/\(URLToken.percentEncode(account.id))/videos/\(URLToken.percentEncode(video.id))" id="\(form)" class="inline">\
                    \(formTokenField)<button type="submit" class="small">Save</button></form></td></tr>
                    """
            }
            return """
                <h3>\(account.name) <code class="muted">\(account.id)</code>\(account.fairPlay ? "<span class=\"badge fairplay\">FairPlay</span>" : "" as HTML)</h3>
                <table><thead><tr><th>Poster</th><th>Name</th><th>Video</th><th>Protection</th><th>Offline</th><th class="num">Length</th>\
                <th></th></tr></thead><tbody>\(rows)</tbody></table>
                """
        }
        return """
            <section id="catalog" class="card">
              <header><h2>Catalog</h2><span class="hint">per account · name and offline_enabled saved like \
            <code>PATCH /_admin/v1/accounts/{account}/videos/{video}</code></span></header>
              \(blocks)
            </section>
            """
    }

    var deviceSection: HTML {
        let rows: [HTML] = devices.map { device in
            """
            <tr><td class="mono">\(device.accountID)</td><td>\(device.userID)</td><td class="mono">\(device.deviceID)</td>\
            <td class="nowrap">\(DashboardFormat.time(device.registeredAt))</td></tr>
            """
        }
        let content: HTML = rows.isEmpty
            ? "<div class=\"empty\">No device holds a user's slot: devices register when a license request carries a playback-restriction JWT with a <code>uid</code>.</div>"
            : "<table><thead><tr><th>Account</th><th>User</th><th>Device</th><th>Registered</th></tr></thead><tbody>\(rows)</tbody></table>"
        return """
            <section id="devices" class="card">
              <header><h2>Devices</h2><span class="hint">users' device slots, per account</span></header>
              \(content)
            </section>
            """
    }

    /// The newest Dynamic Ingest jobs with their state (a queued one shows as queued here) and any error.
    var ingestSection: HTML {
        let rows: [HTML] = ingestJobs.map { job in
            """
            <tr data-job="\(job.id)"><td class="mono">\(job.accountID)</td><td class="mono">\(job.videoID)</td><td class="mono">\(job.id)</td>\
            <td><span class="tag job-state">\(job.state.rawValue)</span></td><td class="nowrap">\(DashboardFormat.time(job.submittedAt))</td>\
            <td>\(job.errorMessage ?? "")</td></tr>
            """
        }
        let content: HTML = rows.isEmpty
            ? "<div class=\"empty\">No ingest job yet: POST /v1/accounts/{account}/videos/{video}/ingest-requests, or <code>mock-backend ingest FILE --account A</code>.</div>"
            : "<table><thead><tr><th>Account</th><th>Video</th><th>Job</th><th>State</th><th>Submitted</th><th>Error</th></tr></thead><tbody>\(rows)</tbody></table>"
        return """
            <section id="ingest-jobs" class="card">
              <header><h2>Ingest jobs</h2><span class="hint">Dynamic Ingest, newest first</span></header>
              \(content)
            </section>
            """
    }
}
