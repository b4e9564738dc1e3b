#!/usr/bin/env bash
# Fuzzes a running mock-backend against docs/openapi.yaml with schemathesis (`make test-api`),
# every check on (`--checks all`): every answer must be a non-5xx, with a status, a Content-Type,
# headers and a body the spec allows; data the schema forbids must be refused; and so on.
#
#   MOCK_BACKEND=path/to/mock-backend   the binary (default .build/debug/mock-backend)
#   SCHEMATHESIS_MAX_EXAMPLES=N         test cases per operation and phase (default 25)
#   SCHEMATHESIS_SEED=N                 the seed (default fixed: the same run every time)
#   SCHEMATHESIS_WORKERS=N              concurrent workers (default 1; the order below relies on it)
#   SCHEMATHESIS_DATABASE=postgres      the mock on a throwaway PostgreSQL (default: SQLite in its data folder)
#
# Starts the server on a free port with a throwaway data folder and an admin token of its
# own, stops it on exit, and exits non-zero when schemathesis reports any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/live-backend.sh

SCHEMATHESIS_VERSION=4.32.5
VENV=.build-venv/schemathesis
BINARY=${MOCK_BACKEND:-.build/debug/mock-backend}
MAX_EXAMPLES=${SCHEMATHESIS_MAX_EXAMPLES:-25}
SEED=${SCHEMATHESIS_SEED:-1187}
WORKERS=${SCHEMATHESIS_WORKERS:-1}

# Accounts and keys of fixtures/catalog.json. The Playback API and the license server are
# fuzzed on Northwind (FairPlay); the admin API's account-scoped writes on Contoso, so that
# what they change (videos, playlists, policy keys) never touches what the other operations use.
PLAYBACK_ACCOUNT=6415818918001
PLAYBACK_POLICY_KEY=BCpkADawqM1northwindSEARCHkey0001
FAIRPLAY_VIDEO=6415818918103
CLEAR_VIDEO=6415818918101
ADMIN_ACCOUNT=5434391461001

venv_install "$VENV" "schemathesis==$SCHEMATHESIS_VERSION" \
    "import schemathesis, sys; sys.exit(schemathesis.__version__ != '$SCHEMATHESIS_VERSION')"
[ -x "$BINARY" ] || { echo "no mock-backend at $BINARY: build it (swift build --product mock-backend) or set MOCK_BACKEND" >&2; exit 1; }

if [ "${SCHEMATHESIS_DATABASE:-sqlite}" = postgres ]; then
    # The second store is fuzzed as the first: it refuses and keeps values its own way (text
    # cannot hold NUL in PostgreSQL), and the answers must be the same.
    . scripts/lib/postgres.sh
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/schemathesis.XXXXXX")
    chmod 755 "$WORK"
    trap stop_backend EXIT
    start_postgres "$WORK/pg"
    export MOCK_BACKEND_DATABASE_URL
    MOCK_BACKEND_DATABASE_URL=$(new_database mock)
    echo "PostgreSQL at $MOCK_BACKEND_DATABASE_URL" >&2
fi
start_backend schemathesis

