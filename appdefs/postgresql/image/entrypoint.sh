#!/bin/sh
# Entrypoint of the kstack PostgreSQL image (appdefs/postgresql/image), run as `postgres`.
#
# 1. Waits until kstack's `startscript --configure` has written this pod's configuration to
#    /etc/kstack/postgresql/ (an emptyDir: a new pod waits for its own setup; a restarted
#    container finds it and starts at once).
# 2. With no cluster in /var/lib/postgresql/data (the member's PVC) yet: the primary runs
#    initdb and creates the replication role; a replica copies the primary with pg_basebackup
#    (retried until the primary answers) and becomes a standby (standby.signal; its
#    primary_conninfo is in the generated postgresql.conf). Both are built aside and renamed
#    into place, so an interrupted first start begins again instead of leaving half a cluster.
# 3. Runs the server in the foreground on the pod IP (never 0.0.0.0: pods of one node may
#    share a network), with its socket in /tmp/kstack-postgresql.
set -eu

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
CONF_DIR=/etc/kstack/postgresql
PGROOT=/var/lib/postgresql
PGDATA=$PGROOT/data
SOCKET_DIR=/tmp/kstack-postgresql # as unix_socket_directories in the generated postgresql.conf
REPLICATION_USER=replicator       # as the setup package's pg_hba.conf and primary_conninfo

log() { printf 'kstack-postgres: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

if [ ! -f "$CONF_DIR/postgresql.conf" ]; then
  log "waiting for kstack's setup to write $CONF_DIR/postgresql.conf"
  while [ ! -f "$CONF_DIR/postgresql.conf" ]; do sleep 1; done
fi
role=$(cat "$CONF_DIR/role")
port=$(cat "$CONF_DIR/port")
primary=$(cat "$CONF_DIR/primary")
case $role in primary | replica) ;; *) die "$CONF_DIR/role: not primary or replica: $role" ;; esac
case $port in '' | *[!0-9]*) die "$CONF_DIR/port: not a port: $port" ;; esac
case $primary in '' | *[!A-Za-z0-9.-]* | .* | -*) die "$CONF_DIR/primary: not an FQDN: $primary" ;; esac

# The pod IP: the kubelet's /etc/hosts maps the pod's hostname to it.
ip=$(getent hosts "$(hostname)" | head -n 1)
ip=${ip%%[[:space:]]*}
[ -n "$ip" ] || die "no address for $(hostname) in /etc/hosts"

umask 077
mkdir -p "$SOCKET_DIR"

if [ ! -f "$PGDATA/PG_VERSION" ]; then
  work=$PGROOT/data.kstack-init
  rm -rf "$work"
  if [ "$role" = primary ]; then
    log "initdb $PGDATA"
    "$PGBIN/initdb" -D "$work" -U postgres -E UTF8 --locale=C --auth-local=trust \
      --auth-host=scram-sha-256 --no-instructions >&2
    # Single-user mode: no server, no socket needed yet.
    printf 'CREATE ROLE %s WITH REPLICATION LOGIN;\n' "$REPLICATION_USER" |
      "$PGBIN/postgres" --single -D "$work" -c shared_buffers=16MB -c max_connections=5 \
        postgres >/dev/null
    grep -q . "$work/global/pg_filenode.map" || die "initdb left no cluster in $work"
  else
    log "pg_basebackup from $primary:$port into $PGDATA"
    until "$PGBIN/pg_basebackup" -h "$primary" -p "$port" -U "$REPLICATION_USER" -D "$work" \
      -X stream -c fast -w; do
      log "pg_basebackup from $primary:$port failed; again in 2 s"
      rm -rf "$work"
      sleep 2
    done
    : >"$work/standby.signal"
  fi
  mv "$work" "$PGDATA"
fi

log "starting PostgreSQL ($role) on $ip:$port"
exec "$PGBIN/postgres" -c config_file="$CONF_DIR/postgresql.conf" -c listen_addresses="$ip"
