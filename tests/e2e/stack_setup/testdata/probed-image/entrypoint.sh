#!/bin/sh
# kstack-test-probed: with no argument, waits until kstack has written /etc/kstack/env for this
# container (kstack's emptyDir, kept across container restarts: a restarted container finds it
# at once), then starts the "daemon" (a sleep whose pid is in /tmp/daemon.pid, in the
# container's private /tmp) and stays up without it, so that only the livenessProbe notices
# when it is gone. `--alive` is that probe: healthy while setup is awaited, then while the
# daemon runs.
set -eu
if [ "${1-}" = --alive ]; then
  [ -f /tmp/daemon.pid ] || exit 0
  # Gone, or a zombie (its parent, the `exec`ed sleep below, never reaps it): dead.
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$(cat /tmp/daemon.pid)/status" 2>/dev/null || true)
  [ -n "$state" ] && [ "$state" != Z ]
  exit
fi
until [ -f /etc/kstack/env ]; do sleep 0.1; done
sleep infinity &
echo "$!" >/tmp/daemon.pid
exec sleep infinity
