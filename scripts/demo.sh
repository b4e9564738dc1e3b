#!/usr/bin/env bash
# The end-to-end demo: start the mock backend on a free port with a throwaway data
# directory, find a video through the Playback API, fetch its master playlist and probe it
# with ffprobe, then fetch an AES-128 video's key and decode a rendition with ffmpeg.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --product mock-backend >/dev/null
data=$(mktemp -d)
log="$data/server.log"
.build/debug/mock-backend --port 0 --data-dir "$data/backend" --log-level warning >"$data/stdout" 2>"$log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do grep -q listening "$data/stdout" 2>/dev/null && break; sleep 0.05; done
base=$(awk '/listening on/ {print $3}' "$data/stdout")
[ -n "$base" ] || { echo "server did not start:"; cat "$log"; exit 1; }
account=6415818918001
key=BCpkADawqM1northwindSEARCHkey0001
echo "== mock-backend is $base"

show_video() { python3 scripts/show-video.py "$1"; }

echo
echo "== GET /playback/v1/accounts/$account/videos/ref:nw-clear-bars (BCOV-Policy key)"
curl -sf -H "BCOV-Policy: $key" "$base/playback/v1/accounts/$account/videos/ref:nw-clear-bars" | show_video "$data/master"
master=$(cat "$data/master")

echo
echo "== master playlist (first lines)"
curl -sf "$master" | sed -E 's/fastly_token=[^"]*/fastly_token=…/' | cut -c1-150 | head -12

echo
echo "== ffprobe on the master playlist"
ffprobe -v error -show_entries stream=codec_type,codec_name,width,height,sample_rate -of compact=p=0 "$master" \
    | sed 's/^/   /' | sort -u | head -12

echo
echo "== search: q=tags:fairplay, sorted by name"
curl -sf -H "BCOV-Policy: $key" "$base/playback/v1/accounts/$account/videos?q=tags:fairplay&sort=name" \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print("  ", d["count"], "videos:"); [print("   -", v["name"]) for v in d["videos"]]'

echo
echo "== AES-128 video: decode the 960x540 rendition through the key endpoint with ffmpeg"
curl -sf -H "BCOV-Policy: $key" "$base/playback/v1/accounts/$account/videos/ref:nw-aes-bars" | show_video "$data/aes-master"
rendition=$(curl -sf "$(cat "$data/aes-master")" | grep -A1 'RESOLUTION=960x540' | tail -1)
start=$(date +%s.%N)
ffmpeg -v error -i "$rendition" -f null - && echo "   decoded without an error in $(python3 -c "print(f'{$(date +%s.%N)-$start:.2f}')") s"

echo
echo "== a request without a policy key gets the Playback API's error array"
echo "   $(curl -s "$base/playback/v1/accounts/$account/videos/6415818918101")"
echo
echo "Done. Run it yourself with: make serve   (then see README.md for the URLs)"
