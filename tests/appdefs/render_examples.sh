#!/bin/sh
# render_examples.sh KSTACK APPDEFS_DIR: `kstack render` of every appdefs/<app>/ example Stack
# prints a headless Service and one StatefulSet per role of the Stack.
set -eu
kstack=$1
appdefs=$2
count=0
for dir in "$appdefs"/*/; do
  [ -f "$dir/apptype.yaml" ] || continue
  app=$(basename "$dir")
  out=$("$kstack" render -f "$dir/apptype.yaml" -f "$dir/stack.yaml") || {
    echo "FAIL $app: kstack render exited $?" >&2
    exit 1
  }
  sets=$(printf '%s\n' "$out" | grep -c '^kind: StatefulSet$' || true)
  roles=$(grep -c '^    - id:' "$dir/stack.yaml" || true)
  if [ "$sets" -ne "$roles" ] || ! printf '%s\n' "$out" | grep -q '^  clusterIP: None$'; then
    echo "FAIL $app: $sets StatefulSets for $roles roles, or no headless Service" >&2
    printf '%s\n' "$out" >&2
    exit 1
  fi
  echo "ok   $app: $sets StatefulSet(s)"
  count=$((count + 1))
done
[ "$count" -ge 6 ] || { echo "FAIL only $count apps under $appdefs" >&2; exit 1; }
