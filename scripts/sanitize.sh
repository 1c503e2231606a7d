#!/usr/bin/env bash
# Builds kstack with a sanitizer in its own folder and runs the suites under it (docs/sanitizers.md).
#   bash scripts/sanitize.sh thread        TSan        -> build-tsan/
#   bash scripts/sanitize.sh address       ASan+UBSan  -> build-asan/
#   KSTACK_TEST_LABELS  ctest label regex (default: unit|integration|e2e)
#   KSTACK_TEST_JOBS    ctest -j (default 1: sanitized control-plane tests are slow on 2 cores)
#   KSTACK_SKIP_BUILD=1 run the tests of an existing build folder as they are
# Every sanitized process (tests and the operator/node-simulator children they start) writes its
# reports under <build>/sanitizer-reports/; the run fails if any report was written, even when
# the test that caused it passed (a child's report otherwise only lands in a deleted log file).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  thread) sanitize=thread build="${KSTACK_BUILD_DIR:-$root/build-tsan}" var=TSAN_OPTIONS ;;
  address) sanitize=address,undefined build="${KSTACK_BUILD_DIR:-$root/build-asan}" var=ASAN_OPTIONS ;;
  *) echo "usage: $0 thread|address" >&2; exit 2 ;;
esac
labels="${KSTACK_TEST_LABELS:-unit|integration|e2e}"

bash "$root/tests/testenv/get-binaries.sh" >/dev/null
if [ "${KSTACK_SKIP_BUILD:-0}" != 1 ]; then
  KSTACK_BUILD_DIR="$build" bash "$root/scripts/build.sh" -DKSTACK_SANITIZE="$sanitize" \
    -DKSTACK_BUILD_BENCH=OFF >/dev/null
fi
reports="$build/sanitizer-reports"
rm -rf "$reports" && mkdir -p "$reports"
# Appended to the options tests/CMakeLists.txt prepends (suppressions, halt_on_error).
export "$var=${!var:+${!var}:}log_path=$reports/${var%%_*}"
[ "$sanitize" = thread ] || export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$reports/UBSAN"
start=$SECONDS
status=0
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "${KSTACK_TEST_JOBS:-1}" \
  -L "$labels" || status=$?
echo "sanitize.sh: ctest -L '$labels' took $((SECONDS - start)) s (exit $status)"
if compgen -G "$reports/*" >/dev/null; then
  cat "$reports"/*
  echo "sanitize.sh: sanitizer reports in $reports: $(ls "$reports" | tr '\n' ' ')" >&2
  exit 1
fi
exit "$status"
