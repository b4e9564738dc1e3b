import Crypto
import Foundation

/// The dashboard's style sheet and script, inline in every page (nothing is fetched from
/// another host, there is no build step). The script holds no data: it reads the page's
/// `data-` attributes. The Content-Security-Policy admits exactly these two by hash.
enum DashboardAssets {
    static let style = """
        :root{--bg:#f4f5f7;--card:#fff;--ink:#1d2330;--muted:#667085;--line:#e6e8ec;--accent:#2563eb;--accent-ink:#fff;
        --ok:#067647;--ok-bg:#dcfae6;--warn:#93370d;--warn-bg:#fef0c7;--err:#b42318;--err-bg:#fee4e2;--blue:#1849a9;--blue-bg:#e0eaff;
        --violet:#5925dc;--violet-bg:#ebe9fe;--grey:#475467;--grey-bg:#eaecf0;
        --mono:ui-monospace,"SFMono-Regular","DejaVu Sans Mono",Menlo,Consolas,monospace}
        *{box-sizing:border-box}
        html{scroll-padding-top:64px}
        body{margin:0;font:13.5px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:var(--bg)}
        code,.mono{font-family:var(--mono);font-size:12.5px}
        a{color:var(--accent);text-decoration:none}
        .bar{position:sticky;top:0;z-index:5;display:flex;align-items:center;gap:18px;padding:9px 24px;background:#101828;color:#d0d5dd}
        .brand{display:flex;align-items:center;gap:8px;font-size:15px;color:#fff}
        .mark{display:inline-grid;place-items:center;width:26px;height:26px;border-radius:6px;background:var(--accent);color:#fff;font:700 11px var(--mono)}
        .brand .sub{color:#98a2b3;font-weight:400}
        .bar code{color:#98a2b3}
        .bar .clock{margin-left:auto;display:flex;align-items:center;gap:8px}
        .bar time{font-family:var(--mono);color:#fff}
        .bar .tag{padding:1px 7px;border-radius:999px;background:#344054;color:#e4e7ec;font-size:12px}
        .bar .tag.moved{background:#b54708;color:#fff}
        nav.toc{display:flex;gap:4px;padding:6px 20px;background:#fff;border-bottom:1px solid var(--line);position:sticky;top:44px;z-index:4}
        nav.toc a{padding:4px 10px;border-radius:6px;color:var(--grey);font-weight:500}
        nav.toc a:hover{background:var(--grey-bg)}
        nav.toc .n{color:var(--muted);font-weight:400}
        main{max-width:1440px;margin:0 auto;padding:16px 24px 40px}
        .row{display:grid;grid-template-columns:minmax(300px,1fr) 2.2fr;gap:16px;align-items:start}
        .card{background:var(--card);border:1px solid var(--line);border-radius:10px;margin:0 0 16px;box-shadow:0 1px 2px rgba(16,24,40,.04)}
        .card>header{display:flex;align-items:center;gap:10px;padding:11px 16px;border-bottom:1px solid var(--line)}
        .card>header h2{margin:0;font-size:14px}
        .card>header .hint{color:var(--muted);font-size:12.5px}
        .card>header .end{margin-left:auto;display:flex;gap:8px;align-items:center}
        .card .body{padding:12px 16px}
        .card h3{margin:14px 16px 6px;font-size:13px;display:flex;gap:8px;align-items:center}
        .empty{padding:14px 16px;color:var(--muted)}
        table{width:100%;border-collapse:collapse}
        th{font-size:11.5px;font-weight:600;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);text-align:left;
        padding:7px 10px;border-bottom:1px solid var(--line);background:#fafbfc;white-space:nowrap}
        td{padding:6px 10px;border-bottom:1px solid var(--line);vertical-align:middle}
        tr:last-child td{border-bottom:0}
        td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
        .muted{color:var(--muted)}
        .nowrap{white-space:nowrap}
        .badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:11.5px;font-weight:600;white-space:nowrap;background:var(--grey-bg);color:var(--grey)}
        .badge.active,.badge.s2{background:var(--ok-bg);color:var(--ok)}
        .badge.expired,.badge.s4{background:var(--warn-bg);color:var(--warn)}
        .badge.revoked,.badge.s5,.badge.s0{background:var(--err-bg);color:var(--err)}
        .badge.s3,.badge.aes128{background:var(--blue-bg);color:var(--blue)}
        .badge.fairplay{background:var(--violet-bg);color:var(--violet)}
        .flash{margin:0 0 16px;padding:10px 14px;border-radius:8px;border:1px solid;font-weight:500}
        .flash.ok{background:var(--ok-bg);border-color:#abefc6;color:var(--ok)}
        .flash.error{background:var(--err-bg);border-color:#fecdca;color:var(--err)}
        input,select,button{font:inherit}
        input[type=text],input[type=number],input[type=password],select{height:30px;padding:3px 8px;border:1px solid #d0d5dd;border-radius:6px;background:#fff;color:var(--ink);min-width:0}
        input:focus,select:focus{outline:2px solid #84adff;outline-offset:0;border-color:#84adff}
        button{height:30px;padding:0 12px;border-radius:6px;border:1px solid #d0d5dd;background:#fff;color:var(--ink);font-weight:500;cursor:pointer;white-space:nowrap}
        button:hover{background:#f9fafb}
        button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-ink)}
        button.primary:hover{background:#1d4ed8}
        button.danger{color:var(--err);border-color:#fecdca}
        button.danger:hover{background:var(--err-bg)}
        button.ghost{background:transparent;color:#d0d5dd;border-color:#475467}
        button.small{height:26px;padding:0 9px;font-size:12.5px}
        form.inline{display:inline}
        .stack{display:flex;flex-direction:column;gap:10px}
        .line{display:flex;gap:8px;align-items:center;flex-wrap:wrap}
        .line .grow{flex:1}
        .kv{display:grid;grid-template-columns:auto 1fr;gap:4px 14px;margin:0 0 4px}
        .kv dt{color:var(--muted)}
        .kv dd{margin:0;font-family:var(--mono);font-size:12.5px}
        .fields{display:grid;grid-template-columns:repeat(6,minmax(0,1fr)) auto;gap:8px;align-items:end;padding:12px 16px;border-top:1px solid var(--line);background:#fafbfc;border-radius:0 0 10px 10px}
        .fields label{display:flex;flex-direction:column;gap:3px;font-size:11.5px;color:var(--muted);font-weight:600;text-transform:uppercase;letter-spacing:.03em}
        .fields label input,.fields label select{text-transform:none;letter-spacing:0;font-weight:400}
        img.thumb{display:block;width:96px;height:54px;object-fit:cover;border-radius:4px;background:var(--grey-bg)}
        td input.name{width:100%;min-width:180px}
        .check{display:inline-flex;gap:6px;align-items:center}
        .check input{margin:0}
        .log{max-height:360px;overflow:auto}
        .log thead th{position:sticky;top:0;z-index:1}
        .log td{font-family:var(--mono);font-size:12px;padding:4px 10px}
        .log td.path{max-width:640px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
        .log tr.fresh td{animation:fresh 2.5s ease-out}
        @keyframes fresh{from{background:#fff7d6}to{background:transparent}}
        .pill{display:inline-flex;align-items:center;gap:6px;font-size:12px;color:var(--muted)}
        .pill::before{content:"";width:8px;height:8px;border-radius:50%;background:#98a2b3}
        .pill.live{color:var(--ok)}
        .pill.live::before{background:#17b26a;box-shadow:0 0 0 3px #dcfae6}
        .pill.down{color:var(--err)}
        .pill.down::before{background:#f04438}
        .countdown.past{color:var(--warn)}
        .login{max-width:420px;margin:12vh auto;padding:28px 28px 24px}
        .login h1{font-size:18px;margin:0 0 4px;display:flex;gap:10px;align-items:center}
        .login p{color:var(--muted);margin:6px 0 16px}
        .login input{width:100%;height:36px}
        .login button{width:100%;height:36px;margin-top:12px}
        footer{max-width:1440px;margin:0 auto;padding:0 24px 24px;color:var(--muted);font-size:12px}
        @media (max-width:1000px){.row{grid-template-columns:1fr}.fields{grid-template-columns:repeat(2,minmax(0,1fr))}}
        """

