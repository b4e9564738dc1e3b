#!/usr/bin/env bash
# Dynamic Ingest beside ffmpeg run by hand, in one run, on the same source.
#   benchmarks/ingest.sh            (DURATION=600: a 10-minute 1080p source; ROUNDS=3)
#   DURATION=60 benchmarks/ingest.sh
# Makes a DURATION-second 1920x1080 25 fps source with two audio languages, starts mock-backend
# (BUILD=release by default; BUILD=debug uses .build/debug) with --ingest-allow-dir on it, then
# ROUNDS times, taking turns:
#   - the mock: CMS create + ingest-requests with multi-platform-standard-static, timed from the
#     POST to the job's `finished` (the mock's ffprobe, its one ffmpeg ladder run, poster and
#     thumbnail, packaging into an asset, the catalog edit);
#   - ffmpeg by hand: the same ladder command the mock runs (IngestTranscoder: the profile's six
#     H.264 renditions, veryfast, 2 s HLS segments, one AAC rendition per audio stream).
# While the mock ingests, a client asks the Playback API for a video 20 times a second and the
# p50/p99 latency is printed beside the same client's on an idle mock. The by-hand rounds run
# beside the same client, so both sides share the machine alike.
# Prints the median of each and the ratio mock / ffmpeg (target ≤ 1.1).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-600}
rounds=${ROUNDS:-3}
build=${BUILD:-release}
scripts/install-deps.sh ffmpeg curl bc python3 libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev pkg-config

