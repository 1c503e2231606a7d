#!/bin/sh
# kstack-etcdctl ARGS...: etcdctl against this member's own client URL (etcd listens on the pod
# IP only, not on etcdctl's default 127.0.0.1:2379), e.g. `kubectl exec etcd-member-0 --
# kstack-etcdctl get foo`.
set -eu
CONF=/opt/kstack/etcd/etcd.conf.yml
[ -f "$CONF" ] || {
  echo "kstack-etcdctl: $CONF is missing (the member is not configured yet)" >&2
  exit 1
}
url=$(sed -n "s/^listen-client-urls: '\([^',]*\).*/\1/p" "$CONF")
exec etcdctl --endpoints="$url" "$@"
