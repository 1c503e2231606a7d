#!/usr/bin/env bash
# Configures (once) and builds kstack into $KSTACK_BUILD_DIR (default: build/ in the checkout).
# Extra arguments go to the CMake configure step, e.g. -DKSTACK_SANITIZE=address,undefined.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KSTACK_BUILD_DIR:-$root/build}"
bash "$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ] || [ "$#" -gt 0 ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${KSTACK_BUILD_TYPE:-Debug}" "$@" >&2
fi
# Two cores: more parallel jobs only add memory pressure (Beast TUs take ~2 GB each).
cmake --build "$build" -j "${KSTACK_JOBS:-2}" >&2
echo "$build"
