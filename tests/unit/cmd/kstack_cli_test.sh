#!/bin/sh
# kstack_cli_test.sh CASE KSTACK: one behaviour of the kstack binary's offline commands and
# top-level usage (docs/spec.md §8), checked on manifests written here. Exits non-zero with the
# reason when the behaviour is not there.
set -u
case_name=$1
kstack=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL $case_name: $*" >&2
  [ -f "$tmp/out" ] && { echo "--- stdout" >&2; head -c 4000 "$tmp/out" >&2; }
  [ -f "$tmp/err" ] && { echo "--- stderr" >&2; head -c 4000 "$tmp/err" >&2; }
  exit 1
}

# An AppType that names no namespace, and a Stack of it in namespace team-a.
cat >"$tmp/app.yaml" <<'YAML'
apiVersion: kstack.io/v1beta1
kind: AppType
metadata: {name: kv}
spec:
  label: {name: KV}
  distroID: example/kv
  version: "1"
  configSchemaVersion: 1
  defaultImageRepoTag: example/kv:1
  services: [{id: client, endpoint: {port: 2379}}]
  roles:
  - {id: server, cardinality: "3+", minResources: {memory: 1Gi}}
  - {id: proxy, cardinality: "0+"}
  config:
    selectedRoles: [server]
    roleServices: [{roleID: server, serviceIDs: [client]}]
YAML
stack() {  # stack NAME ROLES-FLOW [EXTRA-SPEC-LINE]
  printf 'apiVersion: kstack.io/v1beta1\nkind: Stack\nmetadata: {name: %s, namespace: team-a}\nspec:\n  app: kv\n  roles: %s\n%s\n' \
    "$1" "$2" "${3:-}"
}
good_roles='[{id: server, members: 3, resources: {requests: {memory: 2Gi}}}]'

case $case_name in
render_refuses_what_validate_refuses_with_the_same_messages_once)
  # Wrong and negative member counts, a duplicate role id, a resource below the minimum, an
  # unparseable storage size: validate's lines are render's, each printed once, exit 1.
  stack bad '[{id: server, members: 2, resources: {requests: {memory: 1Mi}}, storage: {size: lots}}, {id: proxy, members: -1}, {id: proxy}]' >"$tmp/stack.yaml"
  "$kstack" validate -f "$tmp/app.yaml" -f "$tmp/stack.yaml" >"$tmp/validate" 2>&1
  [ $? -eq 1 ] || fail "validate did not refuse"
  "$kstack" render -f "$tmp/app.yaml" -f "$tmp/stack.yaml" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "render exited $rc, want 1"
  [ -s "$tmp/out" ] && fail "render printed objects"
  grep ' Stack team-a/bad: ' "$tmp/validate" >"$tmp/want"
  [ "$(wc -l <"$tmp/want")" -ge 5 ] || fail "validate found fewer than 5 problems: $(cat "$tmp/want")"
  grep ' Stack team-a/bad: ' "$tmp/err" >"$tmp/got"
  cmp -s "$tmp/want" "$tmp/got" || fail "render's messages differ from validate's"
  ;;
render_refuses_a_million_members_at_once)
  stack huge '[{id: server, members: 1000000}]' >"$tmp/stack.yaml"
  # The old render built every member before anything checked the count (2.4 GB in 20 s);
  # refusing needs no work per member, so it ends well within the bound (124 = timed out).
  timeout 10 "$kstack" render -f "$tmp/app.yaml" -f "$tmp/stack.yaml" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "exited $rc, want 1"
  grep -q 'total members 1000000 exceed the limit of 1000' "$tmp/err" || fail "no limit message"
  ;;
render_refuses_invalid_names)
  stack 'Bad_Name' "$good_roles" >"$tmp/stack.yaml"
  "$kstack" render -f "$tmp/app.yaml" -f "$tmp/stack.yaml" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "exited $rc, want 1"
  grep -q 'metadata.name' "$tmp/err" || fail "no metadata.name problem"
  ;;
