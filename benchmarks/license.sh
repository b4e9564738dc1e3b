#!/usr/bin/env bash
# Offline licenses issued per second by mock-backend (release build), from parallel clients:
# `wrk -t2 -c32` POSTs pre-generated license requests (each a fresh SPC built with
# LicenseProtocol's client side, so no nonce repeats) to the FairPlay video's key_request_url,
# asking for offline purchases. Rows (every row's instances run from the start; the runs go
# round by round, every row once per round, so the rows' runs are side by side in time):
#   sqlite      one instance, SQLite in its data directory (the default)
#   sqlite-nginx that instance behind nginx (the proxy of postgres x2, alone: its cost here)
#   postgres    one instance, --database on a local PostgreSQL
#   postgres x2 two instances on that PostgreSQL behind nginx (round robin), wrk against nginx
# and, measured between the sqlite row's runs on the same disk, the raw single-connection
# commit rate: the sqlite3 shell committing one small row per transaction into a database
# with the settings of the backend's writing connection (WAL, synchronous=NORMAL, 1 KiB pages,
# SQLite's own checkpoint every 64,000 pages: the backend copies the WAL from a second
# connection every 0.25 s besides, which a single connection cannot).
# wrk's script (license.lua) formats every request once and leaves answers to wrk's own
# counting, so the client costs the shared cores as little as it can (LICENSE_BENCH_REFUSALS=1:
# every answer goes to Lua, which prints the statuses of refusals and the first one's body).
# Each row is measured 3 times (wrk runs of `duration` seconds on one instance, each with
# requests of its own); the median is printed, and licenses/s as a ratio to the raw commit rate.
#   benchmarks/license.sh [duration-seconds] [connections] [rows]   (default 10, 32, "sqlite sqlite-nginx postgres postgres2")
# An instance runs with its default HTTP threads (2): a license request waits for its batch's
# commit with its connection suspended, not on a thread, so every request in flight can share
# a commit. (Until 2026-11-28 a request held its thread, and the script ran as many threads as
# wrk has connections.)
# Every license is a durable transaction: nonce, license row, history row.
# SQLite: synchronous=NORMAL (the backend's setting): a commit survives a crash of the process,
# and the WAL is fsynced at each checkpoint (a checkpointer thread's, every 0.25 s); only a power loss
# can drop the latest commits. Licenses that arrive together are committed together (group
# commit, one writer); each answer goes out after its batch's commit.
# PostgreSQL: its defaults (fsync on, synchronous_commit on): every commit is flushed to its
# WAL before the answer, which is stronger than SQLite's NORMAL; each commit costs an fsync,
# shared between concurrent commits (group commit).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
connections=${2:-32}
rows=${3:-sqlite sqlite-nginx postgres postgres2}
threads=2
runs=3
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


# start_backend NAME ARGS...: starts an instance, sets $base to its URL and adds its pid.
start_backend() {
    local name=$1; shift
    .build/release/mock-backend --port 0 --data-dir "$work/$name" --log-level warning "$@" >"$work/$name.out" 2>"$work/$name.err" &
    pids+=($!)
    for _ in $(seq 600); do grep -q listening "$work/$name.out" 2>/dev/null && break; sleep 0.05; done
    base=$(awk '/listening on/ {print $3}' "$work/$name.out")
    [ -n "$base" ] || { cat "$work/$name.err"; exit 1; }
}

# start_balancer PORT URL...: nginx on PORT, round robin over the instances at URL... with
# keep-alive connections to them (the balancer of the postgres2 and sqlite-nginx rows).
start_balancer() {
    local port=$1 servers="" url
    shift
    for url in "$@"; do servers+="server ${url#http://}; "; done
    local folder="$work/nginx-$port"
    rm -rf "$folder"; mkdir -p "$folder"
    cat >"$folder/nginx.conf" <<EOF
worker_processes 1;
pid $folder/nginx.pid;
error_log $folder/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $folder/body;
    proxy_temp_path $folder/proxy;
    fastcgi_temp_path $folder/fastcgi;
    uwsgi_temp_path $folder/uwsgi;
    scgi_temp_path $folder/scgi;
    upstream mock_backends { $servers keepalive 64; }
    server {
        listen 127.0.0.1:$port;
        location / { proxy_pass http://mock_backends; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
    }
}
EOF
    nginx -p "$folder" -c "$folder/nginx.conf" -g 'daemon off;' 2>"$folder/stderr" &
    pids+=($!)
    for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.05; done
}

stop_backends() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    pids=()
}

