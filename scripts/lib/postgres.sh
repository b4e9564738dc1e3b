# Sourced by the scripts that need a throwaway PostgreSQL (benchmarks/license.sh,
# scripts/schemathesis.sh): one way to start a cluster of its own in a folder, on a free port,
# with PostgreSQL's durable defaults, make databases in it, and stop it.
#
#   start_postgres DIR        initdb + pg_ctl start in DIR; sets PG_BIN, PG_PORT
#   new_database NAME         creates NAME; prints its URL (postgres://postgres@127.0.0.1:PORT/NAME)
#   stop_postgres             stops the cluster (safe to call twice, or when none was started)
#
# initdb and postgres refuse to run as root: as root they run as Debian's postgres user, which
# must be able to enter DIR's parents (a mktemp -d folder is 700: chmod it 755 first).

. "$(dirname "${BASH_SOURCE[0]}")/free-port.sh"

PG_BIN=
PG_PORT=
PG_DATA=
PG_AS=()

start_postgres() {
    local dir=$1
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    [ "$(id -u)" -eq 0 ] && PG_AS=(runuser -u postgres --)
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
    PG_PORT=$(free_port)
    "${PG_AS[@]}" "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 >/dev/null
    PG_DATA="$dir/data"
    "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$dir/log" -w \
        -o "-p $PG_PORT -k $dir -c listen_addresses=127.0.0.1 -c max_connections=50" start >/dev/null
}

new_database() {
    "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -q -c "CREATE DATABASE $1" postgres
    echo "postgres://postgres@127.0.0.1:$PG_PORT/$1"
}

stop_postgres() {
    [ -n "$PG_DATA" ] || return 0
    "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
    PG_DATA=
}