work=$(mktemp -d)
cleanup() {
    [ -n "${backend:-}" ] && kill "$backend" 2>/dev/null && wait "$backend" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

[ "$build" = debug ] || swift build -c "$build" --product mock-backend >/dev/null
mkdir -p "$work/src"
echo "source: ${duration} s of 1920x1080 with two audio languages"
ffmpeg -nostdin -hide_banner -loglevel error -y \
    -f lavfi -i "testsrc2=size=1920x1080:rate=25:duration=$duration" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=$duration" \
    -f lavfi -i "sine=frequency=660:sample_rate=48000:duration=$duration" \
    -map 0:v -map 1:a -map 2:a -c:v libx264 -preset ultrafast -crf 18 -pix_fmt yuv420p -c:a aac \
    -metadata:s:a:0 language=eng -metadata:s:a:1 language=fra "$work/src/source.mp4"

account=5434391461001
key=BCpkADawqM1contosoSEARCHkey000001
probe_video=5434391461101
".build/$build/mock-backend" --port 0 --data-dir "$work/data" --threads 2 --log-level warning \
    --ingest-allow-dir "$work/src" --client-credentials "$account" >"$work/out" 2>"$work/err" &
backend=$!
for _ in $(seq 400); do grep -q 'client credentials' "$work/out" 2>/dev/null && break; sleep 0.05; done
base=$(awk '/listening on/ {print $3}' "$work/out")
read -r _ _ _ client_id client_secret < <(grep 'client credentials' "$work/out")
[ -n "$base" ] && [ -n "$client_id" ] || { cat "$work/err"; exit 1; }
token() { curl -sf -u "$client_id:$client_secret" -d grant_type=client_credentials "$base/v4/access_token" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'; }

# Playback API latency, 20 requests a second (one at a time, so it takes little of the CPU the
# ingest uses), until the file $1 exists; prints "p50 p99" in ms.
latency() {
    python3 - "$base/playback/v1/accounts/$account/videos/$probe_video" "$key" "$1" <<'PY'
import os, sys, time, urllib.request
url, key, stop = sys.argv[1:4]
samples = []
while not os.path.exists(stop) or len(samples) < 50:
    start = time.perf_counter()
    urllib.request.urlopen(urllib.request.Request(url, headers={"BCOV-Policy": key})).read()
    samples.append((time.perf_counter() - start) * 1000)
    time.sleep(max(0, 0.05 - (time.perf_counter() - start)))
samples.sort()
print("%.2f %.2f" % (samples[len(samples) // 2], samples[min(len(samples) - 1, int(len(samples) * 0.99))]))
PY
}

mock_round() {  # prints seconds from the POST to finished (the job polled twice a second)
    local t video job start
    t=$(token)
    video=$(curl -sf -H "Authorization: Bearer $t" -H 'Content-Type: application/json' -d '{"name":"bench"}' \
        "$base/v1/accounts/$account/videos" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    start=$(date +%s.%N)
    job=$(curl -sf -H "Authorization: Bearer $t" -H 'Content-Type: application/json' \
        -d "{\"master\":{\"url\":\"file://$work/src/source.mp4\"},\"profile\":\"multi-platform-standard-static\"}" \
        "$base/v1/accounts/$account/videos/$video/ingest-requests" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    local since=$SECONDS status
    while :; do
        if (( SECONDS - since > 240 )); then t=$(token); since=$SECONDS; fi   # tokens last 300 s
        status=$(curl -sf -H "Authorization: Bearer $t" "$base/v1/accounts/$account/videos/$video/ingest_jobs/$job")
        case $status in
            *'"state":"finished"'*) break ;;
            *'"state":"failed"'*) echo "ingest failed: $status" >&2; exit 1 ;;
        esac
        sleep 0.5
    done
    echo "$(date +%s.%N) - $start" | bc
    curl -sf -X DELETE -H "Authorization: Bearer $t" "$base/v1/accounts/$account/videos/$video" >/dev/null
}

ffmpeg_round() {  # the mock's ladder command, by hand; prints seconds
    local out=$work/by-hand args=() start
    rm -rf "$out"
    hls() { args+=(-f hls -hls_time 2 -hls_playlist_type vod -hls_segment_type mpegts -hls_segment_filename "$out/$1/seg_%03d.ts" "$out/$1/index.m3u8"); mkdir -p "$out/$1"; }
    for r in "450 270 baseline" "700 360 baseline" "900 360 main" "1200 540 main" "1700 540 main" "2000 720 main"; do
        read -r kbps height profile <<<"$r"
        args+=(-map 0:v:0 -an -sn -dn -map_metadata -1 -c:v libx264 -preset veryfast -profile:v "$profile" -pix_fmt yuv420p
               -vf "scale=-2:$height" -b:v "${kbps}k" -maxrate "$((kbps * 3 / 2))k" -bufsize "$((kbps * 2))k"
               -force_key_frames "expr:gte(t,n_forced*2)" -sc_threshold 0)
        hls "video/$kbps"
    done
    for a in 0 1; do
        args+=(-map "0:a:$a" -vn -sn -dn -map_metadata -1 -c:a aac -b:a 128k -ar 48000 -ac 2)
        hls "audio/$a"
    done
    start=$(date +%s.%N)
    ffmpeg -nostdin -hide_banner -loglevel error -y -i "$work/src/source.mp4" "${args[@]}"
    echo "$(date +%s.%N) - $start" | bc
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

idle_stop=$work/idle.stop
( sleep 5; touch "$idle_stop" ) &
idle=$(latency "$idle_stop")
: >"$work/mock" ; : >"$work/ffmpeg" ; : >"$work/busy"
for round in $(seq "$rounds"); do
    stop=$work/busy.$round
    latency "$stop" >>"$work/busy" &
    prober=$!
    mock_round >>"$work/mock"
    touch "$stop"; wait "$prober"
    latency "$stop.by-hand" >/dev/null &
    prober=$!
    ffmpeg_round >>"$work/ffmpeg"
    touch "$stop.by-hand"; wait "$prober"
    echo "round $round: mock $(tail -1 "$work/mock") s, ffmpeg $(tail -1 "$work/ffmpeg") s, Playback API p50/p99 during ingest $(tail -1 "$work/busy") ms"
done
mock=$(median <"$work/mock")
by_hand=$(median <"$work/ffmpeg")
busy_p99=$(awk '{print $2}' "$work/busy" | median)
printf '\n%-44s %8.1f s\n' "ffmpeg by hand, the same ladder (median)" "$by_hand"
printf '%-44s %8.1f s   %.2fx ffmpeg (target <= 1.1x)\n' "mock ingest, POST to finished (median)" "$mock" "$(echo "$mock / $by_hand" | bc -l)"
printf '%-44s p50 %s ms, p99 %s ms\n' "Playback API idle" ${idle}
printf '%-44s p99 %s ms (median of rounds)\n' "Playback API during ingest" "$busy_p99"
