#!/bin/sh
# kstack-etcd-check ready|live: the etcd role's probes.
#
#   ready  `etcdctl endpoint health` against this member: etcd answers and the cluster commits
#          (a quorum with a leader). Fails while the member waits for its configuration.
#   live   passes while the member waits for its configuration (the entrypoint waits for
#          kstack's setup) and while this member answers `etcdctl endpoint status` (local, no
#          quorum needed). When it does not answer, it fails only if another member of the
#          Stack is healthy: then this one is hung (e.g. stopped), and a restart brings it
#          back with its data. Without any healthy member the cluster is forming or has lost
#          its quorum, which a restart would not cure - and restarting every member while they
#          wait for each other would keep the cluster from ever forming.
set -u

CONF=/opt/kstack/etcd/etcd.conf.yml
ENV_FILE=/etc/kstack/env
mode=${1:-}
case $mode in ready | live) ;; *)
  echo "usage: kstack-etcd-check ready|live" >&2
  exit 2
  ;;
esac

if [ ! -f "$CONF" ]; then
  echo "not configured yet"
  [ "$mode" = live ] && exit 0
  exit 1
fi
self=$(sed -n "s/^listen-client-urls: '\([^',]*\).*/\1/p" "$CONF")
ctl() { etcdctl --dial-timeout=1s --command-timeout=2s "$@"; }

if [ "$mode" = ready ]; then
  exec etcdctl --dial-timeout=1s --command-timeout=3s --endpoints="$self" endpoint health
fi

ctl --endpoints="$self" endpoint status >/dev/null 2>&1 && exit 0
[ -r "$ENV_FILE" ] || exit 0
# shellcheck disable=SC1090 # written by kstack: `export NAME='value'` lines only
. "$ENV_FILE"
port=${KSTACK_SERVICE_CLIENT_PORT:-2379}
old_ifs=$IFS
IFS=,
set -f
for fqdn in ${KSTACK_ROLE_MEMBER_FQDNS:-}; do
  [ "$fqdn" = "${KSTACK_FQDN:-}" ] && continue
  if ctl --endpoints="http://$fqdn:$port" endpoint health >/dev/null 2>&1; then
    echo "etcd at $self does not answer while $fqdn is healthy"
    exit 1
  fi
done
IFS=$old_ifs
echo "etcd at $self does not answer, nor does any other member: not restarting it"
exit 0
