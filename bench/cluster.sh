# shellcheck shell=bash
# Sourced by the scripts of bench/: a private PostgreSQL (default durability) in a temporary
# directory, stopped and removed when the script exits, as root or not.
#
#   start_cluster [-c NAME=VALUE …]      options for `postgres`, e.g. -c max_connections=300
#
# Sets `work` (the directory, which the script may use too) and, once started, `url` and
# `postmaster` (its pid); `sql STATEMENT` prints the rows. A script with more to undo on exit
# defines `before_cluster_stops`. `cluster_ticks` is the CPU the cluster has used so far, in clock
# ticks (`getconf CLK_TCK` a second); `process_ticks PID…` the CPU of other processes.
# shellcheck disable=SC2012 # version directories only; ls fails loudly when none match, a glob would not
bindir=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | tail -1)
work=$(mktemp -d)
chmod 755 "$work"
as_postgres=()
if [ "$(id -u)" = 0 ]; then chown postgres "$work"; as_postgres=(runuser -u postgres --); fi

stop_cluster() {
    if declare -F before_cluster_stops >/dev/null; then before_cluster_stops; fi
    "${as_postgres[@]}" "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop_cluster EXIT INT TERM

start_cluster() {
    local port=$((20000 + $$ % 10000))
    "${as_postgres[@]}" "$bindir/initdb" -D "$work/data" -U postgres -A trust >/dev/null
    "${as_postgres[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/log" -w \
        -o "-p $port -k $work -c listen_addresses=127.0.0.1 $*" start >/dev/null
    url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
    postmaster=$(head -1 "$work/data/postmaster.pid")
}

sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 "$url" -c "$1"; }

# CPU ticks of the cluster: its live processes, and those it has reaped (the postmaster's
# cutime and cstime).
cluster_ticks() {
    echo $(($(process_ticks $(pgrep -P "$postmaster") "$postmaster") + $(awk '{print $16 + $17}' "/proc/$postmaster/stat")))
}

# CPU ticks (user and system) of the processes given, those still running.
process_ticks() {
    local total=0 pid
    for pid in "$@"; do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
