#!/bin/sh
# Records how it was started (in the container's own /tmp, wiped by a restart) and counts its
# starts on the emptyDir at /data (kept across restarts), then serves $WEB_ROOT on the pod IP
# at the port given as "--port N".
set -eu
{
  echo "argv: $0 $*"
  echo "greeting: $GREETING"
  echo "pwd: $(pwd)"
  echo "uid: $(id -u) gid: $(id -g)"
} > /tmp/started
if [ -d /data ]; then echo start >> /data/starts; fi
[ "$1" = "--port" ] || { echo "usage: $0 --port N" >&2; exit 2; }
cp -r www "$WEB_ROOT"
ip=$(python3 -c 'import socket; print(socket.gethostbyname(socket.gethostname()))')
exec python3 -m http.server "$2" --bind "$ip" --directory "$WEB_ROOT"
