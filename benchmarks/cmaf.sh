#!/usr/bin/env bash
# CMAF HLS beside MPEG-TS HLS, and the CMAF export beside ffmpeg, in one run.
#   benchmarks/cmaf.sh [rounds]   (default 5; LATENCY_MS=50 the latency added per response in (a))
# Builds release and starts two mock-backends (one adding LATENCY_MS to every response, one
# without), then:
#   (a) download: the 10-minute video (416x234 + English audio, 300 segments each) with
#       `offline download --parallel 8 --source-format ts`, `--source-format cmaf` (the account's
#       CMAF addressing "segments": one file per segment, and "byte_ranges": byte ranges of one
#       file per track), taking turns from empty folders; median wall time of each and CMAF's
#       over TS's (target <= 1.05);
#   (b) export: the 2-hour FairPlay video's CMAF (cbcs) package, lowest H.264 rendition + English
#       audio, downloaded once: `offline play TOKEN --output FILE.mp4 --audio en` (decrypt in
#       memory, the protection boxes removed, video and audio in one clear fragmented MP4) beside
#       ffmpeg reading the same package's files (its local playlists, the content key given as a
#       data: URI; see below why not -decryption_key) and copying both streams into one MP4
#       (-c copy), both inputs in the page cache; median wall time of each, taking turns, and the
#       throughput ratio on each tool's own output bytes (target >= 3x).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
latency=${LATENCY_MS:-50}
scripts/install-deps.sh ffmpeg time python3 curl bc libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev pkg-config

work=$(mktemp -d)
cleanup() {
    for pid in ${backends:-}; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

swift build -c release --product mock-backend >/dev/null
swift build -c release --product offline >/dev/null

backends=""
start_backend() {  # name latency-ms -> sets base_NAME, admin_NAME
    local name=$1 ms=$2
    .build/release/mock-backend --port 0 --data-dir "$work/data-$name" --threads 2 --latency-ms "$ms" --log-level warning \
        >"$work/out-$name" 2>"$work/err-$name" &
    backends="$backends $!"
    for _ in $(seq 200); do grep -q listening "$work/out-$name" 2>/dev/null && break; sleep 0.05; done
    local base; base=$(awk '/listening on/ {print $3}' "$work/out-$name")
    [ -n "$base" ] || { cat "$work/err-$name"; exit 1; }
    printf -v "base_$name" %s "$base"
    printf -v "admin_$name" %s "$(awk '/admin token/ {print $3}' "$work/out-$name")"
}
start_backend slow "$latency"
start_backend fast 0

account=6415818918001
key=BCpkADawqM1northwindPLAYkey000002
addressing() {  # base admin segments|byte_ranges
    curl -sf -X PATCH -H "Authorization: Bearer $2" -H "Content-Type: application/json" \
        "$1/_admin/v1/accounts/$account" -d "{\"cmaf_addressing\":\"$3\"}" >/dev/null
}
measure() {  # name command... -> "wall cpu rss_kb"
    local name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.$name" "$@" >"$work/log.$name" 2>&1 ||
        { echo "$name failed:" >&2; tail -5 "$work/log.$name" >&2; exit 1; }
    awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$work/time.$name"
}
median() { sort -n -k1,1 "$1" | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }'; }
common=(--account "$account" --policy-key "$key" --reserve-mb 0)
token_of() { python3 -c 'import json,sys
for line in sys.stdin:
    event = json.loads(line)
    if event.get("event") == "requested": print(event["token"])'; }

# (a) The 10-minute video in each format, taking turns.
video=6415818918107
for round in $(seq "$rounds"); do
    for kind in ts cmaf-segments cmaf-byte-ranges; do
        rm -rf "$work/sdk-$kind"
        format=cmaf
        case $kind in
            ts) format=ts ;;
            cmaf-segments) addressing "$base_slow" "$admin_slow" segments ;;
            cmaf-byte-ranges) addressing "$base_slow" "$admin_slow" byte_ranges ;;
        esac
        measure "$kind" .build/release/offline download "${common[@]}" --base-url "$base_slow" --storage "$work/sdk-$kind" --parallel 8 \
            --source-format "$format" --audio en "$video" >>"$work/runs.$kind"
        files=$(find "$work/sdk-$kind/packages" -name '*.ts' -o -name '*.m4s' | wc -l)
        [ "$files" -eq 600 ] || { echo "$kind stored $files segments, expected 600" >&2; exit 1; }
    done
done
echo "== (a) the 10-minute video (416x234 + en audio, 600 segments), ${latency} ms added per response, median of $rounds, $(nproc) cores"
printf "%-18s %8s %8s %10s %8s\n" format "wall s" "CPU s" "peak RSS" "over TS"
read -r ts_wall _ _ < <(median "$work/runs.ts")
for kind in ts cmaf-segments cmaf-byte-ranges; do
    read -r wall cpu rss < <(median "$work/runs.$kind")
    printf "%-18s %8s %8s %7d MB %7.3fx\n" "$kind" "$wall" "$cpu" $((rss / 1024)) "$(echo "$wall / $ts_wall" | bc -l)"
done
echo "over TS: CMAF's wall time over the TS download's (target <= 1.05)"

# (b) The 2-hour FairPlay video's CMAF package, lowest rendition, and ffmpeg's input beside it.
addressing "$base_fast" "$admin_fast" segments
storage=$work/sdk-long
long=$(.build/release/offline download "${common[@]}" --base-url "$base_fast" --storage "$storage" --source-format cmaf --unplayable-codec hevc --purchase --audio en \
    --parallel 8 --json 6415818918108 | token_of)
