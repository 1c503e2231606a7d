#!/usr/bin/env bash
# Copies into DIR the shared libraries BINARY needs that the runtime base image lacks: every
# library ldd resolves that no package of base-image-packages.txt (next to this script) owns,
# dereferenced and named by its soname; prints their sonames. Needs dpkg (a Debian build stage).
# Used by deploy/Dockerfile's build stage and by tests/unit/deploy/image_runtime_test.py.
#   usage: runtime-libs.sh BINARY DIR
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BINARY DIR" >&2
  exit 2
fi
binary=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
declare -A base=()
while read -r package; do
  [[ -z "$package" || "$package" == \#* ]] && continue
  base[$package]=1
done <"$here/base-image-packages.txt"

# The package owning a library: dpkg records the path as the package shipped it, which after
# Debian's /usr merge may be the /lib or the /usr/lib spelling of the resolved path.
owner() {
  local path real candidate
  path=$1
  real=$(readlink -f "$path")
  for candidate in "$path" "$real" "${path#/usr}" "${real#/usr}" "/usr${path#/usr}" "/usr${real#/usr}"; do
    if out=$(dpkg-query -S "$candidate" 2>/dev/null); then
      echo "${out%%:*}"
      return 0
    fi
  done
  return 1
}

# ldd lines: "libfoo.so.1 => /path/libfoo.so.1 (0x...)", or "libfoo.so.1 => not found".
missing=$(ldd "$binary" | awk '/not found/ {print $1}')
if [[ -n "$missing" ]]; then
  echo "runtime-libs: $binary needs libraries this system does not have: $missing" >&2
  exit 1
fi
mkdir -p "$dir"
while read -r soname path; do
  package=$(owner "$path") || package=""
  if [[ -z "$package" || -z "${base[$package]:-}" ]]; then
    cp -L "$path" "$dir/$soname"
    echo "$soname"
  fi
done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
