#!/usr/bin/env bash
# Segment serving and Playback API throughput of mock-backend beside nginx, in one run.
#   benchmarks/server.sh [duration-seconds]   (default 5; ROUNDS=3 runs of each, the median reported)
# Builds release, starts mock-backend twice (quiet: 2 threads, warnings-only log; and with its
# default settings, every request logged at info to a file) and nginx (2 workers,
# sendfile, no access log) on loopback ports serving the same fixture segment, and runs
# `wrk -t2 -c32` against each, for a clear segment and a cached SAMPLE-AES (FairPlay) one, a CMAF
# media segment and init segment (clear, and the FairPlay video's cbcs one; nginx serves a copy of
# the mock's bytes), and the clear segment over HTTPS (the mock's local-CA certificate, served by
# both). CMAF is packaged on first use: the first request (cold) and the median of the next 20
# (warm) are timed with curl.
# Prints requests/s, p99 latency and the ratio to nginx.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-5}
scripts/install-deps.sh nginx wrk curl python3 libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev pkg-config

swift build -c release --product mock-backend >/dev/null
work=$(mktemp -d)
chmod 755 "$work"  # nginx workers (not root) read the SAMPLE-AES cache under it
cleanup() {
    [ -n "${backend:-}" ] && kill "$backend" 2>/dev/null && wait "$backend" 2>/dev/null
    [ -n "${default_backend:-}" ] && kill "$default_backend" 2>/dev/null && wait "$default_backend" 2>/dev/null
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

.build/release/mock-backend --port 0 --tls-port 0 --data-dir "$work/data" --threads 2 --log-level warning >"$work/out" 2>"$work/err" &
backend=$!
# The same mock as a developer runs it: default settings (every request logged at info, to a file here).
.build/release/mock-backend --port 0 --data-dir "$work/data-default" >"$work/out-default" 2>"$work/err-default" &
default_backend=$!
for _ in $(seq 200); do grep -q "^tls ca" "$work/out" 2>/dev/null && grep -q "^admin token" "$work/out-default" 2>/dev/null && break; sleep 0.05; done
base=$(awk '/listening on/ {print $3}' "$work/out")
default_base=$(awk '/listening on/ {print $3}' "$work/out-default")
secure_base=$(awk '/^https on/ {print $3}' "$work/out")
[ -n "$base" ] || { cat "$work/err"; exit 1; }

. scripts/lib/free-port.sh
nginx_port=$(free_port)
nginx_tls_port=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx.conf" <<CONF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    client_body_temp_path $work/nginx;
    proxy_temp_path $work/nginx;
    fastcgi_temp_path $work/nginx;
    uwsgi_temp_path $work/nginx;
    scgi_temp_path $work/nginx;
    server {
        listen 127.0.0.1:$nginx_port;
        root $PWD/fixtures/media;
        location /cache/ { alias $work/data/cache/; }
        location /cmaf/ { alias $work/nginx-root/cmaf/; }
    }
    server {
        listen 127.0.0.1:$nginx_tls_port ssl;
        ssl_certificate $work/data/tls/server.pem;
        ssl_certificate_key $work/data/tls/server-key.pem;
        root $PWD/fixtures/media;
    }
}
CONF
nginx -c "$work/nginx.conf"

key=BCpkADawqM1northwindSEARCHkey0001
account=6415818918001
master=$(curl -sf -H "BCOV-Policy: $key" "$base/playback/v1/accounts/$account/videos/6415818918101" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["sources"][0]["src"])')
rendition=$(curl -sf "$master" | grep -A1 'RESOLUTION=960x540' | tail -1)
segment=$(curl -sf "$rendition" | grep -v '^#' | head -1)
size=$(curl -sf "$segment" | wc -c)
nginx_segment="http://127.0.0.1:$nginx_port/bars/video/960x540/seg_000.ts"
[ "$(curl -sf "$nginx_segment" | wc -c)" = "$size" ] || { echo "nginx does not serve the same file"; exit 1; }
default_master=$(curl -sf -H "BCOV-Policy: $key" "$default_base/playback/v1/accounts/$account/videos/6415818918101" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["sources"][0]["src"])')
default_segment=$(curl -sf "$(curl -sf "$default_master" | grep -A1 'RESOLUTION=960x540' | tail -1)" | grep -v '^#' | head -1)
[ "$(curl -sf "$default_segment" | wc -c)" = "$size" ] || { echo "the default-settings mock does not serve the same segment"; exit 1; }
# The same segment over HTTPS: the token is bound to the path, so it opens it on either listener.
secure_segment="$secure_base${segment#"$base"}"
nginx_tls_segment="https://127.0.0.1:$nginx_tls_port/bars/video/960x540/seg_000.ts"
ca="$work/data/tls/ca.pem"
[ "$(curl -sf --cacert "$ca" "$secure_segment" | wc -c)" = "$size" ] || { echo "mock-backend does not serve the segment over HTTPS"; exit 1; }
[ "$(curl -sf --cacert "$ca" "$nginx_tls_segment" | wc -c)" = "$size" ] || { echo "nginx does not serve the segment over HTTPS"; exit 1; }

