#!/usr/bin/env bash
# A throwaway PostgreSQL for the cluster's tests and `scripts/run.sh --nodes N` (docs/cluster.md):
# Debian's server binaries, a data directory of its own, loopback TCP on the given port, trust
# authentication for the local user only. No service, no Docker; `stop` removes everything.
#
#   scripts/pg-local.sh start DIR PORT   # prints the URL: postgres://postgres@127.0.0.1:PORT/postgres
#   scripts/pg-local.sh stop DIR [fast|immediate]
#   scripts/pg-local.sh restart DIR      # stop fast and start again on the same port
#   scripts/pg-local.sh halt DIR         # stop, keeping the data (start DIR PORT resumes it)
set -euo pipefail
cmd=${1:?start|stop|restart}
dir=${2:?data directory}

bin=""
if [ -n "${PG_BIN:-}" ]; then bin=$PG_BIN
else
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do bin=$d; break; done
  if [ -z "$bin" ] && command -v initdb >/dev/null; then bin=$(dirname "$(command -v initdb)"); fi
fi
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "pg-local: PostgreSQL's server binaries are missing: run scripts/setup.sh" >&2
  exit 1
fi
# initdb and postgres refuse to run as root: as root, run them as the postgres user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    port=${3:?port}
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    if [ ! -f "$dir/db/PG_VERSION" ]; then
      as_pg "$bin/initdb" -D "$dir/db" -U postgres -A trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    echo "$port" >"$dir/port"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir/port"; fi
    as_pg "$bin/pg_ctl" -D "$dir/db" -l "$dir/server.log" -w -t 30 start \
      -o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c max_connections=200 -c fsync=on" >/dev/null \
      || { cat "$dir/server.log" >&2; exit 1; }
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    mode=${3:-fast}
    if [ -f "$dir/db/postmaster.pid" ]; then
      as_pg "$bin/pg_ctl" -D "$dir/db" -m "$mode" -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  restart)
    port=$(cat "$dir/port")
    as_pg "$bin/pg_ctl" -D "$dir/db" -m fast -w -t 30 stop >/dev/null
    as_pg "$bin/pg_ctl" -D "$dir/db" -l "$dir/server.log" -w -t 30 start \
      -o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c max_connections=200 -c fsync=on" >/dev/null
    ;;
  halt)
    if [ -f "$dir/db/postmaster.pid" ]; then
      as_pg "$bin/pg_ctl" -D "$dir/db" -m fast -w -t 30 stop >/dev/null 2>&1 || true
    fi
    ;;
  *) echo "pg-local: start|stop|restart|halt" >&2; exit 2 ;;
esac
