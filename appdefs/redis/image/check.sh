#!/bin/sh
# kstack-redis-check live|ready: the Redis container's probes (exec, as the image's user).
#   live   the daemon answers PING (PONG, or LOADING while it reads its data). Also passes
#          while the entrypoint still waits for kstack's setup (no config yet), so liveness
#          never kills a container that kstack has not configured.
#   ready  PING answers PONG and, on a replica, `INFO replication` says master_link_status:up
#          (the replica has synced with the primary and is connected to it).
# The address and port come from the config kstack's setup wrote (bind = the pod IP). Each
# redis-cli call is bounded: a stopped daemon (SIGSTOP) accepts connections but never answers.
set -eu
conf=/etc/kstack/redis/redis.conf
mode=${1:-}
case $mode in
  live | ready) ;;
  *)
    echo "usage: kstack-redis-check live|ready" >&2
    exit 2
    ;;
esac
if [ ! -f "$conf" ]; then
  [ "$mode" = live ] && exit 0
  echo "not configured yet: no $conf" >&2
  exit 1
fi
host=$(awk '$1 == "bind" { print $2; exit }' "$conf")
port=$(awk '$1 == "port" { print $2; exit }' "$conf")
cli() { timeout 2 redis-cli --no-auth-warning -h "$host" -p "${port:-6379}" "$@"; }

pong=$(cli ping 2>&1) || {
  echo "redis-cli ping $host:$port failed: $pong" >&2
  exit 1
}
case $mode:$pong in
  *:PONG | live:LOADING*) ;;
  *)
    echo "ping $host:$port: $pong" >&2
    exit 1
    ;;
esac
[ "$mode" = live ] && exit 0
if grep -q '^replicaof ' "$conf"; then
  info=$(cli info replication 2>&1) || {
    echo "redis-cli info replication failed: $info" >&2
    exit 1
  }
  case $info in
    *master_link_status:up*) ;;
    *)
      echo "replica not in sync with its primary:" >&2
      printf '%s\n' "$info" | grep -E '^(master_host|master_link_status|master_sync_in_progress)' >&2 || true
      exit 1
      ;;
  esac
fi
exit 0
