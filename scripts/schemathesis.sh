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
AES_VIDEO_ID=6415818918102
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

# Signed routes get real URLs, so the fuzzer reaches what lies behind the token (the body, header
# and SPC checks of the license route; the playlists, segments and keys with their Range and
# conditional handling) rather than the same 403 for every generated path: a fastly_token is valid
# for one exact path, so each operation's path parameters and token are pinned to one URL the
# mock handed out. The license route's come from the FairPlay video's key_request_url; the
# master, a media playlist and a segment from the clear video's sources (and its playlists); the
# AES-128 key from the HLSe video's media playlist. Images and text tracks are named by the clear
# video's URL uuid, so that the fuzzer reaches real files (and their Range handling) rather than 404s.
# Static URL delivery gets a playback-restriction JWT: a key pair made here, its public half
# registered for the Playback API's account through the admin API, the token signed with openssl.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$WORK/playback-key.pem" 2>/dev/null
openssl pkey -in "$WORK/playback-key.pem" -pubout -out "$WORK/playback-key.pub.pem"
"$VENV/bin/python" - "$WORK/playback-key.pub.pem" >"$WORK/playback-key.json" <<'PY'
import json, sys
print(json.dumps({"id": "schemathesis", "public_key": open(sys.argv[1]).read()}))
PY
curl -sSf -o /dev/null -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: application/json" \
    --data-binary "@$WORK/playback-key.json" "$BASE/_admin/v1/accounts/$PLAYBACK_ACCOUNT/playback-keys"

read -r LICENSE_VIDEO LICENSE_KEY LICENSE_TOKEN CLEAR_VIDEO_UUID \
    MASTER_PROTECTION MASTER_VIDEO MASTER_LABEL MASTER_TOKEN \
    MEDIA_RENDITION MEDIA_TOKEN SEGMENT_NAME SEGMENT_TOKEN \
    AES_VIDEO AES_KEY AES_TOKEN STATIC_TOKEN < <("$VENV/bin/python" - "$BASE" "$PLAYBACK_ACCOUNT" "$PLAYBACK_POLICY_KEY" \
        "$FAIRPLAY_VIDEO" "$CLEAR_VIDEO" "$AES_VIDEO_ID" "$WORK/playback-key.pem" <<'PY'
import base64, json, re, subprocess, sys, time, urllib.parse, urllib.request
base, account, policy_key, fairplay, clear, aes, key_file = sys.argv[1:]

def get(url, headers={}):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as answer:
        return answer.read().decode()
def video(id):
    return json.loads(get(f"{base}/playback/v1/accounts/{account}/videos/{id}", {"BCOV-Policy": policy_key}))
def split(url):  # path segments and the fastly_token of a signed URL
    parts = urllib.parse.urlsplit(url)
    return parts.path.split("/"), urllib.parse.parse_qs(parts.query)["fastly_token"][0]
def uris(playlist):  # every URI in a playlist: lines and URI="..." attributes
    return [l for l in playlist.splitlines() if l.startswith("http")] + re.findall(r'URI="(http[^"]+)"', playlist)

fairplay_video = video(fairplay)
path, license_token = split(fairplay_video["sources"][0]["key_systems"]["com.apple.fps.1_0"]["key_request_url"])
license_video, license_key = path[-2], path[-1]
clear_video = video(clear)
clear_uuid = clear_video["poster"].split("/")[-3]
master_url = clear_video["sources"][0]["src"]
# /manifest/v1/hls/v5/{protection}/{account}/{video}/{label}/master.m3u8
path, master_token = split(master_url)
protection, master_video, label = path[5], path[7], path[8]
media_url = next(l for l in get(master_url).splitlines() if l.startswith("http"))  # a variant: a video rendition
path, media_token = split(media_url)
rendition = path[8]
segment_url = next(u for u in uris(get(media_url)) if "/media/" in u)
path, segment_token = split(segment_url)
segment = path[-1]
assert path[8] == rendition
aes_media = next(u for u in uris(get(video(aes)["sources"][0]["src"])) if "/rendition.m3u8" in u)
key_url = next(u for u in uris(get(aes_media)) if "/license/v1/aes128/" in u)
path, aes_token = split(key_url)
aes_video, aes_key = path[-2], path[-1]

def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
claims = {"accid": account, "exp": int(time.time()) + 4 * 3600}
signing_input = b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "schemathesis"}).encode()) + "." + b64(json.dumps(claims).encode())
signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_file], input=signing_input.encode(),
                           capture_output=True, check=True).stdout
static_token = signing_input + "." + b64(signature)

print(license_video, license_key, license_token, clear_uuid, protection, master_video, label, master_token,
      rendition, media_token, segment, segment_token, aes_video, aes_key, aes_token, static_token)
PY
)
[ -n "$STATIC_TOKEN" ] || { echo "could not gather the signed URLs" >&2; exit 1; }
# The JWT opens the static master: a wrong one would leave the fuzzer nothing but 401s.
curl -sSf -o /dev/null "$BASE/playback/v1/accounts/$PLAYBACK_ACCOUNT/videos/$CLEAR_VIDEO/master.m3u8?bcov_auth=$STATIC_TOKEN"

# The dashboard is fuzzed signed in: a session from the sign-in form (its cookie holds a session, not the token).
DASHBOARD_SESSION=$(curl -sS -o /dev/null -D - -X POST --data-urlencode "token=$ADMIN_TOKEN" "$BASE/_dashboard/login" |
    sed -n 's/^[Ss]et-[Cc]ookie: mock_admin=\([^;]*\);.*/\1/p')
[ -n "$DASHBOARD_SESSION" ] || { echo "signing in to the dashboard gave no session cookie" >&2; exit 1; }

# The OAuth token route gets a client credential of the Playback API's account (made through the admin API).
read -r OAUTH_CLIENT_ID OAUTH_CLIENT_SECRET < <(curl -sSf -X POST -H "Authorization: Bearer $ADMIN_TOKEN" \
    "$BASE/_admin/v1/accounts/$PLAYBACK_ACCOUNT/client_credentials" |
    "$VENV/bin/python" -c 'import json, sys; c = json.load(sys.stdin); print(c["client_id"], c["client_secret"])')
[ -n "$OAUTH_CLIENT_SECRET" ] || { echo "could not make a client credential" >&2; exit 1; }
# The back-office APIs (/v1/…) are fuzzed on the admin API's account (their writes stay away from the
# Playback API's videos), in a run of their own with a token fetched just before it (tokens live 300 s).
read -r CMS_CLIENT_ID CMS_CLIENT_SECRET < <(curl -sSf -X POST -H "Authorization: Bearer $ADMIN_TOKEN" \
    "$BASE/_admin/v1/accounts/$ADMIN_ACCOUNT/client_credentials" |
    "$VENV/bin/python" -c 'import json, sys; c = json.load(sys.stdin); print(c["client_id"], c["client_secret"])')
[ -n "$CMS_CLIENT_SECRET" ] || { echo "could not make a client credential" >&2; exit 1; }

cat >"$WORK/schemathesis.toml" <<EOF
[auth.openapi.oauthClientBasic]
username = "$OAUTH_CLIENT_ID"
password = "$OAUTH_CLIENT_SECRET"

[auth.openapi.policyKey]
api_key = "$PLAYBACK_POLICY_KEY"

[auth.openapi.adminBearer]
bearer = "$ADMIN_TOKEN"

[auth.openapi.dashboardCookie]
api_key = "$DASHBOARD_SESSION"

# Schema-valid is not always valid: the admin API, the license server and the collector refuse
# with a 400 what no schema can say (a reference id another video holds, a PEM that is not an
# RSA key, a playlist naming another account's video, an SPC that does not decrypt, a NUL in a
# member's name), the CMS API with a 422 (a schedule that ends before it starts, a custom field
# the account made required). Data the schema forbids may also be refused with 413 (a body over 64 KiB).
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]

[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]

# The Playback API; the static URLs (below) are left out here: they take a video and a token too.
[[operations]]
include-path-regex = '^/playback/(?!.*[.](m3u8|mp4|mpd)\$)'
parameters = { "path.account" = "$PLAYBACK_ACCOUNT" }

[[operations]]
include-path-regex = '^/playback/.*[.](m3u8|mp4|mpd)\$'
parameters = { "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$CLEAR_VIDEO", "query.bcov_auth" = "$STATIC_TOKEN" }

