#!/usr/bin/env python3
"""The checks at the end of benchmarks/soak.sh (standard library only).

  soak_check.py verify STORAGE BASE_URL ADMIN_TOKEN
      With no `offline` process running: every finished segment of every download in the SDK's
      store equals what the server serves at its URL; no package folder, file, `.part` file or
      store row is orphaned; no license report is left undelivered; the server's licenses agree
      with the licenses the SDK holds. Prints what it checked; exit status 1 on any problem.

  soak_check.py sample STORAGE BASE_URL ADMIN_TOKEN TOKEN COUNT
      Compares COUNT finished segments of download TOKEN, picked at random, with what the
      server serves (the soak does it before it deletes a completed download); exit status 1
      on a difference.

  soak_check.py samples FILE SECONDS
      FILE has one line per sample, `t server_rss_kb server_fds sdk_pid sdk_rss_kb sdk_fds`
      (`-` where a process was not running). Prints the first- and last-quarter medians of the
      run's SECONDS for the server and the SDK; exit status 1 when a last-quarter median
      exceeds the bound.
"""
import concurrent.futures
import http.client
import json
import os
import random
import sqlite3
import statistics
import sys
import threading
import urllib.parse

# Download states, as OfflineVideoDownloadState stores them.
STATES = {0: "requested", 1: "downloading", 2: "suspended", 3: "cancelled", 4: "completed",
          5: "error", 6: "licensePreloaded", 7: "stale"}
# States whose package folder may exist (a cancelled download's files are removed; a preloaded
# license has none).
WITH_FOLDER = {"requested", "downloading", "suspended", "completed", "error", "stale"}

# The bounds `samples` holds the last quarter to, against the first.
RSS_FACTOR, RSS_SLACK_KB, FD_SLACK = 1.20, 8 * 1024, 8


class Server:
    """GETs against the mock backend, one keep-alive connection per thread."""

    def __init__(self, base_url, admin_token):
        parts = urllib.parse.urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port
        self.admin_token = admin_token
        self.local = threading.local()

    def get(self, url, headers=None):
        """(status, body) of a GET of `url` (a full URL on this server, or a path). A 5xx or a
        broken connection (the soak's fault rules, while it runs) is tried again, 5 times in all."""
        parts = urllib.parse.urlsplit(url)
        target = parts.path + ("?" + parts.query if parts.query else "")
        for attempt in range(5):
            connection = getattr(self.local, "connection", None)
            if connection is None:
                connection = self.local.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                connection.request("GET", target, headers=headers or {})
                response = connection.getresponse()
                status, body = response.status, response.read()
            except (http.client.HTTPException, OSError):
                connection.close()
                self.local.connection = None
                if attempt == 4:
                    raise
                continue
            if status < 500 or attempt == 4:
                return status, body
        raise AssertionError("unreachable")

    def admin(self, path):
        status, body = self.get("/_admin/v1" + path, {"Authorization": "Bearer " + self.admin_token})
        if status != 200:
            raise RuntimeError(f"GET /_admin/v1{path}: {status} {body[:200]!r}")
        return json.loads(body)


class FreshURLs:
    """Segment URLs with fresh tokens, by path, for stored URLs whose token expired: the
    video's master playlist from the Playback API, then its media playlists."""

    def __init__(self, server):
        self.server = server
        self.by_path = {}
        self.videos_done = set()
        self.lock = threading.Lock()

    def url(self, stored_url, row):
        path = urllib.parse.urlsplit(stored_url).path
        with self.lock:
            if row["video_id"] not in self.videos_done:
                self.videos_done.add(row["video_id"])
                self._load(row, protection=path.split("/")[5])
            return self.by_path.get(path)

    def _load(self, row, protection):
        base = row["service_base_url"]
        status, body = self.server.get(f"{base}/playback/v1/accounts/{row['account_id']}/videos/{row['video_id']}",
                                       {"BCOV-Policy": row["policy_key"]})
        if status != 200:
            return
        masters = [s["src"] for s in json.loads(body)["sources"] if f"/hls/v5/{protection}/" in s.get("src", "")]
        for master in masters[:1]:
            for playlist in self._uris(master):
                for segment in self._uris(playlist):
                    self.by_path[urllib.parse.urlsplit(segment).path] = segment

    def _uris(self, url):
        status, body = self.server.get(url)
        if status != 200:
            return []
        uris = []
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                uris.append(urllib.parse.urljoin(url, line))
            elif 'URI="' in line and not line.startswith("#EXT-X-KEY") and not line.startswith("#EXT-X-SESSION-KEY"):
                uris.append(urllib.parse.urljoin(url, line.split('URI="', 1)[1].split('"', 1)[0]))
        return uris


def open_store(storage):
    """The SDK's store, read-only, and its downloads by token."""
    db = sqlite3.connect(f"file:{os.path.join(storage, 'offline.sqlite')}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    downloads = {row["token"]: row for row in db.execute(
        "SELECT token, video_id, account_id, state, poster_file, thumbnail_file, policy_key, service_base_url,"
        " license IS NOT NULL AS has_license, CAST(license_terms AS TEXT) AS terms, initial_playback_at FROM download")}
    return db, downloads


