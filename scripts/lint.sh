#!/usr/bin/env bash
# clang-format (check only; --fix rewrites) and clang-tidy over project sources.
# clang-tidy needs compile_commands.json from a configured build folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${KSTACK_BUILD_DIR:-$root/build}"
cd "$root"
mapfile -t files < <(git ls-files '*.cpp' '*.h' | grep -v '^tests/testenv/.*\.sh$')
status=0
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}" || status=1
fi
if [ -f "$build/compile_commands.json" ]; then
  # asio_impl.cpp only instantiates Boost's own sources.
  mapfile -t sources < <(printf '%s\n' "${files[@]}" | grep '\.cpp$' | grep -v -e '^bench/' -e '^tests/fuzz/' -e 'asio_impl.cpp$')
  for f in "${sources[@]}"; do
    clang-tidy -p "$build" --quiet "$f" 2>/dev/null || { echo "lint: clang-tidy: $f" >&2; status=1; }
  done
else
  echo "lint: no $build/compile_commands.json; run scripts/build.sh first for clang-tidy" >&2
  status=1
fi
exit $status
