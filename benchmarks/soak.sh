#!/usr/bin/env bash
# A soak of the mock backend and the SDK (issue 14): keeps both busy for a while with downloads
# started, paused, cancelled, resumed, retried and deleted at random, licenses acquired, renewed,
# played and released, and `offline` processes interrupted, killed and started again; then checks
# that nothing was lost, corrupted, orphaned or leaked.
#
#   benchmarks/soak.sh [seconds]          (or SOAK_SECONDS; default 600)
#   SOAK_SEED=N                           the seed of every random choice (printed; default: a new one)
#   SOAK_CONFIGURATION=release            the release build instead of debug
#   SOAK_LATENCY_MS=N                     added by the server to every response (default 5)
#   SOAK_KEEP=1                           keep the server's data, the SDK's storage and the logs
#
# One mock-backend runs for the whole soak, with light fault rules (2 % of segments cut mid-body,
# 5 % of license exchanges and 1 % of all other requests answered 503) so the SDK retries. The SDK
# runs as the `offline` command on one storage folder, which one process owns at a time (others
# are refused, naming it; readers work beside it). So the soak is a loop of owners: each round
# makes 0-3 changes at random between owners (pause, cancel, delete, retry, renew, play to a
# file), then starts one owner (`offline download` of a video not held, with a purchase or a
# rental for FairPlay, or `offline resume`), follows its JSON lines, and lets it finish,
# interrupts it (Ctrl-C pauses cleanly) or kills it (SIGKILL) after a random number of its
# progress reports. Beside each owner it checks that a reader works and that a second owner is
# refused; before it deletes a completed download, it compares 50 of its segments with the
# server. Every few seconds it samples the server's and the owner's RSS and open descriptors.
#
# Afterwards, without faults: `offline resume`/`retry` until every download has ended, then
# benchmarks/soak_check.py checks (a) every finished segment on disk is byte-identical to what the
# server serves for it, (b) no package folder, file, partial file or store row is orphaned and no
# license report is left undelivered, (c) the server's licenses agree with those the SDK holds,
# and none is left active without a download holding it; and that the last quarter's median RSS
# and descriptor count of the server and of the SDK stay within a bound of the first quarter's.
# Prints what was done and PASS or FAIL; exit status 1 on FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${SOAK_SECONDS:-600}}
seed=${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}
configuration=${SOAK_CONFIGURATION:-debug}
latency=${SOAK_LATENCY_MS:-5}
sample_every=5        # seconds between RSS/fd samples
owner_limit=120       # seconds an owner may run before it is interrupted
stop_limit=30         # seconds an interrupted owner may take to exit
RANDOM=$seed

scripts/install-deps.sh curl jq python3 libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev pkg-config
echo "Building mock-backend and offline ($configuration) ..." >&2
swift build -c "$configuration" --product mock-backend >/dev/null
swift build -c "$configuration" --product offline >/dev/null
export BINARY=.build/$configuration/mock-backend   # what live-backend.sh starts
offline=.build/$configuration/offline
faults=('{"route": "segment", "probability": 0.02, "cut_after_bytes": 20000}'
        '{"route": "license", "probability": 0.05, "status": 503}'
        '{"probability": 0.01, "status": 503, "retry_after": 1}')

# shellcheck source=scripts/lib/live-backend.sh
. scripts/lib/live-backend.sh
start_backend soak --latency-ms "$latency" --fault-seed "$seed" --fault "${faults[0]}" --fault "${faults[1]}" --fault "${faults[2]}"
admin() { curl -sf -H "Authorization: Bearer $ADMIN_TOKEN" "$@"; }

storage=$WORK/sdk
logs=$WORK/logs
mkdir -p "$logs"
export OFFLINE_BASE_URL=$BASE OFFLINE_ACCOUNT=6415818918001 OFFLINE_POLICY_KEY=BCpkADawqM1northwindPLAYkey000002 \
       OFFLINE_STORAGE=$storage NO_COLOR=1
# The Northwind videos that can be downloaded: clear (12 s, 2 h, 10 min, English only) and FairPlay
# (12 s to buy, 12 s to rent, 2 h). The two-hour ones make sure signals land mid-download.
videos=(6415818918101 6415818918106 6415818918107 6415818918109 6415818918103 6415818918104 6415818918108)
declare -A fairplay=([6415818918103]=1 [6415818918104]=1 [6415818918108]=1)
declare -A long=([6415818918106]=1 [6415818918107]=1 [6415818918108]=1)

