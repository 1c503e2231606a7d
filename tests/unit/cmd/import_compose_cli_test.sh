#!/bin/sh
# import_compose_cli_test.sh CASE KSTACK SOURCE_DIR: one behaviour of `kstack import compose`
# (docs/compose.md) and of `kstack import` around it, run on the binary. Exits non-zero with
# the reason when the behaviour is not there.
set -u
case_name=$1
kstack=$2
src=$3
data="$src/tests/unit/cmd/testdata/compose"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL $case_name: $*" >&2
  [ -f "$tmp/out" ] && { echo "--- stdout" >&2; head -c 4000 "$tmp/out" >&2; }
  [ -f "$tmp/err" ] && { echo "--- stderr" >&2; head -c 4000 "$tmp/err" >&2; }
  exit 1
}

case $case_name in
compose_output_validates_and_renders)
  "$kstack" import compose "$data/wordpress-mysql.yml" --name blog -n team-a >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 0 ] || fail "exit $rc, want 0"
  grep -q '^kind: AppType$' "$tmp/out" || fail "no AppType"
  grep -q '^kind: Stack$' "$tmp/out" || fail "no Stack"
  grep -q 'wordpress-mysql.yml: warning: services.wordpress.ports\[0\]: host port 80 is not published' "$tmp/err" ||
    fail "the published port is not a warning naming its path"
  grep -q 'AppType and Stack "blog" (2 roles); 2 warnings' "$tmp/err" || fail "no summary"
  "$kstack" validate -f "$tmp/out" >"$tmp/validate" 2>&1 || fail "validate refused: $(cat "$tmp/validate")"
  [ "$(grep -c ': OK$' "$tmp/validate")" -eq 2 ] || fail "validate: $(cat "$tmp/validate")"
  "$kstack" render -f "$tmp/out" >"$tmp/render" 2>&1 || fail "render failed: $(cat "$tmp/render")"
  [ "$(grep -c '^kind: StatefulSet$' "$tmp/render")" -eq 2 ] || fail "render: not 2 StatefulSets"
  ;;
compose_json_is_a_list)
  "$kstack" import compose "$data/redis.yml" -o json >"$tmp/out" 2>"$tmp/err" || fail "exit $?"
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "List", d["kind"]
assert [i["kind"] for i in d["items"]] == ["AppType", "Stack"], d
assert d["items"][0]["metadata"]["name"] == "compose", d["items"][0]["metadata"]
' "$tmp/out" || fail "not a List of AppType and Stack named after the directory"
  ;;
compose_reads_stdin_and_project_directories)
  mkdir -p "$tmp/My_Shop"
  cp "$data/redis.yml" "$tmp/My_Shop/docker-compose.yml"
  (cd "$tmp/My_Shop" && "$kstack" import compose - <docker-compose.yml) >"$tmp/out" 2>"$tmp/err" ||
    fail "stdin: exit $?"
  grep -q '^  name: my-shop$' "$tmp/out" || fail "stdin: not named after the current directory"
  grep -q '^<stdin>: warning: ' "$tmp/err" || fail "stdin: warnings do not name <stdin>"
  "$kstack" import compose "$tmp/My_Shop" >"$tmp/out" 2>"$tmp/err" || fail "directory: exit $?"
  grep -q "My_Shop/docker-compose.yml: warning: services.redis.ports\[0\]" "$tmp/err" ||
    fail "directory: the file found is not named"
  "$kstack" import compose "$tmp" >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 1 ] || fail "a directory without a Compose file is not refused"
  grep -q 'a directory without compose.yaml' "$tmp/err" || fail "no reason given"
  ;;
compose_strict_prints_nothing_and_fails_on_a_warning)
  "$kstack" import compose "$data/redis.yml" --strict >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "exit $rc, want 1"
  [ -s "$tmp/out" ] && fail "printed objects"
  grep -q 'redis.yml: error: services.redis.ports\[0\]: host port 6379' "$tmp/err" || fail "no error line"
  grep -q -- '--strict: nothing printed' "$tmp/err" || fail "no --strict note"
  "$kstack" import compose "$data/redis-replica.yml" --strict >"$tmp/out" 2>"$tmp/err" ||
    fail "a file without warnings fails under --strict"
  grep -q '^kind: Stack$' "$tmp/out" || fail "nothing printed for a clean file"
  ;;
compose_refuses_a_service_without_image)
  printf 'services:\n  web:\n    build: .\n' >"$tmp/c.yml"
  "$kstack" import compose "$tmp/c.yml" >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 1 ] || fail "not refused"
  [ -s "$tmp/out" ] && fail "printed objects"
  grep -q 'error: services.web: no image (services.web.build only)' "$tmp/err" || fail "no reason"
  "$kstack" import compose "$tmp/missing.yml" >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 1 ] || fail "a missing file is not an error"
  grep -q 'missing.yml: error: no such file or directory' "$tmp/err" || fail "missing file not named"
  ;;
kubedirector_import_still_works_and_help_lists_compose)
  "$kstack" import -f "$src/tests/unit/catalog/testdata/kubedirector" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "import -f exited $rc"
  grep -q '^kind: AppType$' "$tmp/out" || fail "import -f printed no AppType"
  "$kstack" import >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 2 ] || fail "bare import is not a usage error"
  grep -q 'kstack import compose FILE' "$tmp/err" || fail "bare import does not mention compose"
  "$kstack" import --help >"$tmp/out" 2>&1 || fail "import --help failed"
  grep -q '^  compose ' "$tmp/out" || fail "import --help does not list compose"
  "$kstack" import compose --help >"$tmp/out" 2>&1 || fail "import compose --help failed"
  grep -q -- '--strict' "$tmp/out" || fail "import compose --help has no --strict"
  "$kstack" import compose >"$tmp/out" 2>"$tmp/err"
  [ $? -ne 0 ] || fail "import compose without a file succeeded"
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac
