#!/usr/bin/env bash
# Offline licenses issued per second by mock-backend (release build, 2 HTTP threads), from
# parallel clients: `wrk -t2 -c32` POSTs pre-generated license requests (each a fresh SPC
# built with LicenseProtocol's client side, so no nonce repeats) to the FairPlay video's
# key_request_url, asking for offline purchases.
#   benchmarks/license.sh [duration-seconds] [connections]   (default 10, 32)
# Every license is a durable SQLite (WAL) transaction: nonce, license row, history row.
# synchronous=NORMAL (the backend's setting): a commit survives a crash of the process,
# and the WAL is fsynced at each checkpoint (every 8,000 pages of 1 KiB); only a power loss
# can drop the latest commits.
# FULL would fsync every commit, which measures the disk, not the license server.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
connections=${2:-32}
threads=2
scripts/install-deps.sh wrk curl python3 libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev pkg-config

swift build -c release --product mock-backend >/dev/null
swift build -c release --product LicenseRequests >/dev/null
work=$(mktemp -d)
cleanup() {
    [ -n "${backend:-}" ] && kill "$backend" 2>/dev/null && wait "$backend" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

.build/release/mock-backend --port 0 --data-dir "$work/data" --threads 2 --log-level warning >"$work/out" 2>"$work/err" &
backend=$!
for _ in $(seq 200); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.05; done
base=$(awk '/listening on/ {print $3}' "$work/out")
[ -n "$base" ] || { cat "$work/err"; exit 1; }

account=6415818918001
key=BCpkADawqM1northwindSEARCHkey0001
curl -sf -H "BCOV-Policy: $key" "$base/playback/v1/accounts/$account/videos/6415818918103" >"$work/video.json"
read -r key_url cert_url < <(python3 -c '
import json, sys
fp = json.load(open(sys.argv[1]))["sources"][0]["key_systems"]["com.apple.fps.1_0"]
print(fp["key_request_url"], fp["certificate_url"])' "$work/video.json")
curl -sf "$cert_url" -o "$work/cert.der"
key_id=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.urlsplit(sys.argv[1]).path.rsplit("/", 1)[1])' "$key_url")
crt=$(printf '%s' '{"profile":{"purchase":{}},"storeLicense":true}' | base64 -w0)

count=$((duration * 15000))
start=$(date +%s.%N)
.build/release/LicenseRequests "$work/cert.der" "$account" "$key_id" "$count" "$work/bodies"
echo "generated $count license requests in $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s"

# Flush the ~100 MB of bodies now, so their writeback does not compete with the WAL's.
sync

# One request to check the setup before measuring.
head -1 "$work/bodies" >"$work/one"
tail -n +2 "$work/bodies" >"$work/rest"
status=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H 'X-BOLT-OFFLINE-LICENSE: true' \
    -H "X-BC-CRT-CONFIG: $crt" --data-binary @"$work/one" "$key_url")
[ "$status" = 200 ] || { echo "license request answered $status"; exit 1; }

out=$(wrk -t"$threads" -c"$connections" -d"${duration}s" --latency -s benchmarks/license.lua "$key_url" -- "$work/rest" "$threads" "$crt")
requests=$(echo "$out" | awk '/requests in/ {print $1}')
seconds=$(echo "$out" | awk '/requests in/ {sub(/s,$/, "", $4); print $4}')
non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
non2xx=${non2xx:-0}
p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
stored=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM license").fetchone()[0])' "$work/data/backend.sqlite")
echo "$out" | sed -n '/Latency Distribution/,/requests in/p'
printf 'licenses issued: %d in %ss (%s refused), stored in SQLite: %d\n' "$((requests - non2xx))" "$seconds" "$non2xx" "$stored"
printf 'licenses/s: %.0f   p99: %s   (wrk -t%d -c%d, %d cores, synchronous=NORMAL, WAL)\n' \
    "$(python3 -c "print(($requests - $non2xx) / $seconds)")" "$p99" "$threads" "$connections" "$(nproc)"
