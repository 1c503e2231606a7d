#!/usr/bin/env bash
# kstack's main command, for now: start a local Kubernetes control plane (etcd,
# kube-apiserver, kube-controller-manager v1.20.2 on free loopback ports), then connect to it
# with `kstack cluster-info` — kstack's own client, loading the kubeconfig as kubectl does.
# Runs until Ctrl-C; with --check it reports health and stops everything (exit 0 if healthy).
# Installs whatever is missing first (packages, control-plane binaries, build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
  esac
done

bash "$root/scripts/install-deps.sh"
bash "$root/tests/testenv/get-binaries.sh" >/dev/null
build=$(bash "$root/scripts/build.sh")

log=$(mktemp -t kstack-run.XXXXXX)
"$build/tests/testenv/kstack-testenv" up --controller-manager >"$log" 2>&1 &
testenv_pid=$!
stop() { kill -TERM "$testenv_pid" 2>/dev/null || true; wait "$testenv_pid" 2>/dev/null || true; rm -f "$log"; }
trap stop EXIT
trap 'exit 130' INT TERM

# Wait (bounded) until the control plane reports that it runs, or the launcher exits.
for _ in $(seq 1 240); do
  if grep -q '^running;' "$log"; then break; fi
  if ! kill -0 "$testenv_pid" 2>/dev/null; then cat "$log" >&2; exit 1; fi
  sleep 0.5
done
cat "$log"
grep -q '^running;' "$log" || { echo "run: control plane did not start in 120 s" >&2; exit 1; }
kubeconfig=$(sed -n 's/^kubeconfig: *//p' "$log" | head -n1)

echo "--- kstack cluster-info --kubeconfig $kubeconfig"
"$build/cmd/kstack" version
status=0
"$build/cmd/kstack" cluster-info --kubeconfig "$kubeconfig" || status=$?
if [ "$check" -eq 1 ]; then exit "$status"; fi
echo "control plane running; export KUBECONFIG=$kubeconfig; Ctrl-C stops it"
wait "$testenv_pid"
