#!/usr/bin/env bash
# Sourced by .ci/run: defines postgres_start and postgres_stop.
#
#   source .ci/postgres.sh
#   postgres_start            # exports WAPACE_POSTGRES_URL
#   ... go test ...
#   postgres_stop
#
# postgres_start installs the Debian `postgresql` package when initdb and
# pg_ctl are missing, initialises a throw-away cluster in a temporary
# directory owned by an unprivileged user (Postgres refuses to run as
# root), listens on 127.0.0.1 on a free port (unix socket in the same
# directory), creates the database `wapace` and exports
# WAPACE_POSTGRES_URL. postgres_stop stops it and removes the directory.

_pg_bin() {
  local name=$1 d
  if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/$name" ]; then echo "$d/$name"; return 0; fi
  done
  return 1
}

_pg_free_port() {
  # Ask the kernel for a free loopback port.
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null && return 0
  local p
  for p in $(seq 15432 15532); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

postgres_start() {
  if ! _pg_bin initdb >/dev/null || ! _pg_bin pg_ctl >/dev/null; then
    echo "postgres: installing the Debian postgresql package"
    if [ "$(id -u)" -eq 0 ]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
      sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq
      sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
  fi
  local initdb pg_ctl psql
  initdb=$(_pg_bin initdb) || { echo "postgres: initdb not found" >&2; return 1; }
  pg_ctl=$(_pg_bin pg_ctl) || { echo "postgres: pg_ctl not found" >&2; return 1; }
  psql=$(_pg_bin psql) || { echo "postgres: psql not found" >&2; return 1; }

  # Run as an unprivileged user when root.
  local run=()
  PG_USER=$(id -un)
  if [ "$(id -u)" -eq 0 ]; then
    PG_USER=wapace-pg
    if ! id -u "$PG_USER" >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER" 2>/dev/null ||
        useradd -r -M -s /bin/false "$PG_USER"
    fi
    run=(runuser -u "$PG_USER" --)
  fi

  PG_DIR=$(mktemp -d /tmp/wapace-pg.XXXXXX)
  chmod 755 "$PG_DIR"
  [ "$(id -u)" -eq 0 ] && chown "$PG_USER" "$PG_DIR"
  PG_PORT=$(_pg_free_port) || { echo "postgres: no free port" >&2; return 1; }

  "${run[@]}" "$initdb" -D "$PG_DIR/data" -U postgres --auth=trust --encoding=UTF8 --no-sync >"$PG_DIR/initdb.log" 2>&1 ||
    { cat "$PG_DIR/initdb.log" >&2; return 1; }
  "${run[@]}" "$pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories=$PG_DIR -c fsync=off -c max_connections=200" start >/dev/null ||
    { cat "$PG_DIR/server.log" >&2; return 1; }
  "${run[@]}" "$psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qAt -c "CREATE DATABASE wapace" >/dev/null ||
    { cat "$PG_DIR/server.log" >&2; return 1; }
  export WAPACE_POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/wapace?sslmode=disable"
  export PG_DIR PG_PORT PG_USER
  echo "postgres: listening on 127.0.0.1:$PG_PORT (data in $PG_DIR)"
}

postgres_stop() {
  [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ] || return 0
  local pg_ctl run=()
  pg_ctl=$(_pg_bin pg_ctl) || return 0
  [ "$(id -u)" -eq 0 ] && run=(runuser -u "$PG_USER" --)
  "${run[@]}" "$pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  unset WAPACE_POSTGRES_URL PG_DIR PG_PORT
}