render_reads_directories_and_stdin)
  mkdir "$tmp/dir"
  cp "$tmp/app.yaml" "$tmp/dir/"
  stack db "$good_roles" >"$tmp/dir/stack.yaml"
  "$kstack" render -f "$tmp/dir" >"$tmp/out" 2>"$tmp/err" || fail "render -f DIR exited $?"
  grep -q '^kind: StatefulSet$' "$tmp/out" || fail "no StatefulSet from a directory"
  cat "$tmp/dir/stack.yaml" | "$kstack" render -f "$tmp/app.yaml" -f - >"$tmp/out" 2>"$tmp/err" ||
    fail "render -f - exited $?"
  grep -q '^  name: db-server$' "$tmp/out" || fail "no StatefulSet db-server from stdin"
  ;;
render_refuses_more_than_one_stack_or_apptype)
  { stack one "$good_roles"; echo '---'; stack two "$good_roles"; } >"$tmp/stacks.yaml"
  "$kstack" render -f "$tmp/app.yaml" -f "$tmp/stacks.yaml" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "two Stacks: exited $rc, want 1"
  grep -q '2 Stacks in the input' "$tmp/err" || fail "two Stacks: no message"
  [ -s "$tmp/out" ] && fail "two Stacks: printed objects"
  stack one "$good_roles" >"$tmp/stack.yaml"
  sed 's/^metadata: {name: kv}$/metadata: {name: kv, namespace: team-a}/' "$tmp/app.yaml" >"$tmp/app2.yaml"
  "$kstack" render -f "$tmp/app.yaml" -f "$tmp/app2.yaml" -f "$tmp/stack.yaml" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "two AppTypes: exited $rc, want 1"
  grep -q '2 AppTypes named "kv"' "$tmp/err" || fail "two AppTypes: no message"
  ;;
render_uid_naming_gives_short_names_for_a_long_stack_name)
  long=$(printf 'a%.0s' $(seq 63))
  stack "$long" "$good_roles" '  namingScheme: UID' >"$tmp/stack.yaml"
  "$kstack" validate -f "$tmp/app.yaml" -f "$tmp/stack.yaml" >"$tmp/out" 2>"$tmp/err" ||
    fail "validate refused a 63-character name under UID"
  "$kstack" render --uid 0d6f1c2e-7c55-4a57-9a3c-1d2e3f405162 -f "$tmp/app.yaml" -f "$tmp/stack.yaml" >"$tmp/out" 2>"$tmp/err" ||
    fail "render exited $?"
  grep -q "^  name: $long" "$tmp/out" && fail "an object is named after the Stack"
  grep -q '^  name: ksss-[0-9a-f]\{10\}$' "$tmp/out" || fail "no ksss-<hash> StatefulSet"
  ;;
validate_finds_an_apptype_without_namespace_from_any_namespace)
  stack db "$good_roles" >"$tmp/stack.yaml"
  "$kstack" validate -f "$tmp/app.yaml" -f "$tmp/stack.yaml" >"$tmp/out" 2>"$tmp/err" ||
    fail "exited $?"
  grep -q 'Stack team-a/db: OK' "$tmp/out" || fail "Stack not OK"
  "$kstack" validate --help >"$tmp/out" 2>&1
  grep -q 'names no namespace is' "$tmp/out" || fail "--help does not say how AppTypes resolve"
  ;;
bare_kstack_prints_usage_and_exits_0)
  "$kstack" >"$tmp/out" 2>"$tmp/err" || fail "exited $?"
  grep -q 'Subcommands:' "$tmp/out" || fail "no usage"
  ;;
version_flag_prints_the_version)
  "$kstack" --version >"$tmp/out" 2>"$tmp/err" || fail "exited $?"
  grep -q '^kstack .*commit' "$tmp/out" || fail "no version"
  ;;
operator_help_shows_boolean_defaults_as_they_are)
  "$kstack" operator --help >"$tmp/out" 2>&1 || fail "exited $?"
  grep -q '{false}' "$tmp/out" && fail "a flag is shown with {false}"
  grep -- '--webhook' "$tmp/out" | grep -q 'default: true' || fail "--webhook does not show default true"
  grep -- '--leader-elect' "$tmp/out" | grep -q 'default: true' || fail "--leader-elect does not show default true"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "ok   $case_name"
