# Sourced by the scripts that test a live mock-backend (schemathesis.sh, dashboard-browser-test.sh):
# one way to start it on a free port with a throwaway data folder and an admin token of its own,
# stop it on exit, and tell whether it survived the run.
#
#   start_backend NAME [mock-backend flags...]   sets WORK (unless set), SERVER_PID, BASE, ADMIN_TOKEN
#   backend_survived                             false (and the log shown) if it exited during the run
#   venv_install VENV PACKAGE==VERSION CHECK     a virtualenv with PACKAGE, unless CHECK (python) passes already

WORK=
SERVER_PID=
stop_backend() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    # A throwaway PostgreSQL the backend used (scripts/lib/postgres.sh) goes with it.
    if declare -F stop_postgres >/dev/null; then stop_postgres; fi
    [ -z "$WORK" ] || rm -rf "$WORK"
}

start_backend() {
    local name=$1 line
    shift
    # A caller may have made WORK already (to put a database in it first).
    [ -n "$WORK" ] || WORK=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
    trap stop_backend EXIT
    trap 'exit 130' INT TERM
    ADMIN_TOKEN=$name-$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')
    mkfifo "$WORK/stdout"
    "$BINARY" --port 0 --data-dir "$WORK/data" --admin-token "$ADMIN_TOKEN" --log-level warning "$@" \
        >"$WORK/stdout" 2>"$WORK/server.log" &
    SERVER_PID=$!
    exec 3<"$WORK/stdout"
    # The first line, once it accepts requests: "listening on http://HOST:PORT".
    if ! IFS= read -r -t 60 line <&3 || [[ "$line" != "listening on "* ]]; then
        echo "mock-backend did not start:" >&2
        cat "$WORK/server.log" >&2
        exit 1
    fi
    BASE=${line#listening on }
    echo "mock-backend $BINARY at $BASE (data $WORK/data)" >&2
}

backend_survived() {
    kill -0 "$SERVER_PID" 2>/dev/null && return 0
    echo "mock-backend exited during the run:" >&2
    tail -n 50 "$WORK/server.log" >&2
    return 1
}

venv_install() {
    local venv=$1 package=$2 check=$3
    "$venv/bin/python" -c "$check" 2>/dev/null && return 0
    echo "Installing $package in $venv ..." >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$package"
}
