#!/usr/bin/env bash
# tests/db/postgresql_server.sh start|stop DIR PORT: a throwaway PostgreSQL server for the store's tests
# (tests/CMakeLists.txt: the fixture `postgresql`). `start` makes a cluster in DIR/data (initdb, trust
# authentication, superuser `postgres`) and starts it listening on a Unix socket in DIR only (no TCP), so
# it touches nothing outside DIR and clashes with no other server; `stop` stops it and removes DIR.
# PostgreSQL refuses to run as root: as root the server runs as the `postgres` user (Debian's package
# makes it), which then owns DIR. The binaries: pg_config --bindir, else /usr/lib/postgresql/*/bin.
# Tests connect with postgresql:///DB?host=DIR&port=PORT&user=postgres; DB `memstress` is made empty for them.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop DIR PORT" >&2
  exit 2
}
(($# == 3)) || usage
action="$1" dir="$2" port="$3"

bindir=""
if command -v pg_config >/dev/null 2>&1 && [[ -x "$(pg_config --bindir)/initdb" ]]; then
  bindir="$(pg_config --bindir)"
else
  for candidate in $(printf "%s\n" /usr/lib/postgresql/*/bin | sort -V -r); do
    if [[ -x "$candidate/initdb" ]]; then
      bindir="$candidate"
      break
    fi
  done
fi
[[ -n "$bindir" ]] || {
  echo "$0: no PostgreSQL server found (initdb, pg_ctl; Debian/Ubuntu: apt-get install postgresql)" >&2
  exit 1
}

as_server() {
  if ((EUID == 0)); then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

stop() {
  if [[ -f "$dir/data/postmaster.pid" ]]; then
    as_server "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case "$action" in
  start)
    stop # a server left by a run that was killed
    mkdir -p "$dir"
    if ((EUID == 0)); then
      chown postgres: "$dir"
    fi
    as_server "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
      >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      exit 1
    }
    as_server "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses= -k $dir -p $port -c fsync=off" start >/dev/null || {
      cat "$dir/server.log" >&2
      exit 1
    }
    as_server "$bindir/createdb" -h "$dir" -p "$port" -U postgres memstress
    echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') listening on $dir (port $port), database memstress"
    ;;
  stop) stop ;;
  *) usage ;;
esac
