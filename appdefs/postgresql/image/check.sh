#!/bin/sh
# kstack-postgres-check live|ready: the probes of the kstack PostgreSQL image (appdefs/postgresql).
#
#   live    exit 0 unless the server runs but does not answer: also while the entrypoint still
#           waits for kstack's setup or builds the data directory (initdb, pg_basebackup).
#   ready   exit 0 when the server accepts connections and is in its role: the primary not in
#           recovery; a replica in recovery with its WAL receiver streaming from the primary.
set -u

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
CONF_DIR=/etc/kstack/postgresql
PGDATA=/var/lib/postgresql/data
SOCKET_DIR=/tmp/kstack-postgresql

configured() { [ -f "$CONF_DIR/postgresql.conf" ] && [ -f "$CONF_DIR/port" ]; }
port() { cat "$CONF_DIR/port"; }

case ${1:-} in
  live)
    configured || exit 0
    [ -f "$PGDATA/postmaster.pid" ] || exit 0
    # 0 accepting, 1 rejecting (starting up, recovering): alive; 2 no answer, 3 bad call.
    "$PGBIN/pg_isready" -q -h "$SOCKET_DIR" -p "$(port)"
    [ "$?" -le 1 ]
    ;;
  ready)
    configured || {
      echo "not configured yet"
      exit 1
    }
    "$PGBIN/pg_isready" -h "$SOCKET_DIR" -p "$(port)" || exit 1
    state=$("$PGBIN/psql" -h "$SOCKET_DIR" -p "$(port)" -U postgres -d postgres -XAtq -c \
      "select pg_is_in_recovery(), coalesce((select status from pg_stat_wal_receiver), 'none')") ||
      exit 1
    case "$(cat "$CONF_DIR/role")/$state" in
      primary/f\|none | replica/t\|streaming) exit 0 ;;
      *)
        echo "role $(cat "$CONF_DIR/role"), in recovery|wal receiver: $state"
        exit 1
        ;;
    esac
    ;;
  *)
    echo "usage: kstack-postgres-check live|ready" >&2
    exit 3
    ;;
esac
