#!/usr/bin/env bash
# The test suite (or part of it) run several times on a machine made busy on purpose, the way a
# shared CI machine is on a bad day: CPU hogs on every core and more, and a writer that syncs
# every block it writes. A test that holds on a quiet machine but fails here waits on a guess
# about this machine's speed (a latency, a sleep, a short ceiling) instead of an event.
#
#   scripts/stress-test.sh                       # the whole suite 5 times (make test-stress)
#   scripts/stress-test.sh -n 3 -f CurlTransferTests
#   RUNS=5 FILTER=OfflineSDKTests make test-stress
#
# Options: -n RUNS (5), -f FILTER (swift test --filter; none: every test), -c CPU_HOGS (2 per core),
# -d DISK_WRITERS (1), -t SECONDS each run may take (1800), --skip-build.
# Prints each run's result and the name of every test that failed, then a summary; exits 1 if any
# run failed. The hogs and the writer stop with the script, however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-5}
filter=${FILTER:-}
cores=$(nproc)
hogs=${CPU_HOGS:-$((2 * cores))}
writers=${DISK_WRITERS:-1}
run_limit=${RUN_SECONDS:-1800}
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        -n) runs=$2; shift 2 ;;
        -f) filter=$2; shift 2 ;;
        -c) hogs=$2; shift 2 ;;
        -d) writers=$2; shift 2 ;;
        -t) run_limit=$2; shift 2 ;;
        --skip-build) build=0; shift ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "stress-test: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

# As many tests at once as make test runs (the Makefile's one setting), unless the caller chose.
if [ -z "${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-}" ]; then
    export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(sed -n 's/^export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= //p' Makefile)
fi

if [ "$build" = 1 ]; then
    swift build --build-tests
fi

scratch=$(mktemp -d /tmp/stress-test.XXXXXX)
load_pids=()
stop_load() {
    for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$scratch"
}
trap stop_load EXIT
trap 'exit 130' INT TERM

# The load: CPU hogs, and writers that sync every 64 KiB block (each loop bounded, each rewrite
# of its 64 MiB file a fresh pass) so the disk's queue stays full of synchronous writes.
for _ in $(seq "$hogs"); do
    sha256sum /dev/zero >/dev/null 2>&1 &
    load_pids+=($!)
done
for index in $(seq "$writers"); do
    ( while :; do dd if=/dev/zero of="$scratch/writer-$index" bs=64k count=1024 oflag=dsync status=none || true; done ) &
    load_pids+=($!)
done
echo "stress-test: $runs run(s) of ${filter:-the whole suite} beside $hogs CPU hog(s) and $writers dsync writer(s) on $cores core(s)"

failed_runs=0
declare -A failures=()
for run in $(seq "$runs"); do
    log="$scratch/run-$run.log"
    started=$(date +%s)
    set +e
    if [ -n "$filter" ]; then
        timeout --kill-after=30 "$run_limit" swift test --skip-build --filter "$filter" >"$log" 2>&1
    else
        timeout --kill-after=30 "$run_limit" swift test --skip-build >"$log" 2>&1
    fi
    status=$?
    set -e
    took=$(( $(date +%s) - started ))
    summary=$(grep -E "^(✔|✘|􁁛|􀢄)? ?Test run with" "$log" | tail -n 1 || true)
    # Swift Testing names a failing test on its "✘ Test NAME recorded an issue at FILE:LINE" lines
    # (NAME is «unknown» for an issue recorded off the test's task: the place says which).
    names=$(grep -E "^✘ Test .* recorded an issue at " "$log" |
        sed -E 's/^✘ Test (.*) recorded an issue at ([^:]+:[0-9]+).*/\1 (\2)/' | sort -u || true)
    if [ "$status" -eq 0 ]; then
        echo "run $run: passed in ${took}s  ${summary}"
    else
        failed_runs=$((failed_runs + 1))
        [ "$status" -eq 124 ] && echo "run $run: TIMED OUT after ${run_limit}s" || echo "run $run: FAILED (exit $status) in ${took}s  ${summary}"
        while IFS= read -r name; do
            [ -n "$name" ] || continue
            echo "    ✘ $name"
            failures["$name"]=$(( ${failures["$name"]:-0} + 1 ))
        done <<<"$names"
        cp "$log" "/tmp/stress-test-run-$run.log"
        echo "    full output: /tmp/stress-test-run-$run.log"
    fi
done

echo "stress-test: $((runs - failed_runs)) of $runs run(s) passed"
for name in "${!failures[@]}"; do
    echo "    ${failures[$name]}× $name"
done
[ "$failed_runs" -eq 0 ]
