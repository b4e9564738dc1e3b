"""Reads the mock's HLS playlists with the `m3u8` parser (scripts/m3u8-readers.sh starts the mock)."""

import argparse
import json
import sys
import urllib.request

import importlib.metadata

import m3u8

ACCOUNT = "6415818918001"
POLICY_KEY = "BCpkADawqM1northwindSEARCHkey0001"
# fixtures/catalog.json: clear, FairPlay, the 2-hour clear one (600 passes), the English-only one.
VIDEOS = ["6415818918101", "6415818918103", "6415818918106", "6415818918109"]


def fetch(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.read().decode("utf-8")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def media(url, cmaf, fairplay, byte_ranges=False):
    """Reads one media playlist; returns (segment count, total duration). With `byte_ranges` (the
    account's cmaf_addressing), a v7 playlist's map and segments are ranges of one track.mp4."""
    playlist = m3u8.loads(fetch(url), uri=url)
    check(not playlist.is_variant, f"{url}: read as a master playlist")
    check(playlist.is_endlist and playlist.playlist_type == "vod", f"{url}: not a finished VOD playlist")
    check(len(playlist.segments) > 0, f"{url}: no segments")
    for segment in playlist.segments:
        check(segment.uri.startswith("http") and "fastly_token=" in segment.uri, f"{url}: segment URI {segment.uri}")
    if cmaf and not playlist.segments[0].uri.split("?")[0].endswith(".vtt"):
        check(playlist.version == 7, f"{url}: version {playlist.version}, not 7")
        if byte_ranges:
            mapped = playlist.segment_map[0] if playlist.segment_map else None
            check(mapped and mapped.uri.split("?")[0].endswith("/track.mp4") and mapped.byterange and mapped.byterange.endswith("@0"),
                  f"{url}: no EXT-X-MAP to the start of track.mp4: {mapped}")
            end = int(mapped.byterange.split("@")[0])
            for segment in playlist.segments:
                check(segment.uri == mapped.uri, f"{url}: a segment outside track.mp4: {segment.uri}")
                length, offset = (int(part) for part in segment.byterange.split("@"))
                check(length > 0 and offset > end if segment is playlist.segments[0] else offset == end,
                      f"{url}: byte range {segment.byterange} does not follow the one before (ends at {end})")
                end = offset + length
        else:
            check(playlist.segment_map and playlist.segment_map[0].uri.split("?")[0].endswith("/init.mp4"), f"{url}: no EXT-X-MAP to init.mp4")
            check(all(s.uri.split("?")[0].endswith(".m4s") for s in playlist.segments), f"{url}: a segment that is not .m4s")
        if fairplay:
            key = playlist.keys[0] if playlist.keys else None
            check(key is not None and key.method == "SAMPLE-AES" and key.uri.startswith("skd://") and key.iv is None
                  and key.keyformat == "com.apple.streamingkeydelivery", f"{url}: not a FairPlay cbcs key: {key}")
    return len(playlist.segments), sum(s.duration for s in playlist.segments)


def master(url, cmaf, fairplay, byte_ranges=False):
    playlist = m3u8.loads(fetch(url), uri=url)
    check(playlist.is_variant, f"{url}: not read as a master playlist")
    check(playlist.version == (7 if cmaf else 5), f"{url}: version {playlist.version}")
    # The H.264 ladder; CMAF adds the HEVC one (hvc1).
    variants = 6 if cmaf else 3
    check(len(playlist.playlists) == variants, f"{url}: {len(playlist.playlists)} variants, not {variants}")
    hevc = [v for v in playlist.playlists if v.stream_info.codecs.startswith("hvc1.")]
    check(len(hevc) == (3 if cmaf else 0), f"{url}: {len(hevc)} HEVC variants")
    for variant in playlist.playlists:
        info = variant.stream_info
        check(info.bandwidth > 0 and info.average_bandwidth and info.codecs and info.resolution and info.frame_rate,
              f"{url}: a variant without BANDWIDTH, AVERAGE-BANDWIDTH, CODECS, RESOLUTION or FRAME-RATE")
    if fairplay:
        check(any(k.uri and k.uri.startswith("skd://") for k in playlist.session_keys), f"{url}: no FairPlay session key")
    counts = {}
    for variant in playlist.playlists:
        counts[variant.uri] = media(variant.uri, cmaf, fairplay, byte_ranges)
    for rendition in playlist.media:
        check(rendition.uri, f"{url}: a rendition without URI")
        counts[rendition.uri] = media(rendition.uri, cmaf, fairplay, byte_ranges)
    segments = {count for count, _ in counts.values()}
    check(len(segments) == 1, f"{url}: renditions with different segment counts {sorted(segments)}")
    durations = [duration for _, duration in counts.values()]
    check(max(durations) - min(durations) < 0.1, f"{url}: rendition durations {min(durations)}..{max(durations)}")
    if cmaf:
        # The thumbnail track's image playlist (Roku's tag), which m3u8 keeps as an unknown line.
        images = [line for line in fetch(url).splitlines() if line.startswith("#EXT-X-IMAGE-STREAM-INF:")]
        check(len(images) == 1, f"{url}: {len(images)} image streams")
        image_url = images[0].split('URI="')[1].split('"')[0]
        image = m3u8.loads(fetch(image_url), uri=image_url)
        check(len(image.segments) >= 1 and all(s.uri.endswith(".jpg") for s in image.segments), f"{image_url}: not sprite JPEGs")
    return len(counts), segments.pop()


def set_addressing(base, admin_token, value):
    body = json.dumps({"cmaf_addressing": value}).encode()
    request = urllib.request.Request(f"{base}/_admin/v1/accounts/{ACCOUNT}", data=body, method="PATCH",
                                     headers={"Authorization": f"Bearer {admin_token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        check(answer.status == 200, f"PATCH cmaf_addressing {value}: {answer.status}")


def run(base, admin_token):
    read(base, byte_ranges=False)
    # The byte-range form: the account's CMAF addressed by ranges of one track.mp4 per rendition.
    set_addressing(base, admin_token, "byte_ranges")
    read(base, byte_ranges=True)
    set_addressing(base, admin_token, None)


def read(base, byte_ranges):
    for video_id in VIDEOS:
        video = json.loads(fetch(f"{base}/playback/v1/accounts/{ACCOUNT}/videos/{video_id}", {"BCOV-Policy": POLICY_KEY}))
        hls = [s for s in video["sources"] if s.get("type") == "application/x-mpegURL"]
        check([s["ext_x_version"] for s in hls] == ["5", "7"], f"video {video_id}: HLS sources {[s.get('ext_x_version') for s in hls]}")
        fairplay = any("com.apple.fps.1_0" in (s.get("key_systems") or {}) for s in hls)
        for source in hls:
            cmaf = source["ext_x_version"] == "7"
            if byte_ranges and not cmaf:
                continue
            playlists, segments = master(source["src"], cmaf, fairplay, byte_ranges)
            form = " (byte ranges)" if byte_ranges else ""
            print(f"video {video_id} v{source['ext_x_version']}{form}: {playlists} media playlists of {segments} segments read by m3u8 {importlib.metadata.version('m3u8')}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--admin-token", required=True)
    args = parser.parse_args()
    try:
        run(args.base_url, args.admin_token)
    except Failure as failure:
        print(f"m3u8 readers: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