    static let script = """
        (() => {
          "use strict";
          const body = document.body;
          // The server's clock (it may be moved) is what counts: keep its distance to this one.
          const skew = Number(body.dataset.serverNow) - Date.now();
          const serverNow = () => Date.now() + skew;
          const pad = (n, w) => String(n).padStart(w || 2, "0");
          const utc = (ms) => {
            const d = new Date(ms);
            return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
              pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds()) + " UTC";
          };
          const span = (ms) => {
            let s = Math.floor(Math.abs(ms) / 1000);
            const d = Math.floor(s / 86400); s %= 86400;
            const h = Math.floor(s / 3600); s %= 3600;
            const m = Math.floor(s / 60); s %= 60;
            const two = (big, bigUnit, small, smallUnit) => big + bigUnit + (small ? " " + small + smallUnit : "");
            if (d) return two(d, "d", h, "h");
            if (h) return two(h, "h", m, "m");
            if (m) return two(m, "m", s, "s");
            return s + "s";
          };
          const tick = () => {
            const now = serverNow();
            const clock = document.getElementById("server-clock");
            if (clock) clock.textContent = utc(now);
            for (const el of document.querySelectorAll("[data-expires]")) {
              const left = Number(el.dataset.expires) - now;
              el.textContent = left > 0 ? "in " + span(left) : "expired " + span(left) + " ago";
              el.classList.toggle("past", left <= 0);
              const badge = el.closest("tr") && el.closest("tr").querySelector(".badge.state");
              if (left <= 0 && badge && badge.dataset.state === "active") {
                badge.dataset.state = "expired";
                badge.textContent = "expired";
                badge.className = "badge state expired";
              }
            }
          };
          tick();
          setInterval(tick, 1000);

          // The request log, live: server-sent events from the same log the admin API streams.
          const rows = document.getElementById("request-rows");
          const state = document.getElementById("stream-state");
          if (!rows || !window.EventSource) return;
          const cell = (text, cls) => {
            const td = document.createElement("td");
            td.textContent = text;
            if (cls) td.className = cls;
            return td;
          };
          const add = (entry) => {
            if (rows.querySelector('tr[data-id="' + entry.id + '"]')) return;
            const empty = document.getElementById("request-empty");
            if (empty) empty.remove();
            const tr = document.createElement("tr");
            tr.dataset.id = entry.id;
            tr.dataset.status = entry.status;
            tr.className = "fresh";
            tr.appendChild(cell(String(entry.time).slice(11, 23), "nowrap muted"));
            tr.appendChild(cell(entry.method));
            const status = cell("");
            const badge = document.createElement("span");
            badge.className = "badge s" + String(entry.status).charAt(0);
            badge.textContent = entry.completed ? entry.status : entry.status + " cut";
            status.appendChild(badge);
            tr.appendChild(status);
            const path = cell(entry.path, "path");
            path.title = entry.path;
            tr.appendChild(path);
            tr.appendChild(cell(String(entry.bytes), "num"));
            tr.appendChild(cell(Number(entry.duration_ms).toFixed(1), "num"));
            tr.appendChild(cell(entry.fault || "", "fault"));
            rows.prepend(tr);
            while (rows.children.length > 200) rows.lastElementChild.remove();
            if (entry.fault) {
              const rule = document.querySelector('[data-rule-id="' + CSS.escape(entry.fault.split(":")[0]) + '"]');
              const hits = rule && rule.querySelector(".hits"), left = rule && rule.querySelector(".left");
              if (hits) hits.textContent = String(Number(hits.textContent) + 1);
              if (left && /^[0-9]+$/.test(left.textContent)) left.textContent = String(Math.max(0, Number(left.textContent) - 1));
            }
          };
          const source = new EventSource("/_dashboard/requests/stream?after=" + (rows.dataset.after || "0"));
          source.onopen = () => { state.textContent = "live"; state.className = "pill live"; body.dataset.stream = "open"; };
          source.onerror = () => { state.textContent = "reconnecting"; state.className = "pill down"; body.dataset.stream = "closed"; };
          source.addEventListener("request", (event) => add(JSON.parse(event.data)));
        })();
        """

    /// The Content-Security-Policy of every dashboard page: its own style and script (by
    /// hash), images and the event stream from this origin, forms only to this origin.
    static let contentSecurityPolicy = "default-src 'none'; style-src '\(hash(style))'; script-src '\(hash(script))'; "
        + "img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    private static func hash(_ text: String) -> String {
        "sha256-" + Data(SHA256.hash(data: Data(text.utf8))).base64EncodedString()
    }
}