[[operations]]
include-operation-id = "requestLicense"
parameters = { "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$LICENSE_VIDEO", "path.key" = "$LICENSE_KEY", "query.fastly_token" = "$LICENSE_TOKEN" }

[[operations]]
include-operation-id = "getMasterPlaylist"
parameters = { "path.protection" = "$MASTER_PROTECTION", "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$MASTER_VIDEO", "path.label" = "$MASTER_LABEL", "query.fastly_token" = "$MASTER_TOKEN" }

[[operations]]
include-operation-id = "getMediaPlaylist"
parameters = { "path.protection" = "$MASTER_PROTECTION", "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$MASTER_VIDEO", "path.rendition" = "$MEDIA_RENDITION", "path.label" = "$MASTER_LABEL", "query.fastly_token" = "$MEDIA_TOKEN" }

[[operations]]
include-operation-id = "getSegment"
parameters = { "path.protection" = "$MASTER_PROTECTION", "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$MASTER_VIDEO", "path.rendition" = "$MEDIA_RENDITION", "path.segment" = "$SEGMENT_NAME", "query.fastly_token" = "$SEGMENT_TOKEN" }

[[operations]]
include-operation-id = "getAES128Key"
parameters = { "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$AES_VIDEO", "path.key" = "$AES_KEY", "query.fastly_token" = "$AES_TOKEN" }

[[operations]]
include-path-regex = "^/(image|text)/v1/"
parameters = { "path.account" = "$PLAYBACK_ACCOUNT", "path.video" = "$CLEAR_VIDEO_UUID" }

[[operations]]
include-path-regex = "^/_admin/v1/accounts/[{]account[}]"
parameters = { "path.account" = "$ADMIN_ACCOUNT" }

[[operations]]
include-path-regex = "^/v1/accounts/[{]account[}]"
parameters = { "path.account" = "$ADMIN_ACCOUNT" }
EOF

run() {
    "$VENV/bin/schemathesis" --config-file "${CONFIG:-$WORK/schemathesis.toml}" --no-color run docs/openapi.yaml \
        --url "$BASE" \
        --checks all \
        --phases examples,coverage,fuzzing,stateful \
        --max-examples "$MAX_EXAMPLES" --seed "$SEED" --generation-database none \
        --workers "$WORKERS" --request-timeout 10 \
        "$@"
}

status=0
# Not fuzzed, one reason each:
#   getSampleAESTestKey: exists only in in-process tests (plainSampleAESKeysForTesting); the
#     mock-backend command answers 404 to every URL and hands out none to pin.
#   adminFollowRequests: a server-sent event stream, which never ends.
#   adminReset: restores the catalog and forgets licenses in the middle of the run.
#   adminAddFaults: a rule turns later answers into injected errors, stalls and dropped connections.
#   adminSetClock: moving the clock expires the license route's token; it runs alone, last.
#   dashboardFollowRequests: the dashboard's copy of the request-log event stream, which never ends.
#   (The dashboard's forms, sign-out included, are fuzzed signed in: without the page's form token they answer 403,
#   changing nothing, so the session lasts the run.)
run --exclude-operation-id getSampleAESTestKey --exclude-operation-id adminFollowRequests \
    --exclude-operation-id adminReset --exclude-operation-id adminAddFaults \
    --exclude-operation-id adminSetClock --exclude-operation-id dashboardFollowRequests --exclude-path-regex '^/v1/' || status=1
# The back-office APIs with a fresh token (seconds, well within its 300 s).
CMS_TOKEN=$(curl -sSf -u "$CMS_CLIENT_ID:$CMS_CLIENT_SECRET" -d grant_type=client_credentials "$BASE/v4/access_token" |
    "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')
{ cat "$WORK/schemathesis.toml"; printf '\n[auth.openapi.oauthBearer]\nbearer = "%s"\n' "$CMS_TOKEN"; } >"$WORK/schemathesis-cms.toml"
CONFIG="$WORK/schemathesis-cms.toml" run --include-path-regex '^/v1/' || status=1
# (One operation: no links to follow, so no stateful phase.)
run --include-operation-id adminSetClock --phases examples,coverage,fuzzing || status=1

backend_survived || status=1
[ "$status" -eq 0 ] && echo "schemathesis: no failures" >&2 || echo "schemathesis: failures above" >&2
exit "$status"
