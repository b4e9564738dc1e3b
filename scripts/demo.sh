#!/usr/bin/env bash
# The end-to-end demo: start the mock backend on a free port with a throwaway data
# directory, find a video through the Playback API and probe its HLS with ffprobe, then
# use the SDK (through the `offline` command) to download a clear video with two audio
# languages and sideband subtitles, and a FairPlay video with a rental license, survive a
# crash mid-download, and check the packages on disk.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --product mock-backend >/dev/null
swift build --product offline >/dev/null
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

offline() { .build/debug/offline "$@"; }
export OFFLINE_BASE_URL=$base OFFLINE_ACCOUNT=$account OFFLINE_POLICY_KEY=BCpkADawqM1northwindPLAYkey000002
export OFFLINE_STORAGE=$data/sdk

echo
echo "== offline search tags:fairplay (search-enabled key)"
OFFLINE_POLICY_KEY=$key offline search tags:fairplay --sort name | sed 's/^/   /'

echo
echo "== offline download 6415818918101 --audio en,fr --subtitles de  (clear, 960x540 at most 1.5 Mbit/s)"
offline download 6415818918101 --audio en,fr --subtitles de --bitrate 1500000 --reserve-mb 0 | sed 's/^/   /'

echo
echo "== offline download 6415818918104 --rental-hours 48 --play-hours 6  (FairPlay: the license comes first)"
offline download 6415818918104 --rental-hours 48 --play-hours 6 --reserve-mb 0 | sed 's/^/   /'

echo
echo "== a 2-hour download killed with SIGKILL halfway, then resumed by a new process"
.build/debug/offline download 6415818918106 --reserve-mb 0 >"$data/long.log" 2>&1 &
downloader=$!
for _ in $(seq 600); do grep -qE '^[0-9a-f]{8} +([2-9]|[1-9][0-9])\.[0-9] %' "$data/long.log" 2>/dev/null && break; sleep 0.05; done
kill -9 $downloader 2>/dev/null || echo "   (it finished before it could be killed)"
wait $downloader 2>/dev/null || true
echo "   killed at: $(grep -E ' %$' "$data/long.log" | tail -1 | sed 's/^ *//')"
offline resume --reserve-mb 0 | tail -2 | sed 's/^/   /'

echo
echo "== offline list"
offline list | sed 's/^/   /'

echo
echo "== ffprobe plays the clear package from disk"
package=$(offline list | awk '/Color Bars \(clear\)/ {print $1}')
ffprobe -v error -show_entries stream=codec_type,codec_name,width,height -of json \
    "$OFFLINE_STORAGE/packages/$package/master.m3u8" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["streams"]:
    size = "%sx%s" % (s["width"], s["height"]) if "width" in s else ""
    print("   ", s["codec_type"], s["codec_name"], size)'
echo "   files: $(find "$OFFLINE_STORAGE/packages/$package" -type f | wc -l), sideband subtitles: $(ls "$OFFLINE_STORAGE/packages/$package/sideband")"

echo
echo "== a request without a policy key gets the Playback API's error array"
echo "   $(curl -s "$base/playback/v1/accounts/$account/videos/6415818918101")"
echo
echo "Done. Run it yourself with: make serve   (then see README.md for the URLs)"
