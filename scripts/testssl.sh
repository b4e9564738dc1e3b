#!/usr/bin/env bash
# testssl.sh (Debian's package) against a live `mock-backend --tls` with its local CA (part of
# `make test`, alone as `make test-tls`): protocols, cipher suites and their order, certificate,
# known vulnerabilities, headers. Fails on any HIGH or CRITICAL finding (and on a scan that could
# not run) except the one a local CA cannot avoid: its certificate names no revocation
# information (no OCSP responder, no CRL; id cert_revocation). Also checks the TLS profile itself:
# TLS 1.2 and 1.3 offered, nothing older, the server's cipher order.
#
#   MOCK_BACKEND=path/to/mock-backend   the binary (default .build/debug/mock-backend)
#   TESTSSL_JSON=path.json              where testssl's findings go (default .build/testssl.json)
#
# About a minute here (2 cores); testssl itself stays on 127.0.0.1 (no phoning out).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/live-backend.sh

BINARY=${MOCK_BACKEND:-.build/debug/mock-backend}
FINDINGS=${TESTSSL_JSON:-.build/testssl.json}
# The HIGH or CRITICAL findings a mock with a local CA may have, by testssl id.
ALLOWED='cert_revocation'

[ -x "$BINARY" ] || { echo "no mock-backend at $BINARY: build it (swift build) or set MOCK_BACKEND" >&2; exit 1; }
command -v testssl >/dev/null || scripts/install-deps.sh testssl.sh

WORK=$(mktemp -d "${TMPDIR:-/tmp}/testssl.XXXXXX")
start_backend testssl --tls --ready-file "$WORK/ready.json"
# The ready file is written once it listens: the HTTPS port and the CA file to trust.
read -r PORT CA_FILE < <(python3 -c '
import json, sys
ready = json.load(open(sys.argv[1]))
print(ready["https_port"], ready["ca_file"])
' "$WORK/ready.json")

mkdir -p "$(dirname "$FINDINGS")"
rm -f "$FINDINGS"
echo "testssl against https://127.0.0.1:$PORT (trusting $CA_FILE) ..." >&2
started=$(date +%s)
# /healthz: an answer of 200 for the HTTP header checks (/ redirects to the dashboard).
# testssl's exit status counts findings in its own way; the JSON below decides.
testssl --quiet --color 0 --warnings off --add-ca "$CA_FILE" --jsonfile "$FINDINGS" \
    "https://127.0.0.1:$PORT/healthz" >"$WORK/testssl.out" 2>&1 || true
echo "testssl finished in $(( $(date +%s) - started )) s; findings in $FINDINGS" >&2

status=0
python3 - "$FINDINGS" "$ALLOWED" <<'EOF' || status=1
import collections, json, sys

path, allowed = sys.argv[1], set(sys.argv[2].split())
try:
    findings = json.load(open(path))
except (OSError, ValueError) as error:
    sys.exit(f"testssl wrote no findings ({error}): see its output above")
by_id = {finding["id"]: finding for finding in findings}
counts = collections.Counter(finding["severity"] for finding in findings)
print("severities:", ", ".join(f"{name} {counts[name]}" for name in ("CRITICAL", "HIGH", "MEDIUM", "LOW", "WARN", "FATAL", "OK", "INFO") if counts[name]))

failures = []
for finding in findings:
    severity, identifier = finding["severity"], finding["id"]
    if severity in ("HIGH", "CRITICAL", "FATAL"):
        # Per-certificate ids carry a suffix (" <hostCert#1>") when a server has several.
        accepted = identifier.split(" ")[0] in allowed and severity != "FATAL"
        print(f"  {severity:8} {identifier}: {finding['finding']}" + ("  (accepted: a local CA has no OCSP responder or CRL)" if accepted else ""))
        if not accepted:
            failures.append(identifier)

# The profile itself: TLS 1.2 and 1.3 only, the server's cipher order.
expected = {"SSLv2": "not offered", "SSLv3": "not offered", "TLS1": "not offered", "TLS1_1": "not offered",
            "TLS1_2": "offered", "TLS1_3": "offered", "cipher_order": "server"}
for identifier, start in expected.items():
    shown = by_id.get(identifier, {}).get("finding", "missing")
    print(f"  {identifier:13} {shown}")
    if not shown.startswith(start):
        failures.append(f"{identifier} is '{shown}', expected '{start}'")
for identifier in ("cipherorder_TLSv1_2", "cipherorder_TLSv1_3"):
    print(f"  {identifier:20} {by_id.get(identifier, {}).get('finding', 'missing')}")

if failures:
    sys.exit("testssl: FAILED: " + "; ".join(failures))
print("testssl: passed")
EOF
[ "$status" -eq 0 ] || tail -n 40 "$WORK/testssl.out" >&2
backend_survived || status=1
exit "$status"
