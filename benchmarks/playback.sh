#!/usr/bin/env bash
# Offline playback beside ffmpeg, in one run.
#   benchmarks/playback.sh [rounds]   (default 5)
# Builds release, starts mock-backend, downloads the 2-hour FairPlay video (7,200 SAMPLE-AES
# segments: 416x234 video + English audio) and its 12-second sibling once with the SDK, then:
#   (a) export: `offline play TOKEN --output FILE --audio en` (decrypt in memory, multiplex
#       video and audio into one clear TS) beside ffmpeg decrypting the same local SAMPLE-AES
#       playlists with the content key and copying both streams into one TS (-c copy);
#       median wall time of each, taking turns, and the throughput ratio (target >= 3x);
#   (b) time from opening a session to the first clear segment over the loopback URL
#       (benchmarks/PlaybackStart, median of 20; target <= 50 ms);
#   (c) the player's peak RSS: the export of the 2-hour video beside the 12-second one
#       (target: flat in the video's length).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
scripts/install-deps.sh ffmpeg time python3 curl libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev pkg-config

work=$(mktemp -d)
cleanup() {
    [ -n "${backend:-}" ] && kill "$backend" 2>/dev/null && wait "$backend" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

swift build -c release --product mock-backend >/dev/null
swift build -c release --product offline >/dev/null
swift build -c release --product PlaybackStart >/dev/null

.build/release/mock-backend --port 0 --data-dir "$work/data" --threads 2 --log-level warning >"$work/out" 2>"$work/err" &
backend=$!
for _ in $(seq 200); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.05; done
base=$(awk '/listening on/ {print $3}' "$work/out")
[ -n "$base" ] || { cat "$work/err"; exit 1; }

export OFFLINE_BASE_URL=$base OFFLINE_ACCOUNT=6415818918001 OFFLINE_POLICY_KEY=BCpkADawqM1northwindPLAYkey000002
export OFFLINE_STORAGE=$work/sdk
token_of() { python3 -c 'import json,sys
for line in sys.stdin:
    event = json.loads(line)
    if event.get("event") == "requested": print(event["token"])'; }
long=$(.build/release/offline download 6415818918108 --purchase --audio en --reserve-mb 0 --json | token_of)
short=$(.build/release/offline download 6415818918103 --purchase --audio en --reserve-mb 0 --json | token_of)
[ -n "$long" ] && [ -n "$short" ] || { echo "the downloads failed"; exit 1; }
package=$OFFLINE_STORAGE/packages/$long

# ffmpeg's input: the package's own SAMPLE-AES playlists, the skd:// key replaced by the
# content key the backend keeps (a data: URI, which ffmpeg's hls demuxer reads).
python3 - "$work/data" "$package" <<'EOF'
import base64, glob, os, re, sqlite3, sys
data, package = sys.argv[1], sys.argv[2]
database = glob.glob(os.path.join(data, "*.sqlite"))[0]
master = open(os.path.join(package, "master.m3u8")).read()
key_id = re.search(r'skd://([^"]+)', master).group(1)
key, = sqlite3.connect(database).execute("SELECT key FROM content_key WHERE key_id = ?", (key_id,)).fetchone()
uri = "data:application/octet-stream;base64," + base64.b64encode(key).decode()
for playlist in glob.glob(os.path.join(package, "*/index.m3u8")):
    text = re.sub(r'URI="skd://[^"]+"', 'URI="%s"' % uri, open(playlist).read())
    text = text.replace('KEYFORMAT="com.apple.streamingkeydelivery",', '')
    open(playlist.replace("index.m3u8", "ffmpeg.m3u8"), "w").write(text)
EOF
video_playlist=$(ls "$package"/0-video/ffmpeg.m3u8)
audio_playlist=$(ls "$package"/1-audio-*/ffmpeg.m3u8)

measure() {  # name command... -> "wall cpu rss_kb"
    local name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.$name" "$@" >"$work/log.$name" 2>&1 ||
        { echo "$name failed:" >&2; tail -5 "$work/log.$name" >&2; exit 1; }
    awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$work/time.$name"
}
cat >"$work/ffmpeg-export" <<EOF
#!/bin/sh
exec ffmpeg -nostdin -v error -y -allowed_extensions ALL -protocol_whitelist file,data,crypto \
    -i "$video_playlist" -allowed_extensions ALL -protocol_whitelist file,data,crypto -i "$audio_playlist" \
    -map 0:v -map 1:a -c copy -f mpegts "$work/ffmpeg.ts"
EOF
chmod +x "$work/ffmpeg-export"
for round in $(seq "$rounds"); do
    measure sdk .build/release/offline play "$long" --output "$work/sdk.ts" --audio en >>"$work/runs.sdk"
    measure ffmpeg "$work/ffmpeg-export" >>"$work/runs.ffmpeg"
done
median() { sort -n -k1,1 "$1" | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }'; }
read -r sdk_wall sdk_cpu sdk_rss < <(median "$work/runs.sdk")
read -r ff_wall ff_cpu ff_rss < <(median "$work/runs.ffmpeg")
sdk_bytes=$(stat -c %s "$work/sdk.ts")
ff_bytes=$(stat -c %s "$work/ffmpeg.ts")
probe() { ffprobe -v error -show_entries format=duration -of csv=p=0 "$1"; }

echo "== (a) export of the 2-hour FairPlay video (video + English audio) to one clear TS, median of $rounds"
printf "%-8s %8s %8s %10s %10s %10s\n" tool "wall s" "CPU s" "MB out" "MB/s" "duration"
printf "%-8s %8s %8s %10.1f %10.1f %10s\n" SDK "$sdk_wall" "$sdk_cpu" "$(echo "$sdk_bytes / 1000000" | bc -l)" \
    "$(echo "$sdk_bytes / 1000000 / $sdk_wall" | bc -l)" "$(probe "$work/sdk.ts")"
printf "%-8s %8s %8s %10.1f %10.1f %10s\n" ffmpeg "$ff_wall" "$ff_cpu" "$(echo "$ff_bytes / 1000000" | bc -l)" \
    "$(echo "$ff_bytes / 1000000 / $ff_wall" | bc -l)" "$(probe "$work/ffmpeg.ts")"
printf "SDK throughput: %.2fx ffmpeg's (target >= 3x; each counted on its own output's bytes)\n" \
    "$(echo "($sdk_bytes / $sdk_wall) / ($ff_bytes / $ff_wall)" | bc -l)"

echo
echo "== (b) open a session -> first clear segment over the loopback URL (2-hour FairPlay video)"
.build/release/PlaybackStart "$OFFLINE_STORAGE" "$long" 20 | tail -1 | sed 's/^/   /'

echo
echo "== (c) the player's peak RSS: export of the 2-hour video beside the 12-second one"
read -r _ _ rss_short < <(measure short .build/release/offline play "$short" --output "$work/short.ts" --audio en)
printf "   12 s: %.1f MB   2 h: %.1f MB   ratio %.2fx (target: flat)\n" \
    "$(echo "$rss_short / 1024" | bc -l)" "$(echo "$sdk_rss / 1024" | bc -l)" "$(echo "$sdk_rss / $rss_short" | bc -l)"
