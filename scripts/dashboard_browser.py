"""Drives the mock-backend dashboard in headless Chromium over the Chrome DevTools Protocol.

Run by scripts/dashboard-browser-test.sh, which starts the server and acquires a rental license
first. Every wait is on an event (a CDP event, or a DOM condition watched by a MutationObserver
inside the page) with a deadline: no sleeps. Exits non-zero with the reason on any failure.
"""

import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import websocket

STEP_TIMEOUT = 15.0
TOTAL_TIMEOUT = 60.0

# Resolves when cond() is truthy (checked now and on every DOM change), rejects after ms.
WAIT_FOR = """(cond, ms, what) => new Promise((resolve, reject) => {
  let observer, timer;
  const check = () => {
    let value;
    try { value = cond(); } catch (e) { value = null; }
    if (value) { observer.disconnect(); clearTimeout(timer); resolve(value); }
  };
  observer = new MutationObserver(check);
  observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  timer = setTimeout(() => { observer.disconnect(); reject(new Error("timed out waiting for " + what)); }, ms);
  check();
})"""


class Failure(Exception):
    pass


class Browser:
    """One headless Chromium and one page, driven over the browser's DevTools websocket."""

    def __init__(self, chromium, profile):
        self.started = time.monotonic()
        self.stderr_lines = []
        self.process = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", f"--user-data-dir={profile}",
             "--window-size=1440,1000", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = self._devtools_url()
        # Keep reading Chromium's stderr so it never blocks on a full pipe (and for a failure report).
        threading.Thread(target=self._drain, daemon=True).start()
        self.socket = websocket.create_connection(url, timeout=STEP_TIMEOUT, suppress_origin=True)
        self.next_id = 0
        self.events = []
        self.problems = []
        target = self.command("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.command("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.page(domain)
        self.page("Emulation.setDeviceMetricsOverride", {"width": 1440, "height": 1000, "deviceScaleFactor": 1, "mobile": False})

    def _devtools_url(self):
        """The browser's websocket, from the `DevTools listening on ws://…` line on stderr."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stderr], [], [], deadline - time.monotonic())
            if not ready:
                break
            line = self.process.stderr.readline()
            if not line:
                raise Failure("chromium exited: " + "".join(self.stderr_lines[-20:]))
            self.stderr_lines.append(line)
            if line.startswith("DevTools listening on "):
                return line.split(" ", 3)[3].strip()
        raise Failure("chromium did not open its DevTools port: " + "".join(self.stderr_lines[-20:]))

    def _drain(self):
        for line in self.process.stderr:
            self.stderr_lines.append(line)

    def _deadline(self, seconds):
        left = TOTAL_TIMEOUT - (time.monotonic() - self.started)
        if left <= 0:
            raise Failure(f"the whole run took over {TOTAL_TIMEOUT:.0f} s")
        return time.monotonic() + min(seconds, left)

    def _receive(self, deadline):
        """The next message, recording the page's exceptions and CSP or console errors."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise websocket.WebSocketTimeoutException("deadline")
        self.socket.settimeout(left)
        message = json.loads(self.socket.recv())
        method = message.get("method")
        if method == "Runtime.exceptionThrown":
            details = message["params"]["exceptionDetails"]
            self.problems.append("page exception: " + details.get("exception", {}).get("description", details.get("text", "")))
        elif method == "Log.entryAdded":
            entry = message["params"]["entry"]
            if entry.get("level") == "error" and ("Content Security Policy" in entry.get("text", "") or entry.get("source") == "javascript"):
                self.problems.append("console: " + entry["text"])
        return message

    def command(self, method, params=None, session=None, timeout=STEP_TIMEOUT):
        self.next_id += 1
        call = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            call["sessionId"] = session
        self.socket.send(json.dumps(call))
        deadline = self._deadline(timeout)
        try:
            while True:
                message = self._receive(deadline)
                if message.get("id") == self.next_id:
                    if "error" in message:
                        raise Failure(f"{method}: {message['error']}")
                    return message.get("result", {})
                if "method" in message:
                    self.events.append(message)
        except websocket.WebSocketTimeoutException:
            raise Failure(f"no answer to {method}")

    def page(self, method, params=None, timeout=STEP_TIMEOUT):
        return self.command(method, params, session=self.session, timeout=timeout)

    def wait_event(self, method, what):
        """Waits for the page's next `method` event (events seen before were cleared by the caller)."""
        deadline = self._deadline(STEP_TIMEOUT)
        try:
            while True:
                for index, event in enumerate(self.events):
                    if event.get("method") == method and event.get("sessionId") == self.session:
                        return self.events.pop(index)
                self.events.append(self._receive(deadline))
        except websocket.WebSocketTimeoutException:
            raise Failure(f"timed out waiting for {what}")

    def evaluate(self, expression, timeout=STEP_TIMEOUT):
        result = self.page("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                           timeout=timeout + 2)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise Failure(details.get("exception", {}).get("description", details.get("text", "evaluation failed")))
        return result["result"].get("value")

    def wait_for(self, condition, what, timeout=STEP_TIMEOUT):
        """Waits until the JavaScript expression `condition` is truthy in the page; returns its value."""
        milliseconds = int(max(0.1, min(timeout, self._deadline(timeout) - time.monotonic())) * 1000)
        try:
            return self.evaluate(f"({WAIT_FOR})(() => ({condition}), {milliseconds}, {json.dumps(what)})",
                                 timeout=milliseconds / 1000)
        except Failure as failure:
            raise Failure(f"{what}: {failure}")

    def navigate(self, url):
        self.events.clear()
        self.page("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", f"{url} to load")

    def click(self, selector, navigates=False):
        """A real mouse click in the middle of the element (scrolled into view)."""
        point = self.evaluate(f"""(() => {{
            const el = document.querySelector({json.dumps(selector)});
            if (!el) return null;
            el.scrollIntoView({{block: "center"}});
            const r = el.getBoundingClientRect();
            return [r.x + r.width / 2, r.y + r.height / 2];
        }})()""")
        if not point:
            raise Failure(f"nothing to click at {selector}")
        if navigates:
            self.events.clear()
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", {"type": kind, "x": point[0], "y": point[1], "button": "left", "clickCount": 1})
        if navigates:
            self.wait_event("Page.loadEventFired", f"the page after clicking {selector}")

    def type(self, selector, text):
        """Clicks into a field, empties it and types `text`."""
        self.click(selector)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
        self.page("Input.insertText", {"text": text})

    def screenshot(self, path):
        metrics = self.page("Page.getLayoutMetrics")
        size = metrics["cssContentSize"]
        data = self.page("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))

    def close(self):
        try:
            self.command("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def step(text):
    print(f"  - {text}", file=sys.stderr, flush=True)


def run(args):
    browser = Browser(args.chromium, args.profile)
    try:
        base = args.base_url

        step("GET / redirects to the sign-in form")
        browser.navigate(base + "/")
        browser.wait_for("location.pathname === '/_dashboard' && document.querySelector('#token')", "the sign-in form")

        step("a wrong token: refused, with the reason")
        browser.type("#token", "not-the-token")
        browser.click("#sign-in", navigates=True)
        browser.wait_for("document.querySelector('#flash') && document.querySelector('#flash').textContent"
                         ".includes(\"That is not this server's admin token\")", "the refusal")

        step("the admin token: signed in")
        browser.type("#token", args.admin_token)
        browser.click("#sign-in", navigates=True)
        browser.wait_for("document.querySelector('#licenses') && document.querySelector('#catalog img.thumb')", "the dashboard page")
        browser.wait_for("[...document.querySelectorAll('#catalog img.thumb')].every(i => i.complete && i.naturalWidth > 0)",
                         "every poster thumbnail loaded")

        rental = browser.wait_for(f"""(() => {{
            const row = [...document.querySelectorAll('tr[data-license-id]')].find(r => r.textContent.includes({json.dumps(args.rental_video)}));
            if (!row || !row.textContent.includes('rental')) return null;
            const countdown = row.querySelector('[data-expires]');
            return {{id: row.dataset.licenseId, state: row.querySelector('.badge.state').dataset.state,
                    expires: Number(countdown.dataset.expires), countdown: countdown.textContent}};
        }})()""", "the rental's license in the table")
        if rental["state"] != "active" or not rental["countdown"].startswith("in "):
            raise Failure(f"the rental should be active and counting down: {rental}")
        step(f"license {rental['id']} active, expires {rental['countdown']}")

        step("clock moved through the form to 5 s before the rental's end; the countdown turns it expired live")
        server = browser.evaluate("({now: Number(document.body.dataset.serverNow), offset: Number(document.querySelector('#offset-seconds').dataset.offset)})")
        offset = server["offset"] + (rental["expires"] - server["now"]) / 1000 - 5
        browser.type("#clock-offset-input", f"{offset:.3f}")
        browser.click("#clock-set", navigates=True)
        browser.wait_for("document.querySelector('#flash.ok') && document.querySelector('#flash').textContent.startsWith('Clock offset')",
                         "the clock's flash message")
        row = f"document.querySelector('tr[data-license-id={json.dumps(rental['id'])}]')"
        browser.wait_for(f"{row}.querySelector('.badge.state').dataset.state === 'active'", "the rental still active before its end")
        browser.wait_for(f"{row}.querySelector('.badge.state').dataset.state === 'expired' && "
                         f"{row}.querySelector('[data-expires]').textContent.startsWith('expired')", "the rental expiring live", timeout=10)

        step("+1d through the form: the server's page shows the rental expired")
        browser.click("#clock-advance-1d", navigates=True)
        expired = browser.wait_for(f"{row} && {row}.querySelector('.badge.state').dataset.state === 'expired' && "
                                   f"{row}.querySelector('.badge.state').textContent", "the rental shown expired")
        if expired != "expired":
            raise Failure(f"the rental's state reads {expired!r}")

        step("a video renamed (to markup, which must stay text) and made stream-only through its row's form")
        video_row = f"document.querySelector('tr[data-video-id={json.dumps(args.edit_video)}]')"
        browser.type(f"tr[data-video-id='{args.edit_video}'] input.name", "<b>Renamed</b> & co")
        browser.click(f"tr[data-video-id='{args.edit_video}'] input[type=checkbox]")
        browser.click(f"tr[data-video-id='{args.edit_video}'] button[type=submit]", navigates=True)
        browser.wait_for(f"document.querySelector('#flash.ok') && {video_row}.querySelector('input.name').value === '<b>Renamed</b> & co' && "
                         f"!{video_row}.querySelector('input[type=checkbox]').checked && !document.querySelector('#flash b')",
                         "the video saved, its name as text")
        request = urllib.request.Request(f"{base}/playback/v1/accounts/{args.account}/videos/{args.edit_video}",
                                         headers={"BCOV-Policy": args.policy_key})
        saved = json.load(urllib.request.urlopen(request, timeout=10))
        if saved.get("name") != "<b>Renamed</b> & co" or saved.get("offline_enabled") is not False:
            raise Failure(f"the Playback API does not show the edit: {saved.get('name')!r}, offline_enabled {saved.get('offline_enabled')!r}")

        step("a fault rule added through the form")
        browser.evaluate("document.querySelector('#fault-route').value = 'playback_api'")
        browser.type("#fault-status", "503")
        browser.type("#fault-times", "1")
        browser.click("#fault-add", navigates=True)
        rule = browser.wait_for("(() => { const r = document.querySelector('#fault-rows tr[data-rule-id]'); "
                                "return r && r.querySelector('.hits').textContent === '0' && r.dataset.ruleId; })()", "the new rule")
        browser.wait_for("document.body.dataset.stream === 'open'", "the live request log to connect")

        step(f"a Playback API request {rule} takes; it shows in the live request log")
        url = f"{base}/playback/v1/accounts/{args.account}/videos/{args.clear_video}"
        try:
            urllib.request.urlopen(urllib.request.Request(url, headers={"BCOV-Policy": args.policy_key}), timeout=10)
            raise Failure("the fault rule did not take the request")
        except urllib.error.HTTPError as error:
            if error.code != 503:
                raise Failure(f"expected the rule's 503, got {error.code}")
        browser.wait_for(f"""(() => {{
            const row = [...document.querySelectorAll('#request-rows tr.fresh[data-status="503"]')]
                .find(r => r.querySelector('.path').textContent.includes('/videos/{args.clear_video}'));
            return row && row.querySelector('.fault').textContent.startsWith({json.dumps(rule + ':')});
        }})()""", "the faulted request in the live log")
        browser.wait_for(f"document.querySelector('tr[data-rule-id={json.dumps(rule)}] .hits').textContent === '1' && "
                         f"document.querySelector('tr[data-rule-id={json.dumps(rule)}] .left').textContent === '0'",
                         "the rule's hit count and what it has left")

        browser.evaluate("window.scrollTo(0, 0)")
        browser.screenshot(args.screenshot)
        if browser.problems:
            raise Failure("the page reported problems:\n    " + "\n    ".join(browser.problems))
        print(f"screenshot: {os.path.abspath(args.screenshot)}", flush=True)

        step("signed out through the button: the sign-in form again; the session's cookie, replayed, is refused")
        cookies = browser.page("Network.getCookies", {"urls": [base + "/_dashboard"]})["cookies"]
        session = next((c for c in cookies if c["name"] == "mock_admin"), None)
        if not session or not session["httpOnly"] or session["sameSite"] != "Strict" or args.admin_token in session["value"]:
            raise Failure(f"the session cookie is not an HttpOnly, SameSite=Strict session value: {session!r}")
        browser.click("form[action='/_dashboard/logout'] button", navigates=True)
        browser.wait_for("document.querySelector('#token') && !document.querySelector('#licenses')", "the sign-in form after signing out")
        replay = urllib.request.Request(base + "/_dashboard", headers={"Cookie": f"mock_admin={session['value']}"})
        try:
            urllib.request.urlopen(replay, timeout=10)
            raise Failure("the signed-out session's cookie still opens the dashboard")
        except urllib.error.HTTPError as error:
            if error.code != 401:
                raise Failure(f"the signed-out session's cookie: expected 401, got {error.code}")
    except Failure:
        try:
            failed = os.path.splitext(args.screenshot)[0] + "-failed.png"
            browser.screenshot(failed)
            print(f"screenshot of the failure: {os.path.abspath(failed)}", file=sys.stderr)
        except Exception:
            pass
        raise
    finally:
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("base-url", "admin-token", "chromium", "account", "policy-key", "rental-video", "clear-video", "edit-video",
                 "screenshot", "profile"):
        parser.add_argument("--" + name, required=True)
    args = parser.parse_args()
    try:
        run(args)
    except Failure as failure:
        print(f"dashboard browser test failed: {failure}", file=sys.stderr)
        sys.exit(1)
    finally:
        shutil.rmtree(args.profile, ignore_errors=True)


if __name__ == "__main__":
    main()
