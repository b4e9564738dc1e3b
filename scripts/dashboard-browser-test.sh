#!/usr/bin/env bash
# Drives the dashboard in headless Chromium against a live mock-backend (part of `make test`):
# signs in through the form, moves the clock through the form past a rental's end and sees the
# license turn expired (live, then on the server's page), renames a video through its row's form,
# adds a fault rule through the form, makes a request it takes and sees that request arrive in
# the live request log, then signs out and sees the session's cookie refused when replayed. Saves a
# screenshot and prints its path; exits non-zero on any failure.
#
#   MOCK_BACKEND=path/to/mock-backend   the binary (default .build/debug/mock-backend)
#   OFFLINE=path/to/offline             the SDK's command (default .build/debug/offline)
#   CHROMIUM=path/to/chromium           the browser (default chromium, Debian's package)
#   DASHBOARD_SCREENSHOT=path.png       where the screenshot goes (default .build/dashboard.png)
#
# The driver (scripts/dashboard_browser.py) speaks the Chrome DevTools Protocol over a
# websocket (PyPI websocket-client, installed into .build-venv/ like schemathesis) and waits on
# events and DOM conditions with deadlines, never on sleeps.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/live-backend.sh

WEBSOCKET_CLIENT_VERSION=1.8.0
VENV=.build-venv/browser-test
BINARY=${MOCK_BACKEND:-.build/debug/mock-backend}
OFFLINE=${OFFLINE:-.build/debug/offline}
CHROMIUM=${CHROMIUM:-chromium}
SCREENSHOT=${DASHBOARD_SCREENSHOT:-.build/dashboard.png}

# fixtures/catalog.json: a FairPlay video offered for rent, a clear one for the fault, one to edit.
ACCOUNT=6415818918001
POLICY_KEY=BCpkADawqM1northwindPLAYkey000002
RENTAL_VIDEO=6415818918104
CLEAR_VIDEO=6415818918101
EDIT_VIDEO=6415818918109

venv_install "$VENV" "websocket-client==$WEBSOCKET_CLIENT_VERSION" \
    "import websocket, sys; sys.exit(websocket.__version__ != '$WEBSOCKET_CLIENT_VERSION')"
[ -x "$BINARY" ] || { echo "no mock-backend at $BINARY: build it (swift build) or set MOCK_BACKEND" >&2; exit 1; }
[ -x "$OFFLINE" ] || { echo "no offline command at $OFFLINE: build it (swift build) or set OFFLINE" >&2; exit 1; }
command -v "$CHROMIUM" >/dev/null || { echo "no $CHROMIUM: install Debian's chromium (make deps) or set CHROMIUM" >&2; exit 1; }

start_backend dashboard-browser

# A rental license the SDK acquires through the live server (with the whole 12 s download).
if ! "$OFFLINE" download "$RENTAL_VIDEO" --rental 1h --storage "$WORK/offline" --base-url "$BASE" --account "$ACCOUNT" \
    --policy-key "$POLICY_KEY" --reserve-mb 0 --json >"$WORK/offline.out" 2>&1; then
    echo "offline download failed:" >&2
    tail -n 20 "$WORK/offline.out" >&2
    exit 1
fi
echo "offline download $RENTAL_VIDEO --rental 1h: done" >&2

mkdir -p "$(dirname "$SCREENSHOT")"
status=0
"$VENV/bin/python" scripts/dashboard_browser.py --base-url "$BASE" --admin-token "$ADMIN_TOKEN" --chromium "$CHROMIUM" \
    --account "$ACCOUNT" --policy-key "$POLICY_KEY" --rental-video "$RENTAL_VIDEO" --clear-video "$CLEAR_VIDEO" --edit-video "$EDIT_VIDEO" \
    --screenshot "$SCREENSHOT" --profile "$WORK/chromium" || status=1

backend_survived || status=1
[ "$status" -eq 0 ] && echo "dashboard browser test: passed" >&2 || echo "dashboard browser test: FAILED" >&2
exit "$status"