# raw_commit_rate: small transactions/s of one sqlite3 connection in $work (the disk the
# backend's SQLite is on), with the backend's settings; each commit writes what a license's
# does (a used SPC keyed by its expiry's milliseconds then its nonce, in a table without row
# ids with an expiry index, as the backend's "v9" keeps them; a license row with ~500 bytes of
# terms; a history row), no reads.
raw_commit_rate() {
    local db="$work/raw/commits.sqlite" n=$((duration * 12000))
    rm -rf "$work/raw"; mkdir -p "$work/raw"
    python3 - "$n" >"$work/raw/script.sql" <<'PY'
import os, sys
n = int(sys.argv[1])
out = sys.stdout
out.write("PRAGMA page_size = 1024;\nPRAGMA journal_mode = WAL;\nPRAGMA synchronous = NORMAL;\nPRAGMA wal_autocheckpoint = 64000;\n")
out.write("CREATE TABLE used_spc (key BLOB PRIMARY KEY, expires_at REAL NOT NULL) WITHOUT ROWID;\n")
out.write("CREATE INDEX used_spc_by_expiry ON used_spc (expires_at);\n")
out.write("CREATE TABLE license (id TEXT PRIMARY KEY, terms TEXT NOT NULL, issued_at REAL NOT NULL);\n")
out.write("CREATE TABLE license_event (id INTEGER PRIMARY KEY, license_id TEXT NOT NULL, event TEXT NOT NULL, at REAL NOT NULL);\n")
out.write("CREATE INDEX license_event_by_license ON license_event (license_id);\n")
terms = "x" * 500
for i in range(n):
    nonce, lid, at = os.urandom(16).hex(), f"{1800000000000 + i}-{os.urandom(6).hex()}", 1800000000 + i
    out.write(f"BEGIN; INSERT INTO used_spc VALUES (x'{at * 1000:016x}{nonce}', {at}); INSERT INTO license VALUES ('{lid}', '{terms}', {at}); "
              f"INSERT INTO license_event (license_id, event, at) VALUES ('{lid}', 'acquire', {at}); COMMIT;\n")
PY
    local start end
    start=$(date +%s.%N)
    sqlite3 "$db" <"$work/raw/script.sql" >/dev/null
    end=$(date +%s.%N)
    python3 -c "print(round($n / ($end - $start)))"
}

# median N...: the median of the numbers.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# requests_of LABEL: the folder of the row's certificate and requests.
requests_of() { echo "$work/requests/${1// /-}"; }

# prepare LABEL URL STORED-COMMAND: the row's key request URL and certificate, and one
# license request checked; the row is then given requests by generate and measured by run_row.
declare -A key_urls stored_commands rates_of p99s_of key_ids
labels=()
prepare() {
    local label=$1 url=$2 folder=$(requests_of "$1")
    mkdir -p "$folder"
    labels+=("$label")
    stored_commands[$label]=$3
    curl -sf -H "BCOV-Policy: $key" "$url/playback/v1/accounts/$account/videos/6415818918103" >"$folder/video.json"
    local key_url cert_url
    read -r key_url cert_url < <(python3 -c '
import json, sys
fp = json.load(open(sys.argv[1]))["sources"][0]["key_systems"]["com.apple.fps.1_0"]
print(fp["key_request_url"], fp["certificate_url"])' "$folder/video.json")
    key_urls[$label]=$key_url
    curl -sf "$cert_url" -o "$folder/cert.der"
    key_ids[$label]=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.urlsplit(sys.argv[1]).path.rsplit("/", 1)[1])' "$key_url")
    .build/release/LicenseRequests "$folder/cert.der" "$account" "${key_ids[$label]}" 1 "$folder/one"
    local status
    status=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H 'X-BOLT-OFFLINE-LICENSE: true' \
        -H "X-BC-CRT-CONFIG: $crt" --data-binary @"$folder/one" "$key_url")
    [ "$status" = 200 ] || { echo "[$label] license request answered $status"; exit 1; }
}

# generate LABEL RUN: the row's requests for one run, made just before its round (an SPC is
# accepted for 10 minutes). 12,000 a second of the run: each wrk thread sends its own half
# of them, and a thread that ran out would send its first ones again, as replays; at 8,000 a
# second one thread served faster than the other did run out (refusals in a 6,900/s run).
generate() {
    local label=$1 run=$2 folder=$(requests_of "$1") count=$((duration * 12000)) start
    start=$(date +%s.%N)
    .build/release/LicenseRequests "$folder/cert.der" "$account" "${key_ids[$label]}" "$count" "$folder/run.0$run"
    echo "[$label] generated $count license requests in $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s"
}

# run_row LABEL RUN: one wrk run of the row with its requests of that run.
run_row() {
    local label=$1 run=$2 folder=$(requests_of "$1") out requests seconds non2xx p99 rate
    out=$(wrk -t"$threads" -c"$connections" -d"${duration}s" --latency -s benchmarks/license.lua "${key_urls[$label]}" -- \
        "$folder/run.0$run" "$threads" "$crt")
    rm -f "$folder/run.0$run"
    requests=$(echo "$out" | awk '/requests in/ {print $1}')
    seconds=$(echo "$out" | awk '/requests in/ {sub(/s,$/, "", $4); print $4}')
    non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
    non2xx=${non2xx:-0}
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    rate=$(python3 -c "print(round(($requests - $non2xx) / $seconds))")
    rates_of[$label]+=" $rate"; p99s_of[$label]+=" $p99"
    echo "$out" | grep '^refused with status' | sed "s/^/[$label] /" || true
    [ "$non2xx" = 0 ] || [ "${LICENSE_BENCH_REFUSALS:-}" = 1 ] ||
        echo "[$label] $non2xx answers were not 200: LICENSE_BENCH_REFUSALS=1 benchmarks/license.sh shows their statuses and the first body"
    printf '[%s] run %d: %d licenses in %ss (%s refused): %d/s, p99 %s\n' "$label" "$((run + 1))" "$((requests - non2xx))" "$seconds" \
        "$non2xx" "$rate" "$p99"
}