def compare_segments(server, packages, downloads, segments):
    """Problems found comparing each (token, url, file, bytes) segment's file with what its
    URL serves (the same path with a fresh token if the stored one expired)."""
    fresh = FreshURLs(server)

    def check(segment):
        token, url, file, size = segment
        path = os.path.join(packages, token, file)
        try:
            with open(path, "rb") as handle:
                local = handle.read()
        except OSError as error:
            return f"segment file {path}: {error.strerror}"
        if len(local) != size:
            return f"{path}: {len(local)} bytes on disk, {size} in the store"
        status, served = server.get(url)
        if status == 403:
            url = fresh.url(url, downloads[token]) or url
            status, served = server.get(url)
        if status != 200:
            return f"{path}: the server answered {status} for {urllib.parse.urlsplit(url).path}"
        if served != local:
            return f"{path}: {len(local)} bytes differ from the {len(served)} the server serves at {urllib.parse.urlsplit(url).path}"
        return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        return [problem for problem in pool.map(check, segments) if problem]


def report(problems):
    for problem in problems[:20]:
        print("PROBLEM: " + problem)
    if len(problems) > 20:
        print(f"PROBLEM: ... and {len(problems) - 20} more")
    return 1 if problems else 0


def sample(storage, base_url, admin_token, token, count):
    db, downloads = open_store(storage)
    rows = db.execute("SELECT token, url, file, bytes FROM segment WHERE done AND token = ?", (token,)).fetchall()
    segments = random.Random(token).sample([tuple(row) for row in rows], min(int(count), len(rows)))
    problems = compare_segments(Server(base_url, admin_token), os.path.join(storage, "packages"), downloads, segments)
    print(f"{len(segments)} of {len(rows)} segments of {token}: {sum(s[3] for s in segments)} bytes compared")
    return report(problems)


def verify(storage, base_url, admin_token):
    problems = []
    server = Server(base_url, admin_token)
    db, downloads = open_store(storage)
    state = {token: STATES.get(row["state"], str(row["state"])) for token, row in downloads.items()}
    packages = os.path.join(storage, "packages")
    by_state = {}
    for token in downloads:
        by_state[state[token]] = by_state.get(state[token], 0) + 1
    print("store: " + ", ".join(f"{count} {name}" for name, count in sorted(by_state.items())) if downloads else "store: empty")

    # Every download has ended: completed or cancelled (the soak's last phase finished the rest).
    for token, name in state.items():
        if name not in ("completed", "cancelled"):
            problems.append(f"download {token} ({downloads[token]['video_id']}) is left {name}")

    # (a) Every finished segment of every download that keeps its files (not a cancelled one)
    # equals what its URL serves.
    segments = [tuple(row) for row in db.execute("SELECT token, url, file, bytes FROM segment WHERE done")
                if state.get(row["token"]) in WITH_FOLDER]
    unfinished = db.execute("SELECT token, COUNT(*) FROM segment JOIN download d USING (token)"
                            " WHERE NOT segment.done AND d.state = 4 GROUP BY token").fetchall()
    for token, count in unfinished:
        problems.append(f"completed download {token} has {count} segments not done")
    problems += compare_segments(server, packages, downloads, segments)
    verified_bytes = sum(segment[3] for segment in segments)
    print(f"segments: {len(segments)} finished segments of {len({s[0] for s in segments})} downloads compared with the server:"
          f" {verified_bytes / 1e6:.1f} MB")

    # The local playlists are in place and as stored.
    for token, path, text in db.execute("SELECT token, path, text FROM playlist"):
        if state.get(token) != "completed":
            continue
        try:
            with open(os.path.join(packages, token, path), "rb") as handle:
                if handle.read() != bytes(text):
                    problems.append(f"playlist {token}/{path} differs from the store's")
        except OSError as error:
            problems.append(f"playlist {token}/{path}: {error.strerror}")

    # (b) Orphans: folders, files and rows without their counterpart.
    folders = set(os.listdir(packages)) if os.path.isdir(packages) else set()
    for folder in sorted(folders - set(downloads)):
        problems.append(f"package folder {folder} has no download in the store")
    for token, name in state.items():
        if name == "completed" and token not in folders:
            problems.append(f"completed download {token} has no package folder")
        if name not in WITH_FOLDER and token in folders:
            problems.append(f"{name} download {token} still has a package folder")
    expected = {}
    for token, file in db.execute("SELECT token, file FROM segment"):
        expected.setdefault(token, set()).add(file)
    for token, path in db.execute("SELECT token, path FROM playlist"):
        expected.setdefault(token, set()).add(path)
    for token, row in downloads.items():
        expected.setdefault(token, set()).update(f for f in (row["poster_file"], row["thumbnail_file"]) if f)
    files = 0
    for folder in sorted(folders):
        for directory, _, names in os.walk(os.path.join(packages, folder)):
            for name in names:
                files += 1
                relative = os.path.relpath(os.path.join(directory, name), os.path.join(packages, folder))
                if name.endswith(".part"):
                    problems.append(f"left-over partial file {folder}/{relative} ({state.get(folder, 'no download')})")
                elif state.get(folder) == "completed" and relative not in expected.get(folder, set()) \
                        and not relative.startswith("sideband/"):
                    problems.append(f"file {folder}/{relative} belongs to nothing in the store")
    for table in ("track", "segment", "playlist"):
        (count,) = db.execute(f"SELECT COUNT(*) FROM {table} WHERE token NOT IN (SELECT token FROM download)").fetchone()
        if count:
            problems.append(f"{count} {table} rows belong to no download")
    reports = db.execute("SELECT kind, license_id, attempts FROM license_report").fetchall()
    for kind, license_id, attempts in reports:
        problems.append(f"a {kind} report of license {license_id} never reached the server ({attempts} attempts)")
    print(f"files: {files} in {len(folders)} package folders; {len(reports)} license reports left in the store")

    # (c) Licenses: what the SDK holds is known to the server, as the SDK has it; nothing else is
    # left active on the server (deleted downloads gave theirs back).
    licenses = server.admin("/licenses")["licenses"]
    on_server = {license["id"]: license for license in licenses}
    held = {}
    for token, row in downloads.items():
        if row["has_license"] and row["terms"]:
            terms = json.loads(row["terms"])
            held[terms["license_id"]] = (token, terms, row)
    for license_id, (token, terms, row) in held.items():
        license = on_server.get(license_id)
        if license is None:
            problems.append(f"download {token} holds license {license_id}, which the server does not know")
            continue
        if license["state"] not in ("active", "expired"):
            problems.append(f"download {token} holds license {license_id}, which the server has {license['state']}")
        if license["kind"] != terms["kind"]:
            problems.append(f"download {token} holds license {license_id} as a {terms['kind']}, the server has it as a {license['kind']}")
        if row["initial_playback_at"] is not None and terms.get("play_duration") and not license.get("first_play"):
            problems.append(f"download {token} was played, but the server has no first play for license {license_id}")
    for license in licenses:
        if license["persistable"] and license["state"] == "active" and license["id"] not in held:
            problems.append(f"license {license['id']} ({license['kind']}, video {license['video_id']}, issued {license['issued_at']})"
                            " is active on the server but no download holds it")
    count = lambda state: sum(1 for license in licenses if license["state"] == state)
    print(f"licenses: the SDK holds {len(held)}; the server has {len(licenses)}: {count('active')} active,"
          f" {count('released')} released, {count('expired')} expired, {count('revoked')} revoked")

    return report(problems)