# A FairPlay (SAMPLE-AES) segment: the first request encrypts it into the cache; nginx then
# serves that same cached file.
fps_master=$(curl -sf -H "BCOV-Policy: $key" "$base/playback/v1/accounts/$account/videos/6415818918103" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["sources"][0]["src"])')
fps_rendition=$(curl -sf "$fps_master" | grep -A1 'RESOLUTION=960x540' | tail -1)
fps_segment=$(curl -sf "$fps_rendition" | grep -v '^#' | head -1)
fps_size=$(curl -sf "$fps_segment" | wc -c)
fps_cached=$(cd "$work/data/cache" && find sample-aes -name '*.ts' -size "${fps_size}c" | head -1)
[ -n "$fps_cached" ] || { echo "no cached SAMPLE-AES segment of $fps_size bytes"; exit 1; }
nginx_fps="http://127.0.0.1:$nginx_port/cache/$fps_cached"
[ "$(curl -sf "$nginx_fps" | cmp - <(curl -sf "$fps_segment") && echo same)" = same ] || { echo "nginx does not serve the same SAMPLE-AES file"; exit 1; }

# CMAF (HLS v7): the 960x540 rendition's init segment and first media segment, clear and cbcs.
# The first request of each rendition packages it (cold); nginx serves the bytes the mock served.
cmaf_segment_of() {  # video id -> "init-url segment-url" of its 960x540 CMAF rendition
    local v7 media
    v7=$(curl -sf -H "BCOV-Policy: $key" "$base/playback/v1/accounts/$account/videos/$1" |
        python3 -c 'import json,sys; print([s["src"] for s in json.load(sys.stdin)["sources"] if s.get("ext_x_version") == "7"][0])')
    media=$(curl -sf "$v7" | grep -m1 -A1 'RESOLUTION=960x540' | tail -1)  # the H.264 one (the HEVC ladder follows)
    curl -sf "$media" >"$work/cmaf-media.m3u8"
    echo "$(grep -o 'EXT-X-MAP:URI="[^"]*' "$work/cmaf-media.m3u8" | cut -d'"' -f2) $(grep -v '^#' "$work/cmaf-media.m3u8" | head -1)"
}
mkdir -p "$work/nginx-root/cmaf"
timed() { curl -sf -o /dev/null -w '%{time_total}\n' "$1"; }
warm_median() { for _ in $(seq 20); do timed "$1"; done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Cold: the v7 master's first request packages every rendition of the asset; a segment's first
# request makes (and for cbcs encrypts) it. Warm: the median of the next 20.
cmaf_master=$(curl -sf -H "BCOV-Policy: $key" "$base/playback/v1/accounts/$account/videos/6415818918101" |
    python3 -c 'import json,sys; print([s["src"] for s in json.load(sys.stdin)["sources"] if s.get("ext_x_version") == "7"][0])')
master_cold=$(timed "$cmaf_master")
master_warm=$(warm_median "$cmaf_master")
read -r cmaf_init cmaf_segment <<<"$(cmaf_segment_of 6415818918101)"
cmaf_cold=$(timed "$cmaf_segment")
cmaf_warm=$(warm_median "$cmaf_segment")
read -r cbcs_init cbcs_segment <<<"$(cmaf_segment_of 6415818918103)"
cbcs_cold=$(timed "$cbcs_segment")
cbcs_warm=$(warm_median "$cbcs_segment")
curl -sf "$cmaf_segment" -o "$work/nginx-root/cmaf/0.m4s"
curl -sf "$cmaf_init" -o "$work/nginx-root/cmaf/init.mp4"
curl -sf "$cbcs_segment" -o "$work/nginx-root/cmaf/cbcs.m4s"
chmod -R a+rX "$work/nginx-root"
nginx_cmaf="http://127.0.0.1:$nginx_port/cmaf/0.m4s"
nginx_cmaf_init="http://127.0.0.1:$nginx_port/cmaf/init.mp4"
nginx_cbcs="http://127.0.0.1:$nginx_port/cmaf/cbcs.m4s"
cmp <(curl -sf "$nginx_cmaf") <(curl -sf "$cmaf_segment") || { echo "nginx does not serve the same CMAF segment"; exit 1; }
cmp <(curl -sf "$nginx_cbcs") <(curl -sf "$cbcs_segment") || { echo "nginx does not serve the same cbcs segment"; exit 1; }

run_wrk() {  # url [header] -> "requests/s p99-ms"
    local out
    if [ -n "${2:-}" ]; then out=$(wrk -t2 -c32 -d"${duration}s" --latency -H "$2" "$1"); else out=$(wrk -t2 -c32 -d"${duration}s" --latency "$1"); fi
    local errors; errors=$(echo "$out" | awk '/Non-2xx|Socket errors/ {print}')
    [ -z "$errors" ] || { echo "wrk reported errors: $errors" >&2; exit 1; }
    local rps; rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    local p99; p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    echo "$rps $p99"
}

record() {  # name url [header]: runs wrk once, appends "requests/s p99" to the name's runs
    local name=$1; shift
    run_wrk "$@" >>"$work/runs-$name"
}
median() {  # name field(1: requests/s, 2: p99) -> the median of its runs (p99 in ms)
    python3 - "$work/runs-$1" "$2" <<'PY'
import statistics, sys
def ms(v):
    if v.endswith("us"): return float(v[:-2]) / 1000
    if v.endswith("ms"): return float(v[:-2])
    if v.endswith("s"): return float(v[:-1]) * 1000
    return float(v)
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
field = int(sys.argv[2]) - 1
print(statistics.median(float(r[0]) if field == 0 else ms(r[1]) for r in rows))
PY
}
rounds=${ROUNDS:-3}

echo "segment: $size bytes (960x540 seg_000.ts), wrk -t2 -c32 -d${duration}s, median of $rounds alternating runs, $(nproc) cores"
# Alternate the servers round by round, so load from elsewhere hits them alike (the machines
# here are shared and noisy: the median run of each is reported).
for _ in $(seq "$rounds"); do
    record nginx "$nginx_segment"
    record mb "$segment"
    record mbdefault "$default_segment"
    record nginx_fps "$nginx_fps"
    record fps "$fps_segment"
    record nginx_tls "$nginx_tls_segment"
    record tls "$secure_segment"
    record nginx_cmaf "$nginx_cmaf"
    record cmaf "$cmaf_segment"
    record nginx_cmaf_init "$nginx_cmaf_init"
    record cmaf_init "$cmaf_init"
    record nginx_cbcs "$nginx_cbcs"
    record cbcs "$cbcs_segment"
done
for _ in $(seq "$rounds"); do record api "$base/playback/v1/accounts/$account/videos/6415818918101" "BCOV-Policy: $key"; done
row() {  # label name [reference-name]
    local rps p99 ratio="-"
    rps=$(median "$2" 1); p99=$(median "$2" 2)
    [ -n "${3:-}" ] && ratio=$(python3 -c "print(f'{$rps/$(median "$3" 1):.2f}x')")
    printf '%-40s %12.0f %9.2fms %8s\n' "$1" "$rps" "$p99" "$ratio"
}
printf '%-40s %12s %11s %8s\n' "target (median of $rounds)" "requests/s" "p99" "vs nginx"
row "nginx: segment" nginx nginx
row "mock-backend: segment (clear, quiet)" mb nginx
row "mock-backend: segment (default settings)" mbdefault nginx
row "nginx: cached SAMPLE-AES segment" nginx_fps nginx_fps
row "mock-backend: SAMPLE-AES segment" fps nginx_fps
row "mock-backend: Playback API video" api
row "nginx: segment over HTTPS" nginx_tls nginx_tls
row "mock-backend: segment over HTTPS" tls nginx_tls
row "nginx: CMAF media segment" nginx_cmaf nginx_cmaf
row "mock-backend: CMAF media segment (clear)" cmaf nginx_cmaf
row "nginx: CMAF init segment" nginx_cmaf_init nginx_cmaf_init
row "mock-backend: CMAF init segment" cmaf_init nginx_cmaf_init
row "nginx: CMAF cbcs segment (a copy)" nginx_cbcs nginx_cbcs
row "mock-backend: CMAF cbcs segment" cbcs nginx_cbcs
echo "CMAF: v7 master first request (packages every rendition) ${master_cold}s, then median ${master_warm}s"
echo "CMAF segment $(stat -c %s "$work/nginx-root/cmaf/0.m4s") bytes: first request ${cmaf_cold}s, then median ${cmaf_warm}s; cbcs: ${cbcs_cold}s, then ${cbcs_warm}s"
echo "default-settings mock logged $(grep -c 'GET /media/' "$work/err-default") request lines"
