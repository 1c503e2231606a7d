#!/usr/bin/env bash
# A long fuzzing campaign (docs/fuzzing.md): unlike the gating ctest runs (fixed seed, bounded),
# each target runs from a random seed for SECONDS, and its corpus accumulates across campaigns.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default: 300 s for each of tests/fuzz/fuzz_*.cpp
#   nice -n 10 scripts/fuzz.sh 180 fuzz_watch_decoder
# Env: KSTACK_BUILD_DIR (default build/), the fuzz project is built in $KSTACK_BUILD_DIR/fuzz.
# Per target, under $KSTACK_BUILD_DIR/fuzz/campaign/<target>/: corpus/ (new inputs, kept) and
# findings/ (crash-*, leak-*, timeout-*, oom-* reproducers). A target stops at its first
# finding; the script goes on with the next one and exits 1 if anything was found.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KSTACK_BUILD_DIR:-$root/build}/fuzz"
seconds="${1:-300}"
shift || true
if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [SECONDS] [TARGET...]" >&2
  exit 2
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in "$root"/tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$source" .cpp)"); done
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ >&2
fi
cmake --build "$build" -j "${KSTACK_JOBS:-2}" >&2

found=()
for target in "${targets[@]}"; do
  if [ ! -x "$build/$target" ]; then
    echo "fuzz: no target $target (tests/fuzz/$target.cpp)" >&2
    exit 2
  fi
  work="$build/campaign/$target"
  mkdir -p "$work/corpus" "$work/findings"
  dict=()
  [ -f "$root/tests/fuzz/$target.dict" ] && dict=("-dict=$root/tests/fuzz/$target.dict")
  echo "fuzz: $target for ${seconds}s (log: $work/log)" >&2
  # The writable corpus comes first: libFuzzer adds new inputs to the first directory. The
  # checked-in seeds are read only. -seed is left out: libFuzzer then picks a random one.
  if ! "$build/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/findings/" "${dict[@]}" \
      "$work/corpus" "$root/tests/fuzz/corpus/$target" </dev/null >"$work/log" 2>&1; then
    found+=("$target")
    tail -n 40 "$work/log" >&2
  fi
  grep -E '^(INFO: Seed|#[0-9]+ +DONE|stat::number_of_executed_units)' "$work/log" >&2 || true
done

if [ ${#found[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${found[*]}" >&2
  for target in "${found[@]}"; do ls -1 "$build/campaign/$target/findings/"* >&2; done
  cat >&2 <<'EOF'
Reproduce one with build/fuzz/<target> <file>. Fix the defect in the product code, add a
regression unit test that fails without the fix, then keep the reproducer for ever:
  cp <file> tests/fuzz/corpus/<target>/crash_<what_it_is>
(every ctest run replays it). Delete the finding from findings/ once it is in the corpus.
EOF
  exit 1
fi
echo "fuzz: nothing found" >&2
