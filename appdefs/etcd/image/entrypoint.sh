#!/bin/sh
# Entrypoint of the kstack etcd image: waits until kstack's setup package has written this
# pod's etcd config (startscript --configure, into the /opt/kstack emptyDir), then runs etcd in
# the foreground with it.
#
# A member that has joined once (its write-ahead log is on the PVC under /var/lib/etcd) starts
# at once after a container restart with the config it has: etcd then reads its membership
# from its own data. A member that never joined forgets a config left by an earlier container
# and waits for the new one (kstack re-runs --configure for every new container): the cluster
# it has to join may have changed meanwhile (another member added), and etcd refuses to join
# with a member list that differs from the cluster's.
set -eu

CONF=/opt/kstack/etcd/etcd.conf.yml
WAL_DIR=/var/lib/etcd/data/member/wal

log() { printf 'kstack-etcd: %s\n' "$*" >&2; }

if [ ! -d "$WAL_DIR" ] && [ -f "$CONF" ]; then
  log "no data in /var/lib/etcd yet: waiting for this container's configuration"
  rm -f "$CONF"
fi
waited=0
while [ ! -f "$CONF" ]; do
  if [ $((waited % 60)) -eq 0 ]; then
    log "waiting for kstack's startscript --configure to write $CONF"
  fi
  sleep 1
  waited=$((waited + 1))
done

# Peers reach this member by its FQDN, which etcd also resolves itself when it checks its own
# advertised peer URL: give the cluster DNS a moment to publish a new pod (bounded).
fqdn=$(sed -n "s|^initial-advertise-peer-urls: 'https*://\([^:/']*\).*|\1|p" "$CONF")
tries=0
while [ -n "$fqdn" ] && ! getent hosts "$fqdn" >/dev/null 2>&1 && [ "$tries" -lt 30 ]; do
  sleep 1
  tries=$((tries + 1))
done

log "starting etcd with $CONF"
exec etcd --config-file "$CONF"