owner=          # the running owner's pid
sampler=
cleanup() {
    [ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
    if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then kill -KILL "$owner"; wait "$owner" 2>/dev/null || true; fi
    if [ "${SOAK_KEEP:-}" = 1 ]; then
        echo "Kept $WORK: server data in data/, the SDK's storage in sdk/, every command's output in logs/" >&2
        WORK=
    fi
    stop_backend
}
trap cleanup EXIT

# --- Bookkeeping -----------------------------------------------------------------------------------

declare -A tally=()      # "command exit-status" -> count
declare -A finished=()   # how downloads ended ("completed", "error (reason)") -> count
problems=()
count() { tally[$1]=$(( ${tally[$1]:-0} + 1 )); }
problem() {
    problems+=("$*")
    echo "PROBLEM: $*" >&2
}
# R: a random number below $1, from the seeded generator (in this shell, never in a subshell).
roll() { R=$((RANDOM % $1)); }

step=0
# run KIND ARGS...: `offline ARGS --json` to completion; sets status, out (its output file) and
# command (its words).
run() {
    local kind=$1
    shift
    step=$((step + 1))
    out=$logs/$step-$kind.json
    command="offline $*"
    status=0
    "$offline" "$@" --json --reserve-mb 0 >"$out" 2>"$logs/$step-$kind.err" || status=$?
    count "$kind $status"
}
# expect STATUS...: a problem unless the last `run` exited with one of them.
expect() {
    local allowed
    for allowed in "$@"; do [ "$status" = "$allowed" ] && return 0; done
    problem "$command exited $status (expected $*): $(head -c 400 "$out") $(grep -m1 -h 'crashed' "${out%.json}.err" || true)"
}
# A refusal caused by a fault rule: fine for the commands that talk to the server.
injected() { [ "$status" = 3 ] && grep -q FAULT_INJECTED "$out"; }

# --- The SDK's library, as `offline list` sees it --------------------------------------------------

tokens=()                 # in the order requested
declare -A state=()       # token -> state
declare -A video_of=()    # token -> video id (from the `requested` line of its download)
library() {
    run list list
    expect 0
    cp "$out" "$WORK/library.json"
    tokens=()
    state=()
    local token value
    while read -r token value; do
        tokens+=("$token")
        state[$token]=$value
    done < <(jq -r '.videos[] | "\(.token) \(.state)"' "$out")
}
# pick STATE...: sets token to one of the downloads in those states, at random; false if none.
# With only_fairplay=1, only downloads of FairPlay videos.
only_fairplay=
pick() {
    local candidates=() t s
    for t in "${tokens[@]}"; do
        [ -z "$only_fairplay" ] || [ -n "${fairplay[${video_of[$t]:-none}]:-}" ] || continue
        for s in "$@"; do [ "${state[$t]}" = "$s" ] && candidates+=("$t"); done
    done
    [ ${#candidates[@]} -gt 0 ] || return 1
    roll ${#candidates[@]}
    token=${candidates[R]}
}
# pick_video: sets video to one no download holds (requested, downloading, suspended, completed),
# a long one seven times in ten when one is free; false if none is free.
pick_video() {
    local free=() free_long=() v t held
    for v in "${videos[@]}"; do
        held=
        for t in "${tokens[@]}"; do
            case ${state[$t]} in requested|downloading|suspended|completed) [ "${video_of[$t]:-}" = "$v" ] && held=1 ;; esac
        done
        [ -n "$held" ] && continue
        free+=("$v")
        [ -z "${long[$v]:-}" ] || free_long+=("$v")
    done
    [ ${#free[@]} -gt 0 ] || return 1
    roll 10
    if [ $R -lt 7 ] && [ ${#free_long[@]} -gt 0 ]; then free=("${free_long[@]}"); fi
    roll ${#free[@]}
    video=${free[R]}
}

# --- Changes between owners ------------------------------------------------------------------------

# license_field TOKEN FIELD: a field of the download's license as `offline list` showed it last.
license_field() { jq -r --arg t "$1" --arg f "$2" '.videos[] | select(.token == $t) | .license[$f] // empty' "$WORK/library.json"; }
# mark_requests: remembers the server's newest request; license_faulted: whether a license
# request since then was answered by a fault rule (between owners, they all come from the
# command just run).
mark_requests() { mark=$(admin "$BASE/_admin/v1/requests?limit=1" | jq '.requests[-1].id // 0'); }
license_faulted() { admin "$BASE/_admin/v1/requests?path_prefix=/license/&after=$mark" | jq -e 'any(.requests[]; .fault)' >/dev/null; }
server_license() { admin "$BASE/_admin/v1/licenses/$1" | jq -r ".$2 // empty"; }

# sample_segments TOKEN: 50 finished segments of a completed download, picked at random, compared
# with what the server serves, before the download is deleted.
sampled_downloads=0 sampled_segments=0 sampled_bytes=0
sample_segments() {
    local result
    result=$(python3 benchmarks/soak_check.py sample "$storage" "$BASE" "$ADMIN_TOKEN" "$1" 50 2>&1) ||
        problem "completed download $1 differs from the server: $(grep -m3 -e PROBLEM -e Error <<<"$result")"
    # "50 of 7200 segments of TOKEN: 2479584 bytes compared"
    if [[ $result =~ ^([0-9]+)\ of\ [0-9]+\ segments\ of\ [^:]*:\ ([0-9]+)\ bytes ]]; then
        sampled_downloads=$((sampled_downloads + 1))
        sampled_segments=$((sampled_segments + BASH_REMATCH[1]))
        sampled_bytes=$((sampled_bytes + BASH_REMATCH[2]))
    fi
}

change() {
    library
    roll 100
    if [ $R -lt 30 ]; then
        pick completed cancelled error suspended || return 0
        [ "${state[$token]}" != completed ] || sample_segments "$token"
        local license
        license=$(license_field "$token" license_id)
        mark_requests
        run delete delete "$token"
        expect 0
        # The license goes back to the server (queued and sent later only if that failed).
        if [ "$status" = 0 ] && [ -n "$license" ] && [ "$(server_license "$license" state)" != released ] && ! license_faulted; then
            problem "$command exited 0, but its license $license is $(server_license "$license" state) on the server and no license request failed"
        fi
    elif [ $R -lt 50 ]; then
        only_fairplay=1
        pick completed suspended || { only_fairplay=; return 0; }
        only_fairplay=
        roll 2
        if [ $R = 0 ]; then run renew renew "$token" --purchase; else run renew renew "$token" --rental 2h; fi
        injected || expect 0
    elif [ $R -lt 70 ]; then
        pick completed || return 0
        local license window=''
        license=$(license_field "$token" license_id)
        if [ -n "$license" ] && [ -n "$(license_field "$token" play_duration_seconds)" ] && [ -z "$(license_field "$token" first_play)" ]; then
            window=1
        fi
        mark_requests
        run play play "$token" --output "$WORK/play.ts"
        expect 0
        # The first play of a rental with a play window is reported to the server.
        if [ "$status" = 0 ] && [ -n "$window" ] && [ -z "$(server_license "$license" first_play)" ] && ! license_faulted; then
            problem "$command started license $license's play window, but the server has no first play and no license request failed"
        fi
        [ "$status" != 0 ] || [ "$(jq -r .bytes "$out")" -gt 0 ] || problem "offline play $token wrote an empty file"
        rm -f "$WORK/play.ts"
    elif [ $R -lt 80 ]; then
        pick requested downloading || return 0
        run pause pause "$token"
        expect 0
    elif [ $R -lt 88 ]; then
        pick requested downloading suspended error || return 0
        run cancel cancel "$token"
        expect 0
    else
        pick error || return 0
        run retry retry "$token"
        expect 0
    fi
}

# --- Owners --------------------------------------------------------------------------------------

# start_owner KIND ARGS...: `offline ARGS --json` in the background as the storage folder's owner,
# fetching 2, 4 or 6 segments at a time per download.
start_owner() {
    owner_kind=$1
    shift
    step=$((step + 1))
    owner_log=$logs/$step-$owner_kind.jsonl
    : >"$owner_log"
    roll 3
    "$offline" "$@" --json --reserve-mb 0 --parallel $((2 * R + 2)) >"$owner_log" 2>"$logs/$step-$owner_kind.err" &
    owner=$!
    echo "$owner" >"$WORK/owner.pid"
}
# lines PATTERN: how many of the owner's JSON lines match.
lines() { grep -c -- "$1" "$owner_log" || true; }

# beside_owner: a reader works while the owner runs, and a second owner is refused, naming it.
# (Judged only if the owner was still downloading throughout: it lets go of the folder once its
# downloads have finished.)
beside_owner() {
    run list-beside-owner list
    expect 0
    run second-owner retry 00000000
    if [ "$status" != 3 ] || ! grep -q "in use by process $owner" "$out"; then
        if kill -0 "$owner" 2>/dev/null && [ "$(lines '"event":"finished"')" = 0 ]; then
            problem "a second owner beside process $owner was not refused naming it: exit $status $(head -c 300 "$out")"
        fi
    fi
}

# exits_within SECONDS: whether the owner has exited within that time.
exits_within() {
    local tenths=0
    while kill -0 "$owner" 2>/dev/null; do
        [ $tenths -lt $(($1 * 10)) ] || return 1
        sleep 0.1
        tenths=$((tenths + 1))
    done
}

# end_owner FATE WANTED LIMIT: follows the owner until it exits or, for FATE interrupt or kill,
# until it has printed WANTED progress lines; after LIMIT seconds it is interrupted. Then Ctrl-C
# (SIGINT) or SIGKILL as FATE says, and the exit status is judged.
end_owner() {
    local fate=$1 wanted=$2 deadline=$((SECONDS + $3)) beside='' signal=''
    while kill -0 "$owner" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do
        local progress
        progress=$(lines '"event":"progress"')
        if [ -z "$beside" ] && [ "$progress" -ge 1 ] && [ "$(lines '"event":"finished"')" = 0 ]; then
            beside_owner
            beside=1
        fi
        [ "$fate" != finish ] && [ "$progress" -ge "$wanted" ] && break
        sleep 0.2
    done
    if kill -0 "$owner" 2>/dev/null; then
        [ $SECONDS -lt "$deadline" ] || { fate=interrupt; count "$owner_kind ran-${3}s-interrupted"; }
        if [ "$fate" = kill ]; then signal=KILL; else signal=INT; fi
        kill -"$signal" "$owner"
        # (Its standard error hides the shell's notice that a job was killed.)
        if ! exits_within "$stop_limit" 2>/dev/null; then
            problem "$owner_kind (pid $owner) did not exit within $stop_limit s of SIG$signal: $(tail -c 300 "$owner_log")"
            kill -KILL "$owner"
        fi
    fi
    status=0
    { wait "$owner" || status=$?; } 2>/dev/null
    rm -f "$WORK/owner.pid"
    count "$owner_kind ${signal:+SIG$signal }$status"
    owner_outcomes "$signal"
    owner=
}

# owner_outcomes SIGNAL: what the owner's JSON lines say (downloads requested, finished, paused),
# and whether its exit status fits.
owner_outcomes() {
    local signal=$1 token video result
    while read -r token video; do video_of[$token]=$video; done \
        < <(jq -R -r 'fromjson? | select(.event == "requested") | "\(.token) \(.video)"' "$owner_log")
    while read -r result; do finished[$result]=$(( ${finished[$result]:-0} + 1 )); done \
        < <(jq -R -r 'fromjson? | select(.event == "finished") | .state + (if .error then " (" + .error.reason + ")" else "" end)' "$owner_log")
    # Finished (0), a download failed (4), killed (137), or refused because of a fault (3).
    if [ "$status" = 0 ] || [ "$status" = 4 ] || { [ "$signal" = KILL ] && [ "$status" = 137 ]; } ||
        { [ "$status" = 3 ] && grep -q FAULT_INJECTED "$owner_log"; }; then
        return 0
    fi
    if [ "$signal" = INT ] && [ "$status" = 130 ]; then
        # Ctrl-C paused every download the owner followed.
        library
        for token in $(jq -R -r 'fromjson? | select(.event == "paused") | .tokens[]' "$owner_log"); do
            case ${state[$token]:-deleted} in
                requested|downloading) problem "download $token is ${state[$token]} after its owner was interrupted and said it paused it" ;;
            esac
        done
        return 0
    fi
    problem "$owner_kind (pid $owner) ${signal:+after SIG$signal }exited $status: $(tail -c 400 "$owner_log") $(tail -c 400 "${owner_log%.jsonl}.err")"
}

# round: 0-3 changes, then one owner with a random fate.
round() {
    roll 4
    local changes=$R i
    for ((i = 0; i < changes; i++)); do change; done
    library
    roll 100
    if [ $R -lt 30 ] && pick suspended; then
        start_owner resume resume "$token"
    elif [ $R -lt 45 ] && pick requested downloading; then
        start_owner resume resume
    elif pick_video; then
        local terms=()
        if [ -n "${fairplay[$video]:-}" ]; then
            roll 3
            case $R in
                0) terms=(--purchase) ;;
                1) terms=(--rental 2h) ;;
                2) terms=(--rental 2h --play-duration 1h) ;;
            esac
        fi
        start_owner download download "$video" "${terms[@]}"
    else
        start_owner resume resume
    fi
    roll 100
    local fate
    if [ $R -lt 30 ]; then fate=finish; elif [ $R -lt 65 ]; then fate=interrupt; else fate='kill'; fi
    roll 10
    end_owner "$fate" $((R + 1)) "$owner_limit"
}

# sampler: every few seconds, `t server_rss_kb server_fds owner_pid owner_rss_kb owner_fds`.
sampler() {
    local start=$SECONDS pid
    while :; do
        pid=$(cat "$WORK/owner.pid" 2>/dev/null || true)
        echo "$((SECONDS - start)) $(usage "$SERVER_PID") ${pid:--} $(usage "$pid")" >>"$WORK/samples"
        sleep "$sample_every"
    done
}
usage() {  # PID -> "rss_kb fds", or "- -" when it is not running
    local rss
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true)
    if [ -n "$1" ] && [ -n "$rss" ]; then echo "$rss $(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"; else echo "- -"; fi
}

# --- The soak --------------------------------------------------------------------------------------

echo "Soak: $seconds s, seed $seed, $configuration build, $latency ms per response, faults ${faults[*]}" >&2
sampler &
sampler=$!
started=$SECONDS
next_report=$((SECONDS + 60))
rounds=0
while [ $((SECONDS - started)) -lt "$seconds" ]; do
    round
    rounds=$((rounds + 1))
    if [ $SECONDS -ge $next_report ]; then
        echo "  $((SECONDS - started)) s: $rounds rounds, ${finished[completed]:-0} downloads completed, ${#problems[@]} problems" >&2
        next_report=$((SECONDS + 60))
    fi
done
soaked=$((SECONDS - started))
kill "$sampler"
sampler=

# Everything left to do, done without faults (what is left must finish; a fault on the last
# license report would leave it queued for a later start, by design).
admin -X DELETE "$BASE/_admin/v1/faults" >/dev/null
all_ended=
for _ in $(seq 30); do
    library
    if pick error; then
        run final-retry retry "$token"
        expect 0
    elif pick suspended; then
        start_owner final-resume resume "$token"
        end_owner finish 0 900
    elif pick requested downloading; then
        start_owner final-resume resume
        end_owner finish 0 900
    else
        all_ended=1
        break
    fi
done
[ -n "$all_ended" ] || problem "downloads were still left to finish after 30 final rounds"
backend_survived || problem "mock-backend exited during the soak"

echo >&2
echo "Checking the SDK's storage against the server ..." >&2
verify_status=0
python3 benchmarks/soak_check.py verify "$storage" "$BASE" "$ADMIN_TOKEN" >"$WORK/verify.txt" || verify_status=$?
samples_status=0
python3 benchmarks/soak_check.py samples "$WORK/samples" "$soaked" >"$WORK/samples.txt" || samples_status=$?

echo "Soak of $soaked s (then $((SECONDS - started - soaked)) s to finish and check): seed $seed, $configuration build, $(nproc) cores,"
echo "$latency ms added per response, faults: ${faults[*]}"
echo "$rounds rounds. Commands by exit status (owners: SIGINT is Ctrl-C, 130 paused; SIGKILL, 137 killed):"
for key in "${!tally[@]}"; do echo "$key"; done | sort | while read -r key; do
    printf '  %-36s %5d\n' "$key" "${tally[$key]}"
done
echo "Downloads ended:"
for key in "${!finished[@]}"; do echo "$key"; done | sort | while read -r key; do
    printf '  %-36s %5d\n' "$key" "${finished[$key]}"
done
echo "before deletion: $sampled_segments segments ($((sampled_bytes / 1000000)) MB) of $sampled_downloads completed downloads, 50 each at random, compared with the server"
grep -v '^PROBLEM' "$WORK/verify.txt" || true
cat "$WORK/samples.txt"
for p in "${problems[@]}"; do echo "PROBLEM: $p"; done
grep '^PROBLEM' "$WORK/verify.txt" || true
if [ ${#problems[@]} -eq 0 ] && [ "$verify_status" = 0 ] && [ "$samples_status" = 0 ]; then
    echo "PASS"
else
    echo "FAIL"
    exit 1
fi
