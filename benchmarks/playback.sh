#!/usr/bin/env bash
# Offline playback beside ffmpeg, in one run.
#   benchmarks/playback.sh [rounds]   (default 5)
# Builds release, starts mock-backend, downloads the 2-hour FairPlay video (7,200 SAMPLE-AES
# segments: video + English audio) once per video rendition (416x234, 640x360, 960x540, each in
# a storage folder of its own) and its 12-second sibling once with the SDK, then:
#   (a) export, for every rendition: `offline play TOKEN --output FILE --audio en` (decrypt in
#       memory, multiplex video and audio into one clear TS) beside ffmpeg decrypting the same
#       local SAMPLE-AES playlists with the content key and copying both streams into one TS
#       (-c copy), both reading their input from the page cache (`warm`) and writing to the disk
#       (OUTPUT_DIR to choose another folder); median wall time of each, taking turns, and the
#       throughput ratio (target >= 3x
#       on every rendition);
#   (b) time from opening a session to the first clear segment over the loopback URL
#       (benchmarks/PlaybackStart, median of 20; target <= 50 ms; the lowest rendition);
#   (c) the player's peak RSS: the export of the 2-hour video (lowest rendition) beside the
#       12-second one (target: flat in the video's length).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
scripts/install-deps.sh ffmpeg time python3 curl libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev pkg-config

