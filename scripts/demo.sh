#!/usr/bin/env bash
# `make demo`: build, start the mock backend on a free port with a throwaway data folder, and
# run `offline demo`, which narrates the whole flow (find, estimate, license, download with
# live progress, play offline over loopback, a license running out, renewal, a crash and a
# resume). Exits non-zero if any step fails.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --product mock-backend >/dev/null
swift build --product offline >/dev/null
data=$(mktemp -d)
.build/debug/mock-backend --port 0 --data-dir "$data/backend" --log-level warning >"$data/stdout" 2>"$data/server.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 200); do grep -q listening "$data/stdout" 2>/dev/null && break; sleep 0.05; done
for _ in $(seq 200); do grep -q "admin token" "$data/stdout" 2>/dev/null && break; sleep 0.05; done
base=$(awk '/listening on/ {print $3}' "$data/stdout")
token=$(awk '/admin token/ {print $3}' "$data/stdout")
[ -n "$base" ] || { echo "the mock backend did not start:"; cat "$data/server.log"; exit 1; }

OFFLINE_STORAGE="$data/sdk" .build/debug/offline demo --base-url "$base" --admin-token "$token"