# rate_of LABEL: the median licenses/s of the row's runs.
rate_of() { median ${rates_of[$1]}; }

# Every row's instances start first and get their requests; then the runs go round by round,
# every row once per round (the raw commit rate before SQLite's), so load from elsewhere on
# these shared machines hits the rows alike and the ratios compare runs made side by side.
sqlite_query="python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT COUNT(*) FROM license\").fetchone()[0])'"
for row in $rows; do
    case "$row" in
    sqlite)
        start_backend sqlite
        prepare sqlite "$base" "$sqlite_query $work/sqlite/backend.sqlite"
        ;;
    sqlite-nginx)
        # The proxy's own cost on these cores: one SQLite instance behind the nginx of postgres2.
        nginx_port=$(free_port)
        start_backend sqlite-nginx --public-base-url "http://127.0.0.1:$nginx_port"
        start_balancer "$nginx_port" "$base"
        prepare "sqlite nginx" "http://127.0.0.1:$nginx_port" "$sqlite_query $work/sqlite-nginx/backend.sqlite"
        ;;
    postgres)
        [ -n "$PG_DATA" ] || start_postgres "$work/pg"
        database=$(new_database bench1)
        start_backend postgres1 --database "$database"
        prepare postgres "$base" "$PG_BIN/psql -A -t -c 'SELECT count(*) FROM license' $database"
        ;;
    postgres2)
        [ -n "$PG_DATA" ] || start_postgres "$work/pg"
        database2=$(new_database bench2)
        nginx_port=$(free_port)
        start_backend postgres2a --database "$database2" --public-base-url "http://127.0.0.1:$nginx_port"
        a=$base
        start_backend postgres2b --database "$database2" --public-base-url "http://127.0.0.1:$nginx_port"
        b=$base
        start_balancer "$nginx_port" "$a" "$b"
        prepare "postgres x2" "http://127.0.0.1:$nginx_port" "$PG_BIN/psql -A -t -c 'SELECT count(*) FROM license' $database2"
        ;;
    *) echo "unknown row $row (sqlite, sqlite-nginx, postgres, postgres2)"; exit 1 ;;
    esac
done
raw_rates=()
for run in $(seq 0 $((runs - 1))); do
    for label in "${labels[@]}"; do generate "$label" "$run"; done
    # Flush the requests now, so their writeback does not compete with the stores' WAL.
    sync
    for label in "${labels[@]}"; do
        if [ "$label" = sqlite ]; then
            raw_rates+=("$(raw_commit_rate)")
            echo "[raw commit] run $((run + 1)): ${raw_rates[-1]} commits/s"
        fi
        run_row "$label" "$run"
    done
done

summary=()
for label in "${labels[@]}"; do
    summary+=("$(printf '%-12s licenses/s: %6d   (runs:%s)   p99s:%s   stored: %d' "$label" "$(rate_of "$label")" "${rates_of[$label]}" \
        "${p99s_of[$label]}" "$(eval "${stored_commands[$label]}")")")
    case "$label" in
    sqlite)
        summary+=("$(printf '%-12s commits/s:  %6d   (runs: %s)   licenses/s over it: %s' "raw commit" "$(median "${raw_rates[@]}")" \
            "${raw_rates[*]}" "$(python3 -c "print(f'{$(rate_of sqlite) / $(median "${raw_rates[@]}"):.2f}x')")")")
        ;;
    *)
        [ -z "${rates_of[sqlite]:-}" ] ||
            summary+=("$(printf '%-12s over SQLite: %s' "$label" "$(python3 -c "print(f'{$(rate_of "$label") / $(rate_of sqlite):.2f}x')")")")
        if [ "$label" = "postgres x2" ] && [ -n "${rates_of[sqlite nginx]:-}" ]; then
            summary+=("$(printf '%-12s over SQLite behind nginx: %s' "$label" \
                "$(python3 -c "print(f'{$(rate_of "$label") / $(rate_of "sqlite nginx"):.2f}x')")")")
        fi
        ;;
    esac
done
stop_backends

echo
printf 'wrk -t%d -c%d, default HTTP threads, median of %d runs of %d s, %d cores (shared by wrk, nginx, PostgreSQL and the instances)\n' "$threads" "$connections" "$runs" "$duration" "$(nproc)"
for line in "${summary[@]}"; do echo "$line"; done