[ -n "$long" ] || { echo "the download of the 2-hour video failed"; exit 1; }
package=$storage/packages/$long
grep -q '#EXT-X-MAP' "$package/0-video/index.m3u8" || { echo "the 2-hour download is not CMAF"; exit 1; }
# ffmpeg's input: the package's own playlists, the skd:// key replaced by the content key the
# backend keeps (a data: URI, which ffmpeg's HLS demuxer reads and applies to the cbcs samples), as
# benchmarks/playback.sh does for MPEG-TS. Not the mov demuxer's -decryption_key over the joined
# fragments: ffmpeg 5.1 (Debian 12) decrypts only a file's first cbcs fragment (init + 1 fragment:
# 50 frames; init + 2: none, "leftover packet bytes after subsample processing"; the audio stops
# after its first), so that path cannot export the video at all.
python3 - "$work/data-fast" "$package" <<'PY'
import base64, glob, os, re, sqlite3, sys
data, package = sys.argv[1], sys.argv[2]
database = glob.glob(os.path.join(data, "*.sqlite"))[0]
playlists = glob.glob(os.path.join(package, "*/index.m3u8"))
key_id = re.search(r'skd://([^"]+)', "".join(open(p).read() for p in playlists)).group(1)
key, = sqlite3.connect(database).execute("SELECT key FROM content_key WHERE key_id = ?", (key_id,)).fetchone()
uri = "data:application/octet-stream;base64," + base64.b64encode(key).decode()
for playlist in playlists:
    text = re.sub(r'URI="skd://[^"]+"', 'URI="%s"' % uri, open(playlist).read())
    text = text.replace('KEYFORMAT="com.apple.streamingkeydelivery",', '')
    open(playlist.replace("index.m3u8", "ffmpeg.m3u8"), "w").write(text)
PY
audio_folder=$(cd "$package" && ls -d 1-audio-*)
cat >"$work/ffmpeg-export" <<SH
#!/bin/sh
exec ffmpeg -nostdin -v error -y -allowed_extensions ALL -protocol_whitelist file,data,crypto -i "$package/0-video/ffmpeg.m3u8" \
    -allowed_extensions ALL -protocol_whitelist file,data,crypto -i "$package/$audio_folder/ffmpeg.m3u8" \
    -map 0:v -map 1:a -c copy -f mp4 "$work/ffmpeg.mp4"
SH
chmod +x "$work/ffmpeg-export"
warm() { find "$package" -type f -exec cat {} + >/dev/null; }
for round in $(seq "$rounds"); do
    warm; rm -f "$work/sdk.mp4"
    OFFLINE_STORAGE=$storage measure sdk .build/release/offline play "$long" --output "$work/sdk.mp4" --audio en >>"$work/runs.sdk"
    warm; rm -f "$work/ffmpeg.mp4"
    measure ffmpeg "$work/ffmpeg-export" >>"$work/runs.ffmpeg"
done
probe() { ffprobe -v error -show_entries format=duration -of csv=p=0 "$1"; }
frames() { ffprobe -v error -count_packets -select_streams "$2" -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
# Both decrypted: the same decoded frames at the start and an hour in.
decoded() { ffmpeg -v error -ss "$2" -i "$1" -map 0:v -frames:v 50 -f framemd5 - | awk -F, '/^0,/ {print $NF}' | md5sum; }
for at in 0 3600; do
    [ "$(decoded "$work/sdk.mp4" $at)" = "$(decoded "$work/ffmpeg.mp4" $at)" ] ||
        { echo "the two exports decode to different frames at $at s" >&2; exit 1; }
done
counts="video $(frames "$work/sdk.mp4" v) / $(frames "$work/ffmpeg.mp4" v), audio $(frames "$work/sdk.mp4" a) / $(frames "$work/ffmpeg.mp4" a)"
[ "$(frames "$work/sdk.mp4" v)" = "$(frames "$work/ffmpeg.mp4" v)" ] && [ "$(frames "$work/sdk.mp4" a)" = "$(frames "$work/ffmpeg.mp4" a)" ] ||
    { echo "the two exports hold different numbers of frames (SDK / ffmpeg): $counts" >&2; [ -n "${KEEP:-}" ] && trap - EXIT; exit 1; }
echo
echo "== (b) export of the 2-hour FairPlay video's CMAF package (lowest rendition + en audio) to one clear MP4, median of $rounds"
printf "%-7s %8s %8s %10s %10s %12s %8s\n" tool "wall s" "CPU s" "MB out" "MB/s" "duration" "ratio"
read -r sdk_wall sdk_cpu _ < <(median "$work/runs.sdk")
read -r ff_wall ff_cpu _ < <(median "$work/runs.ffmpeg")
sdk_bytes=$(stat -c %s "$work/sdk.mp4")
ff_bytes=$(stat -c %s "$work/ffmpeg.mp4")
ratio=$(echo "($sdk_bytes / $sdk_wall) / ($ff_bytes / $ff_wall)" | bc -l)
printf "%-7s %8s %8s %10.1f %10.1f %12s %7.2fx\n" SDK "$sdk_wall" "$sdk_cpu" "$(echo "$sdk_bytes / 1000000" | bc -l)" \
    "$(echo "$sdk_bytes / 1000000 / $sdk_wall" | bc -l)" "$(probe "$work/sdk.mp4")" "$ratio"
printf "%-7s %8s %8s %10.1f %10.1f %12s %7.2fx\n" ffmpeg "$ff_wall" "$ff_cpu" "$(echo "$ff_bytes / 1000000" | bc -l)" \
    "$(echo "$ff_bytes / 1000000 / $ff_wall" | bc -l)" "$(probe "$work/ffmpeg.mp4")" 1
echo "ratio: the SDK's throughput over ffmpeg's, each counted on its own output's bytes (target >= 3x); the same frames in both, decoded alike"
