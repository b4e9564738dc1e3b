#!/usr/bin/env bash
# Offline licenses issued per second by mock-backend (release build, 2 HTTP threads an
# instance), from parallel clients: `wrk -t2 -c32` POSTs pre-generated license requests (each
# a fresh SPC built with LicenseProtocol's client side, so no nonce repeats) to the FairPlay
# video's key_request_url, asking for offline purchases. Three rows, one after the other:
#   sqlite      one instance, SQLite in its data directory (the default)
#   postgres    one instance, --database on a local PostgreSQL
#   postgres x2 two instances on that PostgreSQL behind nginx (round robin), wrk against nginx
#   benchmarks/license.sh [duration-seconds] [connections] [rows]   (default 10, 32, "sqlite postgres postgres2")
# Every license is a durable transaction: nonce, license row, history row.
# SQLite: synchronous=NORMAL (the backend's setting): a commit survives a crash of the process,
# and the WAL is fsynced at each checkpoint (every 8,000 pages of 1 KiB); only a power loss
# can drop the latest commits. FULL would fsync every commit, which measures the disk, not the
# license server.
# PostgreSQL: its defaults (fsync on, synchronous_commit on): every commit is flushed to its
# WAL before the answer, which is stronger than SQLite's NORMAL; each commit costs an fsync,
# shared between concurrent commits (group commit).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
connections=${2:-32}
rows=${3:-sqlite postgres postgres2}
threads=2
scripts/install-deps.sh wrk curl python3 libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev libpq-dev pkg-config postgresql nginx

swift build -c release --product mock-backend >/dev/null
swift build -c release --product LicenseRequests >/dev/null
work=$(mktemp -d)
chmod 755 "$work"
pids=()
. scripts/lib/free-port.sh
. scripts/lib/postgres.sh
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    stop_postgres
    rm -rf "$work"
}
trap cleanup EXIT

account=6415818918001
key=BCpkADawqM1northwindSEARCHkey0001
crt=$(printf '%s' '{"profile":{"purchase":{}},"storeLicense":true}' | base64 -w0)
summary=()


# start_backend NAME ARGS...: starts an instance, sets $base to its URL and adds its pid.
start_backend() {
    local name=$1; shift
    .build/release/mock-backend --port 0 --data-dir "$work/$name" --threads 2 --log-level warning "$@" >"$work/$name.out" 2>"$work/$name.err" &
    pids+=($!)
    for _ in $(seq 600); do grep -q listening "$work/$name.out" 2>/dev/null && break; sleep 0.05; done
    base=$(awk '/listening on/ {print $3}' "$work/$name.out")
    [ -n "$base" ] || { cat "$work/$name.err"; exit 1; }
}

stop_backends() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    pids=()
}

# measure LABEL URL STORED-COMMAND: requests generated for the backend at URL, one checked, then wrk.
measure() {
    local label=$1 url=$2 stored_command=$3
    curl -sf -H "BCOV-Policy: $key" "$url/playback/v1/accounts/$account/videos/6415818918103" >"$work/video.json"
    read -r key_url cert_url < <(python3 -c '
import json, sys
fp = json.load(open(sys.argv[1]))["sources"][0]["key_systems"]["com.apple.fps.1_0"]
print(fp["key_request_url"], fp["certificate_url"])' "$work/video.json")
    curl -sf "$cert_url" -o "$work/cert.der"
    local key_id count start
    key_id=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.urlsplit(sys.argv[1]).path.rsplit("/", 1)[1])' "$key_url")
    count=$((duration * 15000))
    start=$(date +%s.%N)
    .build/release/LicenseRequests "$work/cert.der" "$account" "$key_id" "$count" "$work/bodies"
    echo "[$label] generated $count license requests in $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s"
    # Flush the ~100 MB of bodies now, so their writeback does not compete with the stores' WAL.
    sync
    head -1 "$work/bodies" >"$work/one"
    tail -n +2 "$work/bodies" >"$work/rest"
    local status
    status=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H 'X-BOLT-OFFLINE-LICENSE: true' \
        -H "X-BC-CRT-CONFIG: $crt" --data-binary @"$work/one" "$key_url")
    [ "$status" = 200 ] || { echo "[$label] license request answered $status"; exit 1; }

    local out requests seconds non2xx p99 stored rate
    out=$(wrk -t"$threads" -c"$connections" -d"${duration}s" --latency -s benchmarks/license.lua "$key_url" -- "$work/rest" "$threads" "$crt")
    requests=$(echo "$out" | awk '/requests in/ {print $1}')
    seconds=$(echo "$out" | awk '/requests in/ {sub(/s,$/, "", $4); print $4}')
    non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
    non2xx=${non2xx:-0}
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    stored=$(eval "$stored_command")
    rate=$(python3 -c "print(round(($requests - $non2xx) / $seconds))")
    echo "$out" | sed -n '/Latency Distribution/,/requests in/p'
    printf '[%s] licenses issued: %d in %ss (%s refused), stored: %d\n' "$label" "$((requests - non2xx))" "$seconds" "$non2xx" "$stored"
    summary+=("$(printf '%-12s licenses/s: %6d   p99: %8s   stored: %d' "$label" "$rate" "$p99" "$stored")")
}

for row in $rows; do
    case "$row" in
    sqlite)
        start_backend sqlite
        measure sqlite "$base" "python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT COUNT(*) FROM license\").fetchone()[0])' $work/sqlite/backend.sqlite"
        stop_backends
        ;;
    postgres)
        [ -n "$PG_DATA" ] || start_postgres "$work/pg"
        database=$(new_database bench1)
        start_backend postgres1 --database "$database"
        measure postgres "$base" "$PG_BIN/psql -A -t -c 'SELECT count(*) FROM license' $database"
        stop_backends
        ;;
    postgres2)
        [ -n "$PG_DATA" ] || start_postgres "$work/pg"
        database=$(new_database bench2)
        nginx_port=$(free_port)
        start_backend postgres2a --database "$database" --public-base-url "http://127.0.0.1:$nginx_port"
        a=$base
        start_backend postgres2b --database "$database" --public-base-url "http://127.0.0.1:$nginx_port"
        b=$base
        mkdir -p "$work/nginx"
        cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    upstream mock_backends { server ${a#http://}; server ${b#http://}; keepalive 64; }
    server {
        listen 127.0.0.1:$nginx_port;
        location / { proxy_pass http://mock_backends; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
    }
}
EOF
        nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' 2>"$work/nginx/stderr" &
        pids+=($!)
        for _ in $(seq 200); do curl -sf "http://127.0.0.1:$nginx_port/healthz" >/dev/null 2>&1 && break; sleep 0.05; done
        measure "postgres x2" "http://127.0.0.1:$nginx_port" "$PG_BIN/psql -A -t -c 'SELECT count(*) FROM license' $database"
        stop_backends
        ;;
    *) echo "unknown row $row (sqlite, postgres, postgres2)"; exit 1 ;;
    esac
done

echo
printf 'wrk -t%d -c%d, %d s each, %d cores (shared by wrk, nginx, PostgreSQL and the instances)\n' "$threads" "$connections" "$duration" "$(nproc)"
for line in "${summary[@]}"; do echo "$line"; done
