#!/usr/bin/env bash
# Builds the libFuzzer binary (Fuzz/, product FuzzTargets) with -sanitize=fuzzer,address and
# runs every target for a bounded time on a copy of its committed corpus (Fuzz/corpus/TARGET is
# never written), with its dictionary (Fuzz/dictionaries/TARGET.dict) and value profiling. Prints executions, coverage (cov:, ft:) and findings per target; exits 1 if
# any target crashed, hung or leaked (the input is kept under $FUZZ_SCRATCH/artifacts).
#
#   scripts/fuzz.sh                        # every target, 60 s each
#   FUZZ_SECONDS=300 scripts/fuzz.sh spc   # some targets, longer
#   FUZZ_TARGET=spc .build-fuzz/debug/FuzzTargets CRASH-FILE      # replay one input
#
# Environment: FUZZ_SECONDS (60), FUZZ_SCRATCH (.build-fuzz: never the main .build, which
# another build may be using), FUZZ_RSS_MB (2048), FUZZ_TIMEOUT (10 s for one input = a hang).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
scratch=${FUZZ_SCRATCH:-.build-fuzz}
rss=${FUZZ_RSS_MB:-2048}
timeout=${FUZZ_TIMEOUT:-10}

echo "== building FuzzTargets with -sanitize=fuzzer,address in $scratch"
# -DFUZZING: Fuzz/Entry.swift hands main to LLVMFuzzerRunDriver (declared with @_extern(c),
# hence the Extern feature); a plain build of the same target is a replayer.
swift build --scratch-path "$scratch" -c debug --product FuzzTargets \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
    -Xswiftc -enable-experimental-feature -Xswiftc Extern 2>&1 \
    | grep -v "Cannot export local symbol" || true
binary="$scratch/debug/FuzzTargets"
[[ -x $binary ]] || { echo "fuzz build failed: no $binary" >&2; exit 1; }

if (($#)); then targets=("$@"); else mapfile -t targets < <("$binary" --list); fi
run="$scratch/fuzz-run"
artifacts="$scratch/artifacts"
mkdir -p "$artifacts"
summary=()
failed=0
for target in "${targets[@]}"; do
    [[ -d Fuzz/corpus/$target ]] || { echo "no corpus Fuzz/corpus/$target" >&2; exit 64; }
    rm -rf "$run/$target"
    mkdir -p "$run/$target/corpus"
    cp Fuzz/corpus/"$target"/* "$run/$target/corpus/"
    log="$run/$target/fuzz.log"
    echo "== $target: ${seconds}s"
    dictionary=()
    [[ -f Fuzz/dictionaries/$target.dict ]] && dictionary=(-dict="Fuzz/dictionaries/$target.dict")
    started=$(date +%s)
    status=0
    # SWIFT_BACKTRACE off: Swift's backtracer would take over the crash signal from libFuzzer.
    SWIFT_BACKTRACE=enable=no FUZZ_TARGET=$target "$binary" "$run/$target/corpus" \
        -max_total_time="$seconds" -rss_limit_mb="$rss" -timeout="$timeout" -print_final_stats=1 \
        -use_value_profile=1 "${dictionary[@]}" -artifact_prefix="$artifacts/$target-" >"$log" 2>&1 || status=$?
    elapsed=$(($(date +%s) - started))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    units=$(find "$run/$target/corpus" -type f | wc -l)
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    if ((status != 0)) || [[ -n $artifact ]]; then
        failed=1
        # The most telling line: a broken invariant, a Swift trap, then the sanitizer's summary.
        why=""
        for pattern in 'invariant broken' 'Fatal error' 'Swift runtime failure' 'ERROR: (AddressSanitizer|LeakSanitizer)' \
                       'ERROR: libFuzzer' 'ALARM'; do
            why=$(grep -m1 -E "$pattern" "$log" | sed 's/^ *#[0-9]* 0x[0-9a-f]* in //' | cut -c1-110) && [[ -n $why ]] && break
        done
        finding="FOUND: ${why:-see $log} -> ${artifact:-see $log}"
        tail -40 "$log"
    else
        finding="nothing"
    fi
    summary+=("$(printf '%-15s %5ss %12s %7s %7s %7s  %s' "$target" "$elapsed" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$units" "$finding")")
done

echo
printf '%-15s %6s %12s %7s %7s %7s  %s\n' target time executions cov ft corpus result
printf '%s\n' "${summary[@]}"
exit $failed
