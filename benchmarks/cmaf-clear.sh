#!/usr/bin/env bash
# The export of a protected CMAF package (cbcs video 960x540 + audio, 2-second segments) to one clear
# MP4, beside ffmpeg doing the same (-decryption_key, -c copy; the inputs piped: ffmpeg 5.1 misreads a
# seekable multi-fragment encrypted file).
#   benchmarks/cmaf-clear.sh [passes]   (default 600: 2 hours, 3,600 segments per track)
# Needs the CMAFClear executable target (benchmarks/CMAFClear). Prints both wall times, the ratio
# (target >= 3x) and whether both outputs hold the same video and audio packets (framemd5 of -c copy).
set -euo pipefail
cd "$(dirname "$0")/.."
passes=${1:-600}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
swift build -c release --product CMAFClear >/dev/null
bin=$(swift build -c release --show-bin-path)/CMAFClear
"$bin" make "$work/package" "$passes"
cat "$work/package/video.mp4" "$work/package/audio.mp4" >/dev/null  # both read from the page cache
key=$(printf '%02x' $(seq 16 31))
ours_start=$(date +%s.%N)
"$bin" clear "$work/package" "$work/ours.mp4"
ours=$(echo "$(date +%s.%N) - $ours_start" | bc)
theirs_start=$(date +%s.%N)
ffmpeg -nostdin -v error -decryption_key "$key" -i <(cat "$work/package/video.mp4") -decryption_key "$key" -i <(cat "$work/package/audio.mp4") \
    -map 0:v -map 1:a -c copy -f mp4 "$work/ffmpeg.mp4"
theirs=$(echo "$(date +%s.%N) - $theirs_start" | bc)
echo "ours ${ours}s, ffmpeg ${theirs}s, ratio $(echo "scale=2; $theirs / $ours" | bc)x"
for map in 0:v 0:a; do
    a=$(ffmpeg -nostdin -v error -i "$work/ours.mp4" -map $map -c copy -f framemd5 - | grep -v '^#' | awk -F, '{print $NF}' | md5sum)
    b=$(ffmpeg -nostdin -v error -i "$work/ffmpeg.mp4" -map $map -c copy -f framemd5 - | grep -v '^#' | awk -F, '{print $NF}' | md5sum)
    [ "$a" = "$b" ] && echo "$map: same packets" || echo "$map: DIFFERENT packets"
done
