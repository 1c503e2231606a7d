#!/usr/bin/env bash
# Obtains the binaries of kstack's test control plane and caches them outside the checkout:
#   kube-apiserver, kube-controller-manager  v1.20.2, built from Debian's `kubernetes` source package
#   kubectl                                   v1.20.2, unpacked from Debian's `kubernetes-client`
#   etcd                                      Debian's `etcd-server` (installed as a package)
# Rebuilds only what is missing. Prints the cache's bin directory on stdout.
# Cold run on a 2-core machine: about 5-11 min (measured figures in docs/testenv.md); a warm
# run (binaries cached) takes a second.
#
# The three build pitfalls handled here are described in docs/testenv.md.
set -euo pipefail

KUBE_VERSION=v1.20.2
cache="${KSTACK_TESTENV_DIR:-$HOME/.cache/kstack-testenv}"
bin="$cache/bin"
mkdir -p "$bin"

log() { echo "get-binaries [${SECONDS}s]: $*" >&2; }
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
apt_updated=0
apt_install() {
  local missing=()
  for p in "$@"; do have_pkg "$p" || missing+=("$p"); done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$apt_updated" -eq 0 ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  log "installing ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends --no-upgrade "${missing[@]}" >&2
}

# etcd on its own transaction (installing it together with other packages can fail on this image).
$SUDO dpkg --configure -a >/dev/null 2>&1 || true
apt_install etcd-server
apt_install etcd-client
ln -sf "$(command -v etcd)" "$bin/etcd"
ln -sf "$(command -v etcdctl)" "$bin/etcdctl"

# kubectl 1.20 from kubernetes-client, unpacked (the package conflicts with the image's kubectl).
if ! "$bin/kubectl" version --client 2>/dev/null | grep -q "$KUBE_VERSION"; then
  tmp=$(mktemp -d)
  if [ "$apt_updated" -eq 0 ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  (cd "$tmp" && apt-get download -qq kubernetes-client >&2)
  dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$tmp/x"
  install -m 0755 "$tmp/x/usr/bin/kubectl" "$bin/kubectl"
  rm -rf "$tmp"
fi

built() { [ -x "$bin/$1" ] && "$bin/$1" --version 2>/dev/null | grep -q "$KUBE_VERSION"; }
if built kube-apiserver && built kube-controller-manager; then
  echo "$bin"; exit 0
fi

start=$(date +%s)
apt_install dpkg-dev golang-1.19-go golang-github-modern-go-reflect2-dev
export PATH=/usr/lib/go-1.19/bin:$PATH

src_root="$cache/src"
tree="$src_root/kubernetes"
if [ ! -f "$tree/.kstack-prepared" ]; then
  rm -rf "$src_root"; mkdir -p "$src_root"
  srcs=/etc/apt/sources.list.d/kstack-deb-src.sources
  if [ ! -f "$srcs" ]; then
    log "adding deb-src stanza $srcs"
    $SUDO tee "$srcs" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    $SUDO apt-get update -qq
  fi
  (cd "$src_root" && apt-get source --download-only -qq kubernetes >&2)
  dsc=$(ls "$src_root"/kubernetes_*.dsc | head -n1)
  (cd "$src_root" && dpkg-source --no-check -x "$dsc" kubernetes >&2)

  # Pitfall 3: reflect2 1.0.1 segfaults under Go >= 1.18; use Debian's 1.0.2 sources.
  r2="$tree/vendor/github.com/modern-go/reflect2"
  find "$r2" -maxdepth 1 \( -name '*.go' -o -name '*.s' \) -delete
  cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go "$r2/"
  cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.s "$r2/" 2>/dev/null || true
  rm -f "$r2"/*_test.go
  sed -i 's#^\(\# github.com/modern-go/reflect2\) v1.0.1#\1 v1.0.2#' "$tree/vendor/modules.txt"
  touch "$tree/.kstack-prepared"
fi

# Pitfall 1: GOPATH mode, as Kubernetes 1.20 itself built.
export GOPATH="$cache/gopath" GO111MODULE=off CGO_ENABLED=0 GOFLAGS=
export GOCACHE="$cache/gocache"
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$tree" "$GOPATH/src/k8s.io/kubernetes"
cd "$GOPATH/src/k8s.io/kubernetes"

# Pitfall 2: generate pkg/generated/openapi/zz_generated.openapi.go.
if [ ! -f pkg/generated/openapi/zz_generated.openapi.go ]; then
  log "generating openapi definitions"
  go build -o "$cache/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
  dirs=$(grep -RlI --include='*.go' '+k8s:openapi-gen=' pkg cmd plugin vendor 2>/dev/null \
    | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' -e '_test.go$' \
    | xargs -n1 dirname | sort -u | sed 's#^#k8s.io/kubernetes/#' | paste -sd, -)
  "$cache/openapi-gen" --logtostderr \
    --go-header-file vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
    --input-dirs "$dirs" \
    --output-base "$GOPATH/src" \
    --output-package k8s.io/kubernetes/pkg/generated/openapi \
    --output-file-base zz_generated.openapi \
    --report-filename "$cache/openapi-report.txt" >&2 2>"$cache/openapi-gen.log" || {
      log "openapi-gen failed; see $cache/openapi-gen.log"; exit 1; }
fi

ldflags="-s -w"
for p in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=20"
  ldflags+=" -X $p.gitTreeState=clean -X $p.gitCommit=debian-source -X $p.buildDate=1970-01-01T00:00:00Z"
done
for cmd in kube-apiserver kube-controller-manager; do
  if ! built "$cmd"; then
    log "building $cmd (slow on a cold Go cache)"
    go build -trimpath -ldflags "$ldflags" -o "$bin/$cmd.tmp" "./cmd/$cmd"
    mv "$bin/$cmd.tmp" "$bin/$cmd"
  fi
done
log "built in $(( $(date +%s) - start )) s"
echo "$bin"
