#!/bin/sh
# The Redis container's first process. kstack's setup package (`startscript --configure`)
# writes this pod's config into the /etc/kstack emptyDir; until it is there, wait. Then run
# redis-server in the foreground with it (it binds the pod IP only). After a container restart
# the emptyDir still holds the config, so the daemon starts at once and kstack's --configure
# for the new container rewrites the same file.
set -eu
conf=/etc/kstack/redis/redis.conf
if [ ! -f "$conf" ]; then
  printf 'kstack-redis: waiting for kstack setup to write %s\n' "$conf" >&2
  while [ ! -f "$conf" ]; do sleep 1; done
fi
printf 'kstack-redis: starting redis-server %s\n' "$conf" >&2
exec redis-server "$conf"
