"""Prints a Playback API video object the way a person wants to read it, and writes its
first source URL to the file named by the first argument."""
import json
import sys

video = json.load(sys.stdin)
print(f"   {video['name']}  (id {video['id']}, ref {video['reference_id']})")
print(f"   duration {video['duration'] / 1000:.1f} s, offline_enabled={video['offline_enabled']}, tags={video['tags']}")
for source in video["sources"]:
    systems = ", ".join(source.get("key_systems") or {}) or "none"
    print(f"   source {source['type']} v{source['ext_x_version']}, key systems: {systems}")
tracks = [track["srclang"] for track in video["text_tracks"]]
print(f"   sideband subtitles: {', '.join(tracks) if tracks else 'none'}")
with open(sys.argv[1], "w") as out:
    print(video["sources"][0]["src"], file=out)
