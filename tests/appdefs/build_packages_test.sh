#!/bin/sh
# build_packages_test.sh APPDEFS_DIR [KSTACK]: appdefs/build-packages.sh builds reproducible
# packages, ConfigMaps that carry them and a kustomization of the whole catalog; with kubectl,
# `kubectl kustomize` renders it into kstack-system, and (with KSTACK) the rendered catalog
# validates as the `system` catalog for the example Stacks applied in another namespace.
set -eu
appdefs=$1
kstack=${2:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kstack-appdefs-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() {
  printf 'FAIL %s\n' "$*" >&2
  failures=$((failures + 1))
}

bash "$appdefs/build-packages.sh" "$tmp/a" >"$tmp/a.out"
bash "$appdefs/build-packages.sh" "$tmp/b" >/dev/null
diff -r "$tmp/a" "$tmp/b" >&2 || fail "two builds differ"

apps=0
for src in "$appdefs"/*/apptype.yaml; do
  app=$(basename "$(dirname "$src")")
  apps=$((apps + 1))
  out=$tmp/a/$app
  for f in setup.tgz setup-configmap.yaml apptype.yaml stack.yaml; do
    [ -f "$out/$f" ] || fail "$app: $f not built"
  done
  grep -q "^kind: ConfigMap\$" "$out/setup-configmap.yaml" || fail "$app: not a ConfigMap"
  grep -q "^  name: $app-setup\$" "$out/setup-configmap.yaml" || fail "$app: ConfigMap not named $app-setup"
  # The ConfigMap's archive is the package: startscript, executable, same bytes as the source.
  mkdir -p "$tmp/x/$app"
  sed -n 's/^  setup.tgz: //p' "$out/setup-configmap.yaml" | base64 -d >"$tmp/x/$app.tgz"
  cmp -s "$tmp/x/$app.tgz" "$out/setup.tgz" || fail "$app: ConfigMap payload differs from setup.tgz"
  tar -xzf "$tmp/x/$app.tgz" -C "$tmp/x/$app"
  [ -x "$tmp/x/$app/startscript" ] || fail "$app: no executable startscript in the archive"
  cmp -s "$tmp/x/$app/startscript" "$(dirname "$src")/setup/startscript" || fail "$app: archived startscript differs"
  # No owner names, no timestamps: reproducible across machines.
  tar -tvzf "$out/setup.tgz" | grep -qv ' 0/0 .*1970-01-01' && fail "$app: archive has owners or mtimes"
  gzip -l "$out/setup.tgz" >/dev/null || fail "$app: not gzip"
  grep -qx "  - $app/apptype.yaml" "$tmp/a/kustomization.yaml" || fail "$app: AppType not in kustomization"
  grep -qx "  - $app/setup-configmap.yaml" "$tmp/a/kustomization.yaml" || fail "$app: ConfigMap not in kustomization"
done
[ "$apps" -ge 6 ] || fail "only $apps apps"
grep -qx 'namespace: kstack-system' "$tmp/a/kustomization.yaml" || fail "kustomization namespace"

if command -v kubectl >/dev/null 2>&1; then
  kubectl kustomize "$tmp/a" >"$tmp/catalog.yaml" || fail "kubectl kustomize failed"
  n=$(grep -c '^  namespace: kstack-system$' "$tmp/catalog.yaml" || true)
  [ "$n" -eq $((apps * 2)) ] || fail "kustomize: $n objects in kstack-system, expected $((apps * 2))"
  if [ -n "$kstack" ]; then
    # The catalog in kstack-system, the example Stacks in namespace demo: found as `system`.
    mkdir -p "$tmp/v"
    cp "$tmp/catalog.yaml" "$tmp/v/"
    for s in "$appdefs"/*/stack.yaml; do cp "$s" "$tmp/v/$(basename "$(dirname "$s")")-stack.yaml"; done
    "$kstack" validate --operator-namespace kstack-system -n demo -f "$tmp/v" >"$tmp/v.out" ||
      { cat "$tmp/v.out" >&2; fail "kstack validate of the kustomized catalog + Stacks in demo"; }
  fi
else
  echo "kubectl not found: kustomize rendering not checked"
fi
printf '%s apps built, %s failure(s)\n' "$apps" "$failures"
[ "$failures" -eq 0 ]
