import Foundation
import WireModels

/// The page's test tools: the clock, the fault rules and the request log.
extension DashboardPage {
    var clockSection: HTML {
        let steps: [(label: String, seconds: Int)] = [("+1h", 3600), ("+1d", 86400), ("+30d", 30 * 86400)]
        let buttons: [HTML] = steps.map { step in
            "<button type=\"submit\" name=\"advance\" value=\"\(step.seconds)\" id=\"clock-advance-\(step.label.dropFirst().description)\">\(step.label)</button>"
        }
        return """
            <section id="clock" class="card">
              <header><h2>Clock</h2><span class="hint">every URL token and license decision reads it</span></header>
              <div class="body stack">
                <dl class="kv">
                  <dt>now</dt><dd>\(DashboardFormat.time(now))</dd>
                  <dt>offset</dt><dd id="offset-seconds" data-offset="\(String(offset))">\(DashboardFormat.offset(offset))\
            \(offset == 0 ? "" : " (\(String(offset)) s)")</dd>
                </dl>
                <form method="post" action="/_dashboard/clock" class="line">\(formTokenField)
                  \(buttons)<button type="submit" name="offset" value="0" id="clock-reset">Reset</button>
                </form>
                <form method="post" action="/_dashboard/clock" class="line">\(formTokenField)
                  <input type="text" name="offset" id="clock-offset-input" placeholder="3600, -2h, 30d, 1d 12h" aria-label="Offset" class="grow">
                  <button type="submit" class="primary" id="clock-set">Set offset</button>
                </form>
              </div>
            </section>
            """
    }

    var faultSection: HTML {
        let rows: [HTML] = faults.map { installed in
            let rule = installed.rule
            let id = rule.id ?? ""
            return """
                <tr data-rule-id="\(id)"><td class="mono">\(id)</td><td>\(Self.takes(rule))</td><td>\(Self.does(rule))</td>\
                <td class="num hits">\(installed.applied)</td><td class="num left">\(installed.remaining.map(String.init) ?? "∞")</td>\
                <td class="num"><form method="post" action="/_dashboard/faults/\(URLToken.percentEncode(id))/delete" class="inline">\
                \(formTokenField)<button type="submit" class="danger small">Remove</button></form></td></tr>
                """
        }
        let table: HTML = rows.isEmpty
            ? "<div class=\"empty\">No fault rules: every request is answered as it should be.</div>"
            : """
              <table><thead><tr><th>Rule</th><th>Takes</th><th>Does</th><th class="num">Applied</th><th class="num">Left</th><th></th></tr></thead>
              <tbody id="fault-rows">\(rows)</tbody></table>
              """
        let routes: [HTML] = RouteClass.allCases.map { route in "<option value=\"\(route.rawValue)\">\(route.rawValue)</option>" }
        return """
            <section id="faults" class="card">
              <header><h2>Fault rules</h2><span class="hint">the first rule that takes a request applies · seed \(String(faultSeed))</span></header>
              \(table)
              <form method="post" action="/_dashboard/faults" class="fields" id="fault-form">\(formTokenField)
                <label>Route<select name="route" id="fault-route"><option value="">any</option>\(routes)</select></label>
                <label>Path contains<input type="text" name="path" id="fault-path" placeholder="* for any run"></label>
                <label>Status<input type="number" name="status" id="fault-status" placeholder="503" min="400" max="599"></label>
                <label>Probability<input type="number" name="probability" id="fault-probability" placeholder="1" min="0" max="1" step="any"></label>
                <label>Latency ms<input type="number" name="latency_ms" id="fault-latency" placeholder="0" min="0"></label>
                <label>Times<input type="number" name="times" id="fault-times" placeholder="every time" min="1"></label>
                <button type="submit" class="primary" id="fault-add">Add rule</button>
              </form>
            </section>
            """
    }

    var requestSection: HTML {
        let shown = requests.reversed().map { entry -> HTML in
            let status = entry.completed ? String(entry.status) : "\(entry.status) cut"
            return """
                <tr data-id="\(entry.id)" data-status="\(entry.status)"><td class="nowrap muted">\(String(WireDate.string(from: entry.time).dropFirst(11).prefix(12)))</td>\
                <td>\(entry.method)</td><td><span class="badge s\(String(entry.status / 100))">\(status)</span></td>\
                <td class="path" title="\(entry.path)">\(entry.path)</td><td class="num">\(String(entry.bytes))</td>\
                <td class="num">\(String(format: "%.1f", entry.durationMs))</td><td class="fault">\(entry.fault ?? "")</td></tr>
                """
        }
        let empty: HTML = shown.isEmpty ? "<div class=\"empty\" id=\"request-empty\">No requests yet: they appear here as they are answered.</div>" : ""
        return """
            <section id="requests" class="card">
              <header><h2>Request log</h2><span class="hint">newest first, live · this page's own requests too · the server keeps the last \(requestLogCapacity) \
            (<code>/_admin/v1/requests</code>)</span><div class="end"><span class="pill" id="stream-state">connecting</span></div></header>
              <div class="log"><table><thead><tr><th>Time (UTC)</th><th>Method</th><th>Status</th><th>Path</th>\
            <th class="num">Bytes</th><th class="num">ms</th><th>Fault</th></tr></thead>
              <tbody id="request-rows" data-after="\(requests.last?.id ?? 0)">\(shown)</tbody></table>\(empty)</div>
            </section>
            """
    }

    /// Which requests a rule takes, in words.
    static func takes(_ rule: FaultRule) -> HTML {
        var parts: [String] = []
        if let route = rule.route { parts.append(route.rawValue) }
        if let account = rule.account { parts.append("account \(account)") }
        if let video = rule.video { parts.append("video \(video)") }
        if let rendition = rule.rendition { parts.append("rendition \(rendition)") }
        if let path = rule.path { parts.append("path ∋ \(path)") }
        if let probability = rule.probability { parts.append("p \(String(probability))") }
        if let times = rule.times { parts.append("\(times)×") }
        return parts.isEmpty ? "<span class=\"muted\">every request</span>" : "\(parts.joined(separator: " · "))"
    }

    /// What a rule does to an answer, in words (the request log's words).
    static func does(_ rule: FaultRule) -> HTML {
        "\(FaultEffect.describe(rule.effects))"
    }
}