work=$(mktemp -d)
# Where both tools write their exports: the work folder on the disk, as a user's would be;
# OUTPUT_DIR=/dev/shm (or any folder) to write elsewhere.
outputs=$(mktemp -d -p "${OUTPUT_DIR:-$work}")
cleanup() {
    [ -n "${backend:-}" ] && kill "$backend" 2>/dev/null && wait "$backend" 2>/dev/null
    rm -rf "$work" "$outputs"
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
token_of() { python3 -c 'import json,sys
for line in sys.stdin:
    event = json.loads(line)
    if event.get("event") == "requested": print(event["token"])'; }

# The video variants of the 2-hour video's master playlist, "RESOLUTION BANDWIDTH", lowest first.
python3 - "$base" "$OFFLINE_ACCOUNT" "$OFFLINE_POLICY_KEY" >"$work/variants" <<'PY'
import json, re, sys, urllib.request
base, account, key = sys.argv[1:4]
request = urllib.request.Request(f"{base}/playback/v1/accounts/{account}/videos/6415818918108", headers={"BCOV-Policy": key})
sources = json.load(urllib.request.urlopen(request))["sources"]
master = next(source["src"] for source in sources if ".m3u8" in source["src"])
text = urllib.request.urlopen(master).read().decode()
variants = {}
for line in text.splitlines():
    if line.startswith("#EXT-X-STREAM-INF:"):
        bandwidth = re.search(r"[:,]BANDWIDTH=(\d+)", line)
        resolution = re.search(r"RESOLUTION=(\d+x\d+)", line)
        if bandwidth and resolution:
            variants[resolution.group(1)] = min(int(bandwidth.group(1)), variants.get(resolution.group(1), 1 << 62))
for resolution, bandwidth in sorted(variants.items(), key=lambda item: item[1]):
    print(resolution, bandwidth)
PY
mapfile -t renditions < <(awk '{print $1}' "$work/variants")
[ "${#renditions[@]}" -ge 3 ] || { echo "the master playlist lists ${#renditions[@]} video variants:"; cat "$work/variants"; exit 1; }

# One storage folder per rendition (a package holds one variant).
declare -A token storage
for rendition in "${renditions[@]}"; do
    bandwidth=$(awk -v r="$rendition" '$1 == r {print $2}' "$work/variants")
    storage[$rendition]=$work/sdk-$rendition
    token[$rendition]=$(OFFLINE_STORAGE=${storage[$rendition]} .build/release/offline download 6415818918108 --purchase \
        --audio en --bitrate "$bandwidth" --reserve-mb 0 --json | token_of)
    [ -n "${token[$rendition]}" ] || { echo "the download of $rendition failed"; exit 1; }
    grep -q "RESOLUTION=$rendition" "${storage[$rendition]}/packages/${token[$rendition]}/master.m3u8" ||
        { echo "the $rendition download holds another variant"; exit 1; }
done
lowest=${renditions[0]}
export OFFLINE_STORAGE=${storage[$lowest]}
long=${token[$lowest]}
short=$(.build/release/offline download 6415818918103 --purchase --audio en --reserve-mb 0 --json | token_of)
[ -n "$short" ] || { echo "the download of the 12-second video failed"; exit 1; }

# ffmpeg's input: each package's own SAMPLE-AES playlists, the skd:// key replaced by the
# content key the backend keeps (a data: URI, which ffmpeg's hls demuxer reads).
for rendition in "${renditions[@]}"; do
    package=${storage[$rendition]}/packages/${token[$rendition]}
    python3 - "$work/data" "$package" <<'PY'
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
PY
    video_playlist=$(ls "$package"/0-video/ffmpeg.m3u8)
    audio_playlist=$(ls "$package"/1-audio-*/ffmpeg.m3u8)
    cat >"$work/ffmpeg-export-$rendition" <<SH
#!/bin/sh
exec ffmpeg -nostdin -v error -y -allowed_extensions ALL -protocol_whitelist file,data,crypto \
    -i "$video_playlist" -allowed_extensions ALL -protocol_whitelist file,data,crypto -i "$audio_playlist" \
    -map 0:v -map 1:a -c copy -f mpegts "$outputs/ffmpeg-$rendition.ts"
SH
    chmod +x "$work/ffmpeg-export-$rendition"
done

measure() {  # name command... -> "wall cpu rss_kb"
    local name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.$name" "$@" >"$work/log.$name" 2>&1 ||
        { echo "$name failed:" >&2; tail -5 "$work/log.$name" >&2; exit 1; }
    awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$work/time.$name"
}
# warm RENDITION: reads the rendition's downloaded files (the input of both tools) into the page
# cache. This machine's memory manager (DAMON, `pageout`
# of pages unused for some seconds) evicts a rendition's 350-870 MB between its turns, so without
# this the first tool of a turn read its input from the disk and the second found it cached.
warm() {
    find "${storage[$1]}/packages/${token[$1]}" -type f -exec cat {} + >/dev/null
}
# The tools take turns: in each round, every rendition's SDK export, then its ffmpeg export,
# each after `warm`, and each after its own previous output is removed. ffmpeg (-y) truncates
# that file as it starts and writes into the pages it just freed; the SDK writes a new
# `.part` file and replaces the old one only once it is whole, so its pages came from free
# memory this virtual machine may have handed back to its host (free page reporting), which
# costs the first write to each page up to a third of the export's CPU time. Removing each
# tool's output first gives both the same start, and does not measure the SDK's keeping of the
# old file until the new one is complete.
for round in $(seq "$rounds"); do
    for rendition in "${renditions[@]}"; do
        warm "$rendition"
        rm -f "$outputs/sdk-$rendition.ts"
        OFFLINE_STORAGE=${storage[$rendition]} measure "sdk-$rendition" .build/release/offline play "${token[$rendition]}" \
            --output "$outputs/sdk-$rendition.ts" --audio en >>"$work/runs.sdk-$rendition"
        warm "$rendition"
        rm -f "$outputs/ffmpeg-$rendition.ts"
        measure "ffmpeg-$rendition" "$work/ffmpeg-export-$rendition" >>"$work/runs.ffmpeg-$rendition"
    done
done
median() { sort -n -k1,1 "$1" | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }'; }
probe() { ffprobe -v error -show_entries format=duration -of csv=p=0 "$1"; }

echo "== (a) export of the 2-hour FairPlay video (video + English audio) to one clear TS, each rendition, median of $rounds"
printf "%-10s %-7s %8s %8s %10s %10s %12s %8s\n" rendition tool "wall s" "CPU s" "MB out" "MB/s" "duration" "ratio"
below=0
for rendition in "${renditions[@]}"; do
    read -r sdk_wall sdk_cpu sdk_rss < <(median "$work/runs.sdk-$rendition")
    read -r ff_wall ff_cpu _ < <(median "$work/runs.ffmpeg-$rendition")
    [ "$rendition" = "$lowest" ] && long_rss=$sdk_rss
    sdk_bytes=$(stat -c %s "$outputs/sdk-$rendition.ts")
    ff_bytes=$(stat -c %s "$outputs/ffmpeg-$rendition.ts")
    ratio=$(echo "($sdk_bytes / $sdk_wall) / ($ff_bytes / $ff_wall)" | bc -l)
    printf "%-10s %-7s %8s %8s %10.1f %10.1f %12s %7.2fx\n" "$rendition" SDK "$sdk_wall" "$sdk_cpu" \
        "$(echo "$sdk_bytes / 1000000" | bc -l)" "$(echo "$sdk_bytes / 1000000 / $sdk_wall" | bc -l)" "$(probe "$outputs/sdk-$rendition.ts")" "$ratio"
    printf "%-10s %-7s %8s %8s %10.1f %10.1f %12s %7.2fx\n" "" ffmpeg "$ff_wall" "$ff_cpu" \
        "$(echo "$ff_bytes / 1000000" | bc -l)" "$(echo "$ff_bytes / 1000000 / $ff_wall" | bc -l)" "$(probe "$outputs/ffmpeg-$rendition.ts")" 1
    [ "$(echo "$ratio >= 3" | bc -l)" = 1 ] || below=$((below + 1))
done
echo "ratio: the SDK's throughput over ffmpeg's, each counted on its own output's bytes (target >= 3x on every rendition);" \
    "$below of ${#renditions[@]} below it"

echo
echo "== (b) open a session -> first clear segment over the loopback URL (2-hour FairPlay video, $lowest)"
.build/release/PlaybackStart "$OFFLINE_STORAGE" "$long" 20 | tail -1 | sed 's/^/   /'

echo
echo "== (c) the player's peak RSS: export of the 2-hour video ($lowest) beside the 12-second one"
read -r _ _ rss_short < <(measure short .build/release/offline play "$short" --output "$work/short.ts" --audio en)
printf "   12 s: %.1f MB   2 h: %.1f MB   ratio %.2fx (target: flat)\n" \
    "$(echo "$rss_short / 1024" | bc -l)" "$(echo "$long_rss / 1024" | bc -l)" "$(echo "$long_rss / $rss_short" | bc -l)"
