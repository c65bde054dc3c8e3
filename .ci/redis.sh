#!/usr/bin/env bash
# Redis for CI. SOURCE this file from .ci/run (do not execute it):
#
#   . .ci/redis.sh          # installs the Debian redis-server package when missing
#   redis_start             # starts redis-server on 127.0.0.1, exports WAPACE_REDIS_URL
#   ...                     # go test, examples/workers
#   redis_stop              # stops it (also safe to call from an EXIT trap)
#
# The server listens on loopback only, on a free port, keeps nothing on disk,
# and runs daemonised with its pidfile and log in a temporary directory.
# The Debian package's own service (port 6379) is never started or used.

redis_install() {
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    return 0
  fi
  echo "redis.sh: installing redis-server (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d keeps the package from starting its system service on 6379.
  local policy=/usr/sbin/policy-rc.d created=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
  fi
  apt-get update -qq
  apt-get install -y -qq redis-server >/dev/null
  if [ -n "$created" ]; then rm -f "$policy"; fi
  command -v redis-server >/dev/null 2>&1
}

# redis_free_port prints a TCP port free on 127.0.0.1.
redis_free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$(( (RANDOM % 20000) + 30000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"; return 0
    fi
  done
  return 1
}

# redis_start starts redis-server and exports WAPACE_REDIS_URL.
redis_start() {
  redis_install || { echo "redis.sh: redis-server unavailable" >&2; return 1; }
  REDIS_CI_DIR=$(mktemp -d)
  local port tries=0
  while :; do
    port=$(redis_free_port) || { echo "redis.sh: no free port" >&2; return 1; }
    redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes \
      --save "" --appendonly no --daemonize yes \
      --pidfile "$REDIS_CI_DIR/redis.pid" --logfile "$REDIS_CI_DIR/redis.log" \
      --dir "$REDIS_CI_DIR"
    for _ in $(seq 1 100); do
      if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = "PONG" ]; then
        REDIS_CI_PORT=$port
        export WAPACE_REDIS_URL="redis://127.0.0.1:$port/0"
        echo "redis.sh: redis-server $(redis-server --version | awk "{print \$3}" | sed "s/^v=//") on $WAPACE_REDIS_URL"
        return 0
      fi
      sleep 0.1
    done
    redis_stop_pid
    tries=$((tries + 1))
    if [ "$tries" -ge 3 ]; then
      echo "redis.sh: redis-server did not answer PING" >&2
      cat "$REDIS_CI_DIR/redis.log" >&2 || true
      return 1
    fi
  done
}

redis_stop_pid() {
  local pid
  if [ -n "${REDIS_CI_DIR:-}" ] && [ -f "$REDIS_CI_DIR/redis.pid" ]; then
    pid=$(cat "$REDIS_CI_DIR/redis.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$REDIS_CI_DIR/redis.pid"
  fi
}

# redis_stop stops the server redis_start started and removes its directory.
redis_stop() {
  redis_stop_pid
  if [ -n "${REDIS_CI_DIR:-}" ]; then rm -rf "$REDIS_CI_DIR"; fi
  REDIS_CI_DIR=""
  unset WAPACE_REDIS_URL
}
