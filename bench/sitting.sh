#!/usr/bin/env bash
# Every benchmark of docs/benchmarks.md in one sitting, one after the other on the same machine,
# each with its reference in the same run and the load average before and after it, into one
# log: the figures README.md and docs/benchmarks.md quote come from one such log.
#
#   bench/sitting.sh [--build DIR] [--log FILE] [--quick] [--only "admission informer ..."]
#                    [--converge-rounds N] [--admission-seconds S] [--informer-kinds "pods ..."]
#
# Parts (in this order unless --only names others): admission, resync, informer, operator,
# converge.
# --build: a Release build folder with the bench targets (default build-rel; built when a target
#   is missing). --quick: smaller shapes for a smoke run (not for quoting).
# Needs what the benches need: root, bubblewrap (converge), wrk and nginx (admission_bench.sh
# installs them), Go 1.19 and the control plane's Kubernetes tree (the informer bench's
# client-go reference, built on demand).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
build="$repo/build-rel"
log=""
quick=0
only="admission resync informer operator converge"
converge_rounds=3
admission_seconds=5
informer_kinds="stacks statefulsets services pvcs pods"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --only) only=$2; shift 2 ;;
    --converge-rounds) converge_rounds=$2; shift 2 ;;
    --admission-seconds) admission_seconds=$2; shift 2 ;;
    --informer-kinds) informer_kinds=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ -n "$log" ]] || log="/tmp/kstack-sitting-$(date -u +%Y%m%dT%H%M%SZ).log"

targets=(kstack kstack_bench_admission_serve kstack_bench_resync kstack_bench_informer
         kstack_bench_operator_memory kstack_bench_converge)
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKSTACK_WERROR=OFF >/dev/null
fi
cmake --build "$build" -j2 --target "${targets[@]}" >/dev/null

if [[ $quick -eq 1 ]]; then
  adm=(--duration 2 --rounds 1); resync=(--stacks 100 --repeat 3)
  informer_n=1000; owned_n=300; operator=(--stacks 50 --members 9 --rounds 1)
  converge=(--stacks 10 --rounds 1)
else
  adm=(--duration "$admission_seconds" --rounds 3); resync=(--stacks 1000 --repeat 5)
  informer_n=10000; owned_n=3000; operator=(--stacks 1000 --members 9 --rounds 1)
  converge=(--stacks 100 --rounds "$converge_rounds")
fi

exec > >(tee "$log") 2>&1
echo "== sitting $(date -u +%FT%TZ), commit $(git -C "$repo" rev-parse --short HEAD)," \
  "$(nproc) cores, build $build"
part() {  # part NAME COMMAND...
  local name=$1 start
  shift
  start=$(date +%s)
  echo
  echo "== $name: $*"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$@"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); $(( $(date +%s) - start )) s"
}
for p in $only; do
  case "$p" in
    admission) part admission "$here/admission_bench.sh" --build "$build" --concurrency 16 "${adm[@]}" ;;
    resync) part resync "$build/bench/kstack_bench_resync" "${resync[@]}" ;;
    informer)
      part informer-configmaps "$build/bench/kstack_bench_informer" --kind configmaps \
        --objects "$informer_n" --rounds 2
      for k in $informer_kinds; do
        part "informer-$k" "$build/bench/kstack_bench_informer" --kind "$k" --objects "$owned_n" \
          --rounds 2
      done ;;
    operator) part operator "$build/bench/kstack_bench_operator_memory" --kstack "$build/cmd/kstack" \
      "${operator[@]}" ;;
    converge) part converge "$build/bench/kstack_bench_converge" "${converge[@]}" ;;
    *) echo "unknown part: $p" >&2; exit 2 ;;
  esac
done
echo
echo "== done $(date -u +%FT%TZ); log: $log"