def samples(file, seconds):
    rows = []
    with open(file) as handle:
        for line in handle:
            fields = line.split()
            if len(fields) == 6:
                rows.append(fields)
    quarter = seconds / 4
    status = 0
    print(f"{'':14} {'first quarter':>14} {'last quarter':>14}  bound on the last quarter's median")
    for label, rss_column, fds_column in (("server", 1, 2), ("SDK", 4, 5)):
        def median(column, last):
            values = [int(row[column]) for row in rows if row[column] != "-"
                      and (float(row[0]) >= seconds - quarter if last else float(row[0]) < quarter)]
            return statistics.median(values) if values else None
        first_rss, last_rss = median(rss_column, False), median(rss_column, True)
        first_fds, last_fds = median(fds_column, False), median(fds_column, True)
        if first_rss is None or last_rss is None:
            print(f"{label}: no samples in the first or the last quarter")
            status = 1
            continue
        rss_bound = first_rss * RSS_FACTOR + RSS_SLACK_KB
        fds_bound = first_fds + FD_SLACK
        rss_ok, fds_ok = last_rss <= rss_bound, last_fds <= fds_bound
        print(f"{label + ' RSS':14} {first_rss / 1024:11.1f} MB {last_rss / 1024:11.1f} MB  "
              f"<= {rss_bound / 1024:.1f} MB (+20 % + 8 MB): {'ok' if rss_ok else 'EXCEEDED'}")
        print(f"{label + ' open fds':14} {first_fds:14g} {last_fds:14g}  "
              f"<= {fds_bound:g} (+8): {'ok' if fds_ok else 'EXCEEDED'}")
        status |= 0 if rss_ok and fds_ok else 1
    counted = sum(1 for row in rows if row[4] != "-")
    print(f"{len(rows)} samples of the server, {counted} of the SDK process then running (medians of each quarter)")
    return status


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "verify":
        sys.exit(verify(*sys.argv[2:]))
    if len(sys.argv) == 7 and sys.argv[1] == "sample":
        sys.exit(sample(*sys.argv[2:]))
    if len(sys.argv) == 4 and sys.argv[1] == "samples":
        sys.exit(samples(sys.argv[2], float(sys.argv[3])))
    sys.exit(__doc__)
