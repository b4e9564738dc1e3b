#!/usr/bin/env bash
# Reads every HLS playlist the mock writes (the TS form's and the CMAF HLS v7 form's masters, media
# playlists, the thumbnail image playlist) with the Python `m3u8` parser, a reader this project did
# not write, against a live mock-backend (part of `make test`). For each clear and FairPlay video of
# the catalog it checks what m3u8 reads against what the mock means: every variant and rendition
# with a URI, version 7 and an EXT-X-MAP on every v7 media playlist, the FairPlay keys, the same
# segment count and total duration in every rendition of a video; then the same v7 playlists with the
# account's CMAF addressed by byte ranges (one track.mp4 per rendition, contiguous EXT-X-BYTERANGEs).
# Exits non-zero on any mismatch.
#
#   MOCK_BACKEND=path/to/mock-backend   the binary (default .build/debug/mock-backend)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/live-backend.sh

M3U8_VERSION=6.0.0
VENV=.build-venv/m3u8
BINARY=${MOCK_BACKEND:-.build/debug/mock-backend}
venv_install "$VENV" "m3u8==$M3U8_VERSION" "import importlib.metadata as m, sys; sys.exit(m.version('m3u8') != '$M3U8_VERSION')"
[ -x "$BINARY" ] || { echo "no mock-backend at $BINARY: build it (swift build) or set MOCK_BACKEND" >&2; exit 1; }

start_backend m3u8-readers
status=0
"$VENV/bin/python" scripts/m3u8_readers.py --base-url "$BASE" --admin-token "$ADMIN_TOKEN" || status=1
backend_survived || status=1
[ "$status" -eq 0 ] && echo "m3u8 readers: passed" >&2 || echo "m3u8 readers: FAILED" >&2
exit "$status"
