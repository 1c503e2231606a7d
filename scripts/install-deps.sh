#!/usr/bin/env bash
# Installs the Debian packages kstack builds and tests with (docs/dependencies.md).
# Idempotent and quick when everything is present: dpkg is asked first, apt only when needed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache openssl
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libboost-system1.81-dev
  libssl-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libexpected-dev libarchive-dev zlib1g-dev prometheus-cpp-dev
  clang clang-tidy clang-format lld libclang-rt-14-dev
  curl ca-certificates bubblewrap python3 python3-yaml dnsmasq-base
  # A real terminal for the `kstack apply --wait` redraw test (tests/e2e/cli).
  tmux
  # The daemons of the shipped apps (appdefs/<app>/image/Dockerfile installs the same packages;
  # the simulated nodes of the e2e tests run them from the host: docs/nodesim.md "Images").
  etcd-server etcd-client redis-server redis-tools zookeeper default-jre-headless
  postgresql-15 postgresql-client-15
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# An earlier interrupted install leaves dpkg half-configured; repair before installing.
$SUDO dpkg --configure -a >/dev/null 2>&1 || true
$SUDO apt-get update -qq
# The app packages' maintainer scripts would start their daemons (redis, etcd, ZooKeeper,
# PostgreSQL) on this machine: a policy-rc.d that refuses every start stops that, as in an image
# build. An existing policy is left as it is; ours is removed afterwards.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 0755 "$policy"
  own_policy=1
fi
status=0
$SUDO apt-get install -y -qq --no-install-recommends --no-upgrade "${missing[@]}" || status=$?
if [ "$own_policy" -eq 1 ]; then $SUDO rm -f "$policy"; fi
exit "$status"