# The license route is signed: its path and fastly_token come from the FairPlay video's
# key_request_url, so the fuzzer reaches the body, header and SPC checks behind the token.
# Images and text tracks are named by the video's URL uuid: the clear video's, so that the
# fuzzer reaches real files (and their Range handling) rather than 404s.
video() { curl -sSf -H "BCOV-Policy: $PLAYBACK_POLICY_KEY" "$BASE/playback/v1/accounts/$PLAYBACK_ACCOUNT/videos/$1"; }
read -r LICENSE_VIDEO LICENSE_KEY LICENSE_TOKEN < <(video "$FAIRPLAY_VIDEO" | "$VENV/bin/python" -c '
import json, sys, urllib.parse
url = json.load(sys.stdin)["sources"][0]["key_systems"]["com.apple.fps.1_0"]["key_request_url"]
parts = urllib.parse.urlsplit(url)
_, _, _, _, account, video, key = parts.path.split("/")
print(video, key, urllib.parse.parse_qs(parts.query)["fastly_token"][0])
')
read -r CLEAR_VIDEO_UUID < <(video "$CLEAR_VIDEO" | "$VENV/bin/python" -c '
import json, sys
print(json.load(sys.stdin)["poster"].split("/")[-3])
')

# The dashboard is fuzzed signed in: a session from the sign-in form (its cookie holds a session, not the token).
DASHBOARD_SESSION=$(curl -sS -o /dev/null -D - -X POST --data-urlencode "token=$ADMIN_TOKEN" "$BASE/_dashboard/login" |
    sed -n 's/^[Ss]et-[Cc]ookie: mock_admin=\([^;]*\);.*/\1/p')
[ -n "$DASHBOARD_SESSION" ] || { echo "signing in to the dashboard gave no session cookie" >&2; exit 1; }

cat >"$WORK/schemathesis.toml" <<EOF
[auth.openapi.policyKey]
api_key = "$PLAYBACK_POLICY_KEY"

[auth.openapi.adminBearer]
bearer = "$ADMIN_TOKEN"

[auth.openapi.dashboardCookie]
api_key = "$DASHBOARD_SESSION"

# Schema-valid is not always valid: the admin API, the license server and the collector refuse
# with a 400 what no schema can say (a reference id another video holds, a PEM that is not an
# RSA key, a playlist naming another account's video, an SPC that does not decrypt, a NUL in a
# member's name). Data the schema forbids may also be refused with 413 (a body over 64 KiB).
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]

[[operations]]
include-path-regex = "^/playback/"
parameters = { "path.account" = "$PLAYBACK_ACCOUNT" }

[[operations]]
include-operation-id = "requestLicense"
parameters = { "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$LICENSE_VIDEO", "path.key" = "$LICENSE_KEY", "query.fastly_token" = "$LICENSE_TOKEN" }

[[operations]]
include-path-regex = "^/(image|text)/v1/"
parameters = { "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$CLEAR_VIDEO_UUID" }

[[operations]]
include-path-regex = "^/_admin/v1/accounts/[{]account[}]"
parameters = { "path.account" = "$ADMIN_ACCOUNT" }
EOF

run() {
    "$VENV/bin/schemathesis" --config-file "$WORK/schemathesis.toml" --no-color run docs/openapi.yaml \
        --url "$BASE" \
        --checks all \
        --phases examples,coverage,fuzzing,stateful \
        --max-examples "$MAX_EXAMPLES" --seed "$SEED" --generation-database none \
        --workers "$WORKERS" --request-timeout 10 \
        "$@"
}

status=0
# Not fuzzed, one reason each:
#   getMasterPlaylist, getMediaPlaylist, getSegment, getAES128Key, getSampleAESTestKey:
#     signed URLs; a fastly_token is valid for one exact path, so every generated path answers
#     the same 403 before anything else is looked at (the license route gets a real one above).
#   adminFollowRequests: a server-sent event stream, which never ends.
#   adminReset: restores the catalog and forgets licenses in the middle of the run.
#   adminAddFaults: a rule turns later answers into injected errors, stalls and dropped connections.
#   adminSetClock: moving the clock expires the license route's token; it runs alone, last.
#   dashboardFollowRequests: the dashboard's copy of the request-log event stream, which never ends.
#   (The dashboard's forms, sign-out included, are fuzzed signed in: without the page's form token they answer 403,
#   changing nothing, so the session lasts the run.)
run --exclude-operation-id getMasterPlaylist --exclude-operation-id getMediaPlaylist \
    --exclude-operation-id getSegment --exclude-operation-id getAES128Key \
    --exclude-operation-id getSampleAESTestKey --exclude-operation-id adminFollowRequests \
    --exclude-operation-id adminReset --exclude-operation-id adminAddFaults \
    --exclude-operation-id adminSetClock --exclude-operation-id dashboardFollowRequests || status=1
run --include-operation-id adminSetClock || status=1

backend_survived || status=1
[ "$status" -eq 0 ] && echo "schemathesis: no failures" >&2 || echo "schemathesis: failures above" >&2
exit "$status"
