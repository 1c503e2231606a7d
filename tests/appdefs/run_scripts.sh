#!/bin/sh
# run_scripts.sh MEMBER_FILES APPDEFS_DIR — the appdefs setup packages without a cluster.
#
# For every app, MEMBER_FILES (kstack_appdefs_member_files) writes the /etc/kstack/env and
# configmeta.json kstack would write into each member of the example Stack, one fake root per
# member. Each member's startscript then runs against its root (KSTACK_ROOT) the way kstack runs
# it: --configure on every member, then a scale-up (new members configured, the env of the
# others rewritten, --addnodes to the roles whose eventList has it), then a scale-down
# (--delnodes). After each step the generated config files are grepped for the expected peers,
# and every step is run twice to show the handlers are idempotent (same files; recorded
# etcdctl/nodetool commands not repeated). Scripts run under /bin/sh (dash here: no bash-isms).
set -eu

gen=$1
appdefs=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kstack-appdefs.XXXXXX")
[ -n "${KSTACK_APPDEFS_KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT INT TERM
ns=demo

# The scripts run with only what the simulated member containers have: sh, coreutils, sed,
# grep, awk. The host's own etcdctl/nodetool/... must not leak in (a stub etcdctl is added
# for one test below).
mkdir -p "$tmp/bin"
for c in sh cat cp cut date dirname basename head tail mkdir mv rm sort tr wc md5sum base64 \
  sed grep awk env ls ln chmod touch uniq paste cksum cmp diff find id sleep true false; do
  p=$(command -v "$c" 2>/dev/null) || continue
  case $p in /*) ln -s "$p" "$tmp/bin/$c" ;; esac
done
BASE_PATH=$tmp/bin
SCRIPT_PATH=$BASE_PATH
domain_of() { printf '%s.%s.%s.svc.cluster.local' "$2" "$1" "$ns"; } # stack pod -> fqdn
failures=0
checks=0

fail() {
  printf 'FAIL %s\n' "$*" >&2
  failures=$((failures + 1))
}
ok() { checks=$((checks + 1)); }

# expect_grep FILE PATTERN (fixed string) / expect_no_grep FILE PATTERN
expect_grep() {
  if [ -f "$1" ] && grep -Fq -- "$2" "$1"; then ok; else
    fail "$1 should contain: $2"
    if [ -f "$1" ]; then sed 's/^/    | /' "$1" >&2; fi
  fi
}
expect_no_grep() {
  if [ -f "$1" ] && ! grep -Fq -- "$2" "$1"; then ok; else fail "$1 should not contain: $2"; fi
}
expect_lines() { # FILE PATTERN N: exactly N lines contain PATTERN
  _n=0
  [ -f "$1" ] && _n=$(grep -Fc -- "$2" "$1" || true)
  if [ "$_n" -eq "$3" ]; then ok; else fail "$1: $_n lines with '$2', expected $3"; fi
}

# snapshot ROOT [LOGS]: the files a package wrote under ROOT (kstack's own env and
# configmeta.json aside; packages may keep their config in the /etc/kstack emptyDir too),
# with their digests. Logs are
# excluded (they grow) unless LOGS is "actions": then only the invocation log kstack-setup.log
# is, so a command a handler records as run or intended (etcdctl, nodetool, ...) counts too.
snapshot() {
  _skip='*.log'
  [ "${2:-}" = actions ] && _skip=kstack-setup.log
  (cd "$1" && find . -type f ! -name "$_skip" ! -path './etc/kstack/env' \
    ! -path './etc/kstack/configmeta.json' | LC_ALL=C sort |
    while IFS= read -r f; do printf '%s %s\n' "$(cksum <"$f")" "$f"; done)
}

# run APP ROOT ARGS...: the startscript against ROOT; exit code in $rc, output in ROOT.out. The
# package is appdefs/APP/setup, or the directory $PKG when set (a package version under test).
PKG=
run() {
  _app=$1
  _root=$2
  shift 2
  rc=0
  KSTACK_ROOT=$_root PATH=$SCRIPT_PATH /bin/sh "${PKG:-$appdefs/$_app/setup}/startscript" "$@" \
    >"$_root.out" 2>&1 || rc=$?
}
# step APP ROOT ARGS...: run twice; both must exit 0 and leave the same files behind.
# kstack delivers --addnodes/--delnodes at least once (docs/setup-packages.md: a restart
# between the run and the status write sends it again), so for those the second run must not
# record or run any command again either; a repeated --configure may record its (idempotent)
# commands again.
step() {
  _logs=
  case " $* " in *" --addnodes "* | *" --delnodes "*) _logs=actions ;; esac
  run "$@"
  if [ "$rc" -ne 0 ]; then
    fail "$1 $(basename "$2") $*: exit $rc"
    sed 's/^/    | /' "$2.out" >&2
    return 0
  fi
  snapshot "$2" "$_logs" >"$2.snap1"
  run "$@"
  snapshot "$2" "$_logs" >"$2.snap2"
  if [ "$rc" -ne 0 ]; then
    fail "$1 $(basename "$2") $* (second run): exit $rc"
  elif ! cmp -s "$2.snap1" "$2.snap2"; then
    fail "$1 $(basename "$2") $*: not idempotent"
    diff "$2.snap1" "$2.snap2" >&2 || true
  else
    ok
  fi
}

# members APP OUTDIR [--members ROLE=N]: fake roots for the app's example Stack in OUTDIR;
# prints `role pod fqdn nodeid` lines.
members() {
  _app=$1
  _out=$2
  shift 2
  "$gen" --app "$appdefs/$_app/apptype.yaml" --stack "$appdefs/$_app/stack.yaml" \
    --namespace "$ns" --out "$_out" "$@"
}

# configure_all APP DIR: --configure on every member listed in DIR.members
configure_all() {
  while read -r _role _pod _fqdn _id; do
    step "$1" "$2/$_pod" --configure
    expect_lines "$2/$_pod/$3/kstack-setup.log" "--configure" 2
  done <"$2.members"
}

# scale APP DIR DATADIR ROLE N "NOTIFIED ROLES": the app's Stack with ROLE at N members, as
# kstack does it: the env of the members that stay is rewritten, new members are configured,
# then `--addnodes|--delnodes --role ROLE --fqdns <the difference>` goes to every remaining member
# of the notified roles. Sets $changed to the FQDNs that came or went.
scale() {
  _app=$1 _dir=$2 _datadir=$3 _role=$4 _n=$5 _notified=$6
  # node ids as kstack keeps them: members that stay keep theirs, new ones get fresh ones
  members "$_app" "$_dir.next" --members "$_role=$_n" --previous "$_dir.members" \
    --last-node-id "$(cat "$_dir.last")" >"$_dir.next.members"
  # new members: in .next only; leaving: in the current list only
  _added=$(awk 'NR == FNR { have[$2] = 1; next } !($2 in have) { print $3 }' "$_dir.members" "$_dir.next.members" | paste -sd, -)
  _gone=$(awk 'NR == FNR { have[$2] = 1; next } !($2 in have) { print $3 }' "$_dir.next.members" "$_dir.members" | paste -sd, -)
  : >"$_dir.new"
  while read -r _r _pod _fqdn _id; do
    mkdir -p "$_dir/$_pod/etc/kstack"
    cp "$_dir.next/$_pod/etc/kstack/env" "$_dir.next/$_pod/etc/kstack/configmeta.json" "$_dir/$_pod/etc/kstack/"
  done <"$_dir.next.members"
  if [ -n "$_added" ]; then
    action=--addnodes
    changed=$_added
    awk 'NR == FNR { have[$2] = 1; next } !($2 in have)' "$_dir.members" "$_dir.next.members" >"$_dir.new"
    while read -r _r _pod _fqdn _id; do
      step "$_app" "$_dir/$_pod" --configure
    done <"$_dir.new"
  else
    action=--delnodes
    changed=$_gone
  fi
  while read -r _r _pod _fqdn _id; do
    # new members are configured, not notified (kstack announces them to the others)
    awk -v p="$_pod" '$2 == p { found = 1 } END { exit !found }' "$_dir.new" && continue
    case " $_notified " in *" $_r "*) ;; *) continue ;; esac
    step "$_app" "$_dir/$_pod" "$action" --role "$_role" --fqdns "$changed"
    expect_grep "$_dir/$_pod/$_datadir/kstack-setup.log" "$action --role $_role --fqdns $changed"
  done <"$_dir.next.members"
  cp "$_dir.next.members" "$_dir.members"
  awk -v last="$(cat "$_dir.last")" '$4 > last { last = $4 } END { print last }' "$_dir.members" >"$_dir.last.tmp"
  mv "$_dir.last.tmp" "$_dir.last"
}

start_app() { # start_app APP: fresh fake roots from the example Stack; sets $dir
  dir=$tmp/$1
  members "$1" "$dir" >"$dir.members"
  awk '$4 > last { last = $4 } END { print last + 0 }' "$dir.members" >"$dir.last"
  [ -s "$dir.members" ] || fail "$1: no members generated"
  printf '== %s: %s member(s)\n' "$1" "$(wc -l <"$dir.members" | tr -d ' ')"
}
pods_of() { awk -v r="$2" '$1 == r { print $2 }' "$1.members"; }

# ---- the packages share one common part, byte for byte ----
awk '/^# ---- common part/,/^# ---- end of common part ----/' "$appdefs/etcd/setup/startscript" >"$tmp/common"
[ -s "$tmp/common" ] || fail "etcd startscript has no common part"
for s in "$appdefs"/*/setup/startscript; do
  awk '/^# ---- common part/,/^# ---- end of common part ----/' "$s" | cmp -s - "$tmp/common" ||
    fail "$s: common part differs from etcd's"
  [ -x "$s" ] || fail "$s is not executable"
  head -n 1 "$s" | grep -qx '#!/bin/sh' || fail "$s: first line must be #!/bin/sh"
  if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -s sh "$s" >&2 || fail "$s: shellcheck -s sh"
  fi
  ok
done

# ---- etcd: 3 members -> 5 -> 3 ----
start_app etcd
S=etcd
M0=$(domain_of etcd etcd-member-0)
M1=$(domain_of etcd etcd-member-1)
M2=$(domain_of etcd etcd-member-2)
M3=$(domain_of etcd etcd-member-3)
M4=$(domain_of etcd etcd-member-4)
# The kubelet's /etc/hosts of each pod: the pod IP etcd binds.
for n in 0 1 2 3 4; do
  mkdir -p "$dir/etcd-member-$n/etc"
  printf '127.0.0.1\tlocalhost\n10.0.0.%s\t%s\tetcd-member-%s\n' "$((n + 10))" "$(domain_of etcd "etcd-member-$n")" "$n" >"$dir/etcd-member-$n/etc/hosts"
done
etcd_conf() { printf '%s/opt/kstack/etcd/etcd.conf.yml' "$dir/$1"; }
configure_all etcd "$dir" var/lib/etcd
n=10
for p in etcd-member-0 etcd-member-1 etcd-member-2; do
  c=$(etcd_conf "$p")
  expect_grep "$c" "name: '$p'"
  expect_grep "$c" "initial-cluster: 'etcd-member-0=http://$M0:2380,etcd-member-1=http://$M1:2380,etcd-member-2=http://$M2:2380'"
  expect_grep "$c" "listen-peer-urls: 'http://10.0.0.$n:2380'"
  expect_grep "$c" "listen-client-urls: 'http://10.0.0.$n:2379'"
  expect_grep "$c" "initial-advertise-peer-urls: 'http://$p.$S.$ns.svc.cluster.local:2380'"
  expect_grep "$c" "advertise-client-urls: 'http://$p.$S.$ns.svc.cluster.local:2379'"
  expect_grep "$c" "data-dir: '/var/lib/etcd/data'"
  expect_grep "$c" "initial-cluster-state: 'new'"
  expect_grep "$c" "initial-cluster-token: '$ns-etcd'"
  n=$((n + 1))
done
# A member with data restarts into its cluster whatever the others do.
mkdir -p "$dir/etcd-member-2/var/lib/etcd/data/member/wal"
step etcd "$dir/etcd-member-2" --configure
expect_grep "$(etcd_conf etcd-member-2)" "initial-cluster-state: 'existing'"
rm -r "$dir/etcd-member-2/var/lib/etcd/data"
scale etcd "$dir" var/lib/etcd member 5 member
[ "$changed" = "$M3,$M4" ] || fail "etcd scale-up: --fqdns $changed"
for p in etcd-member-0 etcd-member-1 etcd-member-2 etcd-member-3 etcd-member-4; do
  expect_lines "$dir/$p/var/lib/etcd/kstack-members/member" "etcd-member" 5
done
expect_grep "$(etcd_conf etcd-member-4)" "etcd-member-4=http://$M4:2380'"
expect_grep "$(etcd_conf etcd-member-4)" "listen-client-urls: 'http://10.0.0.14:2379'"
# Without etcdctl (these fake roots) each notified member records the change, once although it
# ran twice.
for p in etcd-member-0 etcd-member-1 etcd-member-2; do
  expect_lines "$dir/$p/var/lib/etcd/kstack-etcdctl.log" "would run: etcdctl member add etcd-member-3 --peer-urls=http://$M3:2380" 1
  expect_lines "$dir/$p/var/lib/etcd/kstack-etcdctl.log" "member add etcd-member-4" 1
done
scale etcd "$dir" var/lib/etcd member 3 member
[ "$changed" = "$M3,$M4" ] || fail "etcd scale-down: --fqdns $changed"
for p in etcd-member-0 etcd-member-1 etcd-member-2; do
  expect_lines "$dir/$p/var/lib/etcd/kstack-members/member" "etcd-member" 3
  expect_lines "$dir/$p/var/lib/etcd/kstack-etcdctl.log" "member remove <id of etcd-member-3>" 1
  expect_lines "$dir/$p/var/lib/etcd/kstack-etcdctl.log" "member remove <id of etcd-member-4>" 1
done
# --addnodes works from its arguments even when the env file was not rewritten yet.
r=$dir/etcd-member-1
step etcd "$r" --addnodes --role member --fqdns "$M3"
expect_grep "$r/var/lib/etcd/kstack-members/member" "$M3"
step etcd "$r" --delnodes --role member --fqdns "$M3"
expect_no_grep "$r/var/lib/etcd/kstack-members/member" "$M3"
# Hostile or malformed input: refused, nothing changed.
snapshot "$r" >"$tmp/before"
for bad in "x;rm -rf /" "a b" "\$(id)" "'quoted'" "-flag" "new
line"; do
  run etcd "$r" --addnodes --role member --fqdns "$bad"
  [ "$rc" -ne 0 ] || fail "etcd accepted --fqdns '$bad'"
done
run etcd "$r" --addnodes --role member
[ "$rc" -eq 0 ] || fail "etcd --addnodes without --fqdns: exit $rc" # an empty list: no change
run etcd "$r" --bogus
[ "$rc" -ne 0 ] || fail "etcd accepted no action"
run etcd "$r" --configure --addnodes
[ "$rc" -ne 0 ] || fail "etcd accepted two actions"
cp "$r/etc/kstack/env" "$tmp/env.saved"
printf "export KSTACK_CONFIG_CHANGE_TIMEOUT='1;id'\n" >>"$r/etc/kstack/env"
run etcd "$r" --configure
[ "$rc" -eq 2 ] || fail "etcd accepted change_timeout '1;id': exit $rc"
cp "$tmp/env.saved" "$r/etc/kstack/env"
cp "$r/etc/hosts" "$tmp/hosts.saved"
printf '10.0.0.1;id\t%s\n' "$M1" >"$r/etc/hosts"
run etcd "$r" --configure
[ "$rc" -ne 0 ] || fail "etcd configured with a pod IP of '10.0.0.1;id'"
cp "$tmp/hosts.saved" "$r/etc/hosts"
snapshot "$r" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "refused etcd invocations changed files"
run etcd "$tmp/no-such-root" --configure
[ "$rc" -ne 0 ] || fail "etcd configured without /etc/kstack/env"
# A role etcd does not know: nothing to do, success.
run etcd "$r" --addnodes --role other --fqdns "$M3"
[ "$rc" -eq 0 ] || fail "etcd --addnodes --role other: exit $rc"
ok

# With etcdctl (the real image) the handlers change the live cluster: a stub etcdctl keeps a
# member list (`id, status, name, peer URLs, client URLs, learner`; a member added is unstarted,
# without client URLs, until the test starts it).
mkdir -p "$tmp/stub"
cat >"$tmp/stub/etcdctl" <<'STUB'
#!/bin/sh
# etcdctl stand-in: `member list|add|remove` against $ETCDCTL_STUB_STATE.
state=${ETCDCTL_STUB_STATE:?}
touch "$state"
printf '%s\n' "$*" >>"$state.calls"
while [ "$#" -gt 0 ]; do case $1 in --*) shift ;; *) break ;; esac; done
case "$1 $2" in
  "member list") cat "$state" ;;
  "member add")
    printf '%s, unstarted, , %s, , false\n' "id$(($(wc -l <"$state") + 1))" "${4#--peer-urls=}" >>"$state" ;;
  "member remove")
    grep -q "^$3, " "$state" || exit 1
    grep -v "^$3, " "$state" >"$state.tmp" || true
    mv "$state.tmp" "$state" ;;
  *) exit 1 ;;
esac
STUB
chmod +x "$tmp/stub/etcdctl"
export ETCDCTL_STUB_STATE="$tmp/etcdctl.state"
started_member() { printf 'id%s, started, %s, http://%s:2380, http://%s:2379, false\n' "$1" "${2%%.*}" "$2" "$2"; }
started_member 1 "$M0" >"$ETCDCTL_STUB_STATE"
SCRIPT_PATH=$tmp/stub:$BASE_PATH
r0=$dir/etcd-member-0
step etcd "$r0" --addnodes --role member --fqdns "$M3"
expect_lines "$ETCDCTL_STUB_STATE" ", http://$M3:2380," 1
expect_lines "$ETCDCTL_STUB_STATE.calls" "member add etcd-member-3" 1
expect_grep "$r0/var/lib/etcd/kstack-etcdctl.log" "ran: etcdctl --endpoints=http://$M0:2379 member add etcd-member-3 --peer-urls=http://$M3:2380"
step etcd "$r0" --delnodes --role member --fqdns "$M3"
expect_lines "$ETCDCTL_STUB_STATE" "$M3" 0
expect_lines "$ETCDCTL_STUB_STATE.calls" "member remove id2" 1
# A member that is already there (added by hand, or by itself) is not added again.
started_member 9 "$M4" >>"$ETCDCTL_STUB_STATE"
step etcd "$r0" --addnodes --role member --fqdns "$M4"
expect_lines "$ETCDCTL_STUB_STATE.calls" "member add etcd-member-4" 0
step etcd "$r0" --delnodes --role member --fqdns "$M4"
expect_lines "$ETCDCTL_STUB_STATE.calls" "member remove id9" 1
# A new member whose cluster runs adds itself and joins it (state existing, the cluster's list).
printf "export KSTACK_CONFIG_JOIN_TIMEOUT='3'\n" >>"$r/etc/kstack/env"
step etcd "$r" --configure
expect_lines "$ETCDCTL_STUB_STATE.calls" "member add etcd-member-1 --peer-urls=http://$M1:2380" 1
expect_grep "$(etcd_conf etcd-member-1)" "initial-cluster-state: 'existing'"
expect_grep "$(etcd_conf etcd-member-1)" "initial-cluster: 'etcd-member-0=http://$M0:2380,etcd-member-1=http://$M1:2380'"
# Its data moved aside when the cluster no longer lists it (removed, then the Stack grew again).
sed -i "/$M1/d" "$ETCDCTL_STUB_STATE"
mkdir -p "$r/var/lib/etcd/data/member/wal"
run etcd "$r" --configure
[ "$rc" -eq 0 ] || fail "etcd --configure of a removed member: exit $rc"
[ -d "$r/var/lib/etcd/data" ] && fail "a removed member's data was not moved aside"
ls -d "$r"/var/lib/etcd/data.removed-* >/dev/null 2>&1 || fail "no data.removed-* for a removed member"
expect_lines "$ETCDCTL_STUB_STATE.calls" "member add etcd-member-1 --peer-urls=http://$M1:2380" 2
# No member answers: the change fails (kstack retries it) and is not recorded as done.
printf "export KSTACK_CONFIG_CHANGE_TIMEOUT='1'\n" >>"$r0/etc/kstack/env"
printf '#!/bin/sh\nexit 1\n' >"$tmp/stub/etcdctl"
run etcd "$r0" --addnodes --role member --fqdns "$M3"
[ "$rc" -ne 0 ] || fail "etcd --addnodes succeeded although no member answered"
expect_no_grep "$r0/var/lib/etcd/kstack-members/member" "$M3"
expect_grep "$r0/var/lib/etcd/kstack-etcdctl.log" "failed: member add etcd-member-3: no member of the cluster answers"
SCRIPT_PATH=$BASE_PATH

# ---- etcd: live upgrades (--configure --upgrade-from, --preupgrade, --upgradenodes, and the
# package's optional etcd.settings) ----
U=$tmp/etcd-upgrade
members etcd "$U" >"$U.members"
for n in 0 1 2; do
  mkdir -p "$U/etcd-member-$n/etc"
  printf '127.0.0.1\tlocalhost\n10.0.1.%s\t%s\tetcd-member-%s\n' "$((n + 10))" "$(domain_of etcd "etcd-member-$n")" "$n" >"$U/etcd-member-$n/etc/hosts"
  step etcd "$U/etcd-member-$n" --configure
done
u2=$U/etcd-member-2
uconf=$u2/opt/kstack/etcd/etcd.conf.yml
mkdir -p "$u2/var/lib/etcd/data/member/wal" # it ran: its data is on the volume
# everything: every file with its digest, logs included (a refused invocation logs nothing)
snapshot_all() { (cd "$1" && find . -type f | LC_ALL=C sort | while IFS= read -r f; do printf '%s %s\n' "$(cksum <"$f")" "$f"; done); }
# A new pod of the member, with its volume: the upgrade's --configure rejoins as the member it is.
rm -rf "$u2/opt/kstack/etcd"
step etcd "$u2" --configure --upgrade-from etcd
expect_grep "$uconf" "name: 'etcd-member-2'"
expect_grep "$uconf" "initial-cluster-state: 'existing'"
expect_grep "$uconf" "heartbeat-interval: 200"
expect_no_grep "$uconf" "etcd.settings"
[ -d "$u2/var/lib/etcd/data/member/wal" ] || fail "etcd --upgrade-from moved the member's data"
expect_lines "$u2/var/lib/etcd/kstack-setup.log" "--configure --upgrade-from etcd" 2
# A package version with etcd.settings: its values reach the config (a copy of the package).
P2=$tmp/etcd-next-package
mkdir -p "$P2"
cp "$appdefs/etcd/setup/startscript" "$P2/"
printf '# etcd-next\nsnapshot-count=20000\n\nheartbeat-interval=250\nelection-timeout=2500\nauto-compaction-mode=revision\nauto-compaction-retention=1h\nquota-backend-bytes=0\nlog-level=warn\n' >"$P2/etcd.settings"
PKG=$P2
step etcd "$u2" --configure --upgrade-from etcd
expect_grep "$uconf" "name: 'etcd-member-2'"
expect_grep "$uconf" "heartbeat-interval: 250"
expect_grep "$uconf" "election-timeout: 2500"
expect_grep "$uconf" "# From the package's etcd.settings."
expect_grep "$uconf" "snapshot-count: 20000"
expect_grep "$uconf" "auto-compaction-mode: revision"
expect_grep "$uconf" "auto-compaction-retention: '1h'"
expect_grep "$uconf" "quota-backend-bytes: 0"
expect_grep "$uconf" "log-level: warn"
expect_lines "$uconf" "heartbeat-interval" 1
# Hostile settings: refused with exit 2 before anything is touched (also by --preupgrade, which
# runs from the new package in the old container: a broken package stops there).
cp "$P2/etcd.settings" "$tmp/settings.saved"
snapshot_all "$u2" >"$tmp/before"
for bad in "snapshot-count=1e5" "snapshot-count=0" "snapshot-count=007" "snapshot-count= 5" \
  "snapshot-count=5
snapshot-count=6" "heartbeat-interval=500" "election-timeout=100000" "log-level=trace" \
  "auto-compaction-mode=hourly" "auto-compaction-retention=1d" "auto-compaction-retention=h" \
  "quota-backend-bytes=99999999999" "max-request-bytes=-1" "data-dir=/tmp/evil" \
  "snapshot-count=5
name: evil" "snapshot-count" "snapshot-count=\$(id)" "log-level=warn'
name: 'evil"; do
  printf '%s\n' "$bad" >"$P2/etcd.settings"
  run etcd "$u2" --configure --upgrade-from etcd
  [ "$rc" -eq 2 ] || fail "etcd accepted the setting '$bad' (exit $rc)"
  run etcd "$u2" --preupgrade --from-app etcd --to-app etcd-next
  [ "$rc" -eq 2 ] || fail "etcd --preupgrade accepted the setting '$bad' (exit $rc)"
done
cp "$tmp/settings.saved" "$P2/etcd.settings"
snapshot_all "$u2" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "refused etcd settings changed files"
# Hostile or malformed upgrade arguments: exit 2, nothing touched (logs included).
PKG=
for bad in "Etcd" "etcd next" "etcd;id" "\$(id)" "-etcd" "etcd-" ".etcd" "etcd..next" "etcd.-x" \
  "" "etcd
next" "$(awk 'BEGIN { while (i++ < 254) printf "a" }')"; do
  run etcd "$u2" --configure --upgrade-from "$bad"
  [ "$rc" -eq 2 ] || fail "etcd accepted --upgrade-from '$bad' (exit $rc)"
  run etcd "$u2" --preupgrade --from-app etcd --to-app "$bad"
  [ "$rc" -eq 2 ] || fail "etcd accepted --to-app '$bad' (exit $rc)"
  run etcd "$u2" --preupgrade --from-app "$bad" --to-app etcd-next
  [ "$rc" -eq 2 ] || fail "etcd accepted --from-app '$bad' (exit $rc)"
done
for args in "--configure --upgrade-from" "--preupgrade" "--preupgrade --from-app etcd" \
  "--preupgrade --configure --to-app etcd-next" "--preupgrade --upgradenodes --to-app etcd-next" \
  "--addnodes --role member --fqdns $M1 --upgrade-from etcd" "--configure --to-app etcd-next" \
  "--preupgrade --to-app etcd-next --upgrade-from etcd" "--upgradenodes --fqdns $M1" \
  "--upgradenodes --role member --fqdns x;id" "--upgradenodes --role member --fqdns"; do
  # shellcheck disable=SC2086 # split on purpose: the arguments
  run etcd "$u2" $args
  [ "$rc" -eq 2 ] || fail "etcd accepted '$args' (exit $rc)"
done
snapshot_all "$u2" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "refused etcd upgrade arguments changed files"
# --upgradenodes: nothing for etcd to do (the moved members kept their ids); the membership it
# keeps stays as it was.
snapshot "$u2" actions >"$tmp/before"
step etcd "$u2" --upgradenodes --role member --fqdns "$(domain_of etcd etcd-member-2)"
step etcd "$u2" --upgradenodes --role other --fqdns "$M1"
snapshot "$u2" actions >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "etcd --upgradenodes changed files"
# --preupgrade without etcdctl (these fake roots): nothing to hand over.
run etcd "$u2" --preupgrade --from-app etcd --to-app etcd-next
[ "$rc" -eq 0 ] || fail "etcd --preupgrade without etcdctl: exit $rc"

# With etcdctl: a stub that keeps the member list, the leader's id and the members that are down
# (`endpoint status|health` fail for them) and runs `move-leader` through the leader only.
cat >"$tmp/stub/etcdctl" <<'STUB'
#!/bin/sh
state=${ETCDCTL_STUB_STATE:?}
touch "$state" "$state.leader" "$state.down"
printf '%s\n' "$*" >>"$state.calls"
ep=
while [ "$#" -gt 0 ]; do case $1 in --endpoints=*) ep=${1#--endpoints=}; shift ;; --*) shift ;; *) break ;; esac; done
fqdn=${ep#http://}
fqdn=${fqdn%:*}
grep -Fqx -- "$fqdn" "$state.down" && { echo "context deadline exceeded" >&2; exit 1; }
id=$(awk -F', ' -v f="http://$fqdn:2380" '$4 == f { print $1 }' "$state")
case "$1 $2" in
  "member list") cat "$state" ;;
  "member add")
    printf '%s, unstarted, , %s, , false\n' "id$(($(wc -l <"$state") + 1))" "${4#--peer-urls=}" >>"$state" ;;
  "member remove") exit 1 ;;
  "endpoint status")
    [ -n "$id" ] || exit 1
    leader=false
    [ "$id" = "$(cat "$state.leader")" ] && leader=true
    printf '%s, %s, 3.4.23, 20 kB, %s, false, 2, 8, 8, \n' "$ep" "$id" "$leader" ;;
  "endpoint health") [ -n "$id" ] || exit 1; echo "$ep is healthy" ;;
  move-leader*)
    [ "$id" = "$(cat "$state.leader")" ] || { echo "no leader endpoint given at [$ep]" >&2; exit 1; }
    grep -q "^$2, started, " "$state" || exit 1
    echo "$2" >"$state.leader" ;;
  *) exit 1 ;;
esac
STUB
SCRIPT_PATH=$tmp/stub:$BASE_PATH
U0=$(domain_of etcd etcd-member-0)
U1=$(domain_of etcd etcd-member-1)
U2=$(domain_of etcd etcd-member-2)
export ETCDCTL_STUB_STATE="$tmp/etcdctl-up.state"
stub_cluster() { # the three members started, member $1 (ids a0, a1, a2) the leader, none down
  {
    for n in 0 1 2; do
      printf 'a%s, started, etcd-member-%s, http://%s:2380, http://%s:2379, false\n' "$n" "$n" \
        "$(domain_of etcd "etcd-member-$n")" "$(domain_of etcd "etcd-member-$n")"
    done
  } >"$ETCDCTL_STUB_STATE"
  echo "a$1" >"$ETCDCTL_STUB_STATE.leader"
  : >"$ETCDCTL_STUB_STATE.down"
  : >"$ETCDCTL_STUB_STATE.calls"
}
leader_is() {
  if [ "$(cat "$ETCDCTL_STUB_STATE.leader")" = "$1" ]; then ok; else
    fail "the leader is $(cat "$ETCDCTL_STUB_STATE.leader"), expected $1"
  fi
}
for n in 0 1 2; do printf "export KSTACK_CONFIG_CHANGE_TIMEOUT='2'\n" >>"$U/etcd-member-$n/etc/kstack/env"; done
stub_cluster 2
# Not the leader: nothing to do.
step etcd "$U/etcd-member-0" --preupgrade --from-app etcd --to-app etcd-next
expect_lines "$ETCDCTL_STUB_STATE.calls" "move-leader" 0
leader_is a2
# The leader (member 2, the first kstack moves) hands over to member 0 (no higher ordinal: the
# lowest, which moves last), once: the second run finds it is not the leader any more.
run etcd "$u2" --preupgrade --from-app etcd --to-app etcd-next
[ "$rc" -eq 0 ] || fail "etcd --preupgrade of the leader: exit $rc"
expect_grep "$u2.out" "etcd preupgrade (etcd -> etcd-next): $U2 handed the leadership to $U0"
step etcd "$u2" --preupgrade --from-app etcd --to-app etcd-next
expect_lines "$ETCDCTL_STUB_STATE.calls" "move-leader a0" 1
expect_lines "$ETCDCTL_STUB_STATE.calls" "move-leader" 1
leader_is a0
expect_grep "$u2/var/lib/etcd/kstack-etcdctl.log" "ran: etcdctl --endpoints=http://$U2:2379 move-leader a0 # to etcd-member-0, before the upgrade to etcd-next"
# Member 0 leads, member 1 is down: a member with a higher ordinal that is healthy (2) takes over.
echo a0 >"$ETCDCTL_STUB_STATE.leader"
echo "$U1" >"$ETCDCTL_STUB_STATE.down"
run etcd "$U/etcd-member-0" --preupgrade --from-app etcd --to-app etcd-next
[ "$rc" -eq 0 ] || fail "etcd --preupgrade of the leader with one healthy member: exit $rc"
leader_is a2
# The leader while no other member is healthy: refused (exit 1, kstack stops the rollout), the
# leadership where it was.
stub_cluster 2
printf '%s\n%s\n' "$U0" "$U1" >"$ETCDCTL_STUB_STATE.down"
run etcd "$u2" --preupgrade --from-app etcd --to-app etcd-next
[ "$rc" -eq 1 ] || fail "etcd --preupgrade of a leader without a healthy member: exit $rc"
expect_grep "$u2.out" "is the Raft leader and could not hand the leadership over within 2s (no other member is healthy)"
expect_lines "$ETCDCTL_STUB_STATE.calls" "move-leader" 0
leader_is a2
# Its own etcd does not answer: it leads nothing.
printf '%s\n' "$U2" >"$ETCDCTL_STUB_STATE.down"
step etcd "$u2" --preupgrade --from-app etcd --to-app etcd-next
expect_grep "$u2.out" "does not answer: it leads nothing"
# The only member: nobody to hand over to, and nothing to wait for.
grep -F "$U2" "$ETCDCTL_STUB_STATE" >"$tmp/only" && mv "$tmp/only" "$ETCDCTL_STUB_STATE"
: >"$ETCDCTL_STUB_STATE.down"
step etcd "$u2" --preupgrade --from-app etcd --to-app etcd-next
expect_grep "$u2.out" "is the only member"
# The upgrade's --configure against the live cluster: it is listed, so no member add or remove
# (it keeps its id), the cluster's list, state existing, the data in place.
stub_cluster 0
rm -rf "$u2/opt/kstack/etcd"
step etcd "$u2" --configure --upgrade-from etcd
expect_lines "$ETCDCTL_STUB_STATE.calls" "member add" 0
expect_lines "$ETCDCTL_STUB_STATE.calls" "member remove" 0
expect_grep "$uconf" "initial-cluster-state: 'existing'"
expect_grep "$uconf" "initial-cluster: 'etcd-member-0=http://$U0:2380,etcd-member-1=http://$U1:2380,etcd-member-2=http://$U2:2380'"
expect_grep "$u2.out" "upgrade from etcd: $U2 rejoins as member a2 with its data"
[ -d "$u2/var/lib/etcd/data/member/wal" ] || fail "etcd --upgrade-from moved the member's data"
# A cluster that does not list the member with data: the upgrade fails rather than add it anew.
sed -i "/$U2/d" "$ETCDCTL_STUB_STATE"
run etcd "$u2" --configure --upgrade-from etcd
[ "$rc" -eq 1 ] || fail "etcd --upgrade-from joined a cluster that does not list it: exit $rc"
expect_lines "$ETCDCTL_STUB_STATE.calls" "member add" 0
[ -d "$u2/var/lib/etcd/data/member/wal" ] || fail "etcd --upgrade-from moved the data of an unlisted member"
SCRIPT_PATH=$BASE_PATH
unset ETCDCTL_STUB_STATE

# ---- redis: primary + 2 replicas -> 3 replicas -> 1 ----
start_app redis
P=$(domain_of redis redis-primary-0)
R0=$(domain_of redis redis-replica-0)
R1=$(domain_of redis redis-replica-1)
R2=$(domain_of redis redis-replica-2)
# The kubelet's /etc/hosts of each pod (redis-replica-2 comes with the scale-up): pod IP, FQDN,
# host name. Redis binds the pod IP it finds there.
n=10
for p in redis-primary-0 redis-replica-0 redis-replica-1 redis-replica-2; do
  n=$((n + 1))
  mkdir -p "$dir/$p/etc"
  printf '127.0.0.1\tlocalhost\n10.244.1.%s\t%s\t%s\n' "$n" "$(domain_of redis "$p")" "$p" >"$dir/$p/etc/hosts"
done
configure_all redis "$dir" var/lib/redis
c=$dir/redis-primary-0/etc/kstack/redis/redis.conf
expect_no_grep "$c" "replicaof"
expect_grep "$c" "# kstack replicas: $R0,$R1"
expect_grep "$c" "bind 10.244.1.11"
expect_grep "$c" "bind-source-addr 10.244.1.11"
expect_no_grep "$c" "0.0.0.0"
expect_grep "$c" "dir /var/lib/redis"
expect_grep "$c" "port 6379"
expect_grep "$c" "appendonly yes"
expect_grep "$c" "maxmemory-policy noeviction"
n=11
for p in redis-replica-0 redis-replica-1; do
  n=$((n + 1))
  expect_grep "$dir/$p/etc/kstack/redis/redis.conf" "replicaof $P 6379"
  expect_grep "$dir/$p/etc/kstack/redis/redis.conf" "bind 10.244.1.$n"
  expect_grep "$dir/$p/etc/kstack/redis/redis.conf" "replica-announce-ip 10.244.1.$n"
done
scale redis "$dir" var/lib/redis replica 3 primary
expect_grep "$c" "# kstack replicas: $R0,$R1,$R2"
expect_grep "$dir/redis-replica-2/etc/kstack/redis/redis.conf" "replicaof $P 6379"
expect_grep "$dir/redis-replica-2/etc/kstack/redis/redis.conf" "bind 10.244.1.14"
scale redis "$dir" var/lib/redis replica 1 primary
expect_grep "$c" "# kstack replicas: $R0"
expect_no_grep "$c" "$R1"
# Hostile or malformed input: refused with exit 2, nothing changed.
r=$dir/redis-replica-0
snapshot "$r" >"$tmp/before"
for bad in "x;rm -rf /" "a b" "\$(id)" "-flag"; do
  run redis "$dir/redis-primary-0" --addnodes --role replica --fqdns "$bad"
  [ "$rc" -eq 2 ] || fail "redis accepted --fqdns '$bad' (exit $rc)"
done
cp "$r/etc/hosts" "$tmp/hosts.saved"
for bad in "10.0.0.1;id" "\$(id)" "127.0.0.1"; do
  printf '%s\t%s\tredis-replica-0\n' "$bad" "$R0" >"$r/etc/hosts"
  run redis "$r" --configure
  [ "$rc" -eq 2 ] || fail "redis configured with pod IP '$bad' (exit $rc)"
done
cp "$tmp/hosts.saved" "$r/etc/hosts"
cp "$r/etc/kstack/env" "$tmp/env.saved"
printf "export KSTACK_CONFIG_MAXMEMORY_POLICY='noeviction\nslaveof evil 1'\n" >>"$r/etc/kstack/env"
run redis "$r" --configure
[ "$rc" -eq 2 ] || fail "redis accepted a multi-line maxmemory_policy (exit $rc)"
cp "$tmp/env.saved" "$r/etc/kstack/env"
snapshot "$r" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "refused redis invocations changed files"
run redis "$tmp/no-such-root" --configure
[ "$rc" -eq 2 ] || fail "redis configured without /etc/kstack/env (exit $rc)"

# ---- cassandra: 2 seeds + 1 worker -> 2 workers -> 1 ----
start_app cassandra
S0=$(domain_of cassandra cassandra-seed-0)
S1=$(domain_of cassandra cassandra-seed-1)
W0=$(domain_of cassandra cassandra-worker-0)
W1=$(domain_of cassandra cassandra-worker-1)
configure_all cassandra "$dir" var/lib/cassandra
for p in cassandra-seed-0 cassandra-seed-1 cassandra-worker-0; do
  c=$dir/$p/etc/cassandra/cassandra.yaml
  expect_grep "$c" "      - seeds: '$S0,$S1'"
  expect_grep "$c" "listen_address: $p.cassandra.$ns.svc.cluster.local"
  expect_grep "$c" "cluster_name: 'cassandra'"
  expect_grep "$c" "  - /var/lib/cassandra/data"
  expect_grep "$dir/$p/etc/cassandra/cassandra-rackdc.properties" "dc=dc1"
  expect_lines "$dir/$p/etc/cassandra/kstack-peers" "svc.cluster.local" 3
done
scale cassandra "$dir" var/lib/cassandra worker 2 "seed worker"
for p in cassandra-seed-0 cassandra-seed-1 cassandra-worker-0 cassandra-worker-1; do
  expect_grep "$dir/$p/etc/cassandra/kstack-peers" "$W1"
  expect_grep "$dir/$p/etc/cassandra/cassandra.yaml" "      - seeds: '$S0,$S1'"
done
scale cassandra "$dir" var/lib/cassandra worker 1 "seed worker"
for p in cassandra-seed-0 cassandra-seed-1 cassandra-worker-0; do
  expect_no_grep "$dir/$p/etc/cassandra/kstack-peers" "$W1"
  expect_grep "$dir/$p/etc/cassandra/kstack-peers" "$W0"
done
expect_lines "$dir/cassandra-seed-0/var/lib/cassandra/kstack-nodetool.log" "would run: nodetool removenode <host id of $W1>" 1
[ -f "$dir/cassandra-seed-1/var/lib/cassandra/kstack-nodetool.log" ] && fail "cassandra-seed-1 recorded nodetool commands"
# Seeds change too: a third seed joins everyone's seed list.
scale cassandra "$dir" var/lib/cassandra seed 3 "seed worker"
for p in cassandra-seed-0 cassandra-seed-1 cassandra-seed-2 cassandra-worker-0; do
  expect_grep "$dir/$p/etc/cassandra/cassandra.yaml" "      - seeds: '$S0,$S1,$(domain_of cassandra cassandra-seed-2)'"
done
# ids as kstack gives them: worker-0 kept 3, worker-1 had 4, so the third seed is 5
expect_grep "$dir/cassandra-seed-2/etc/kstack/env" "export KSTACK_ROLE_SEED_NODE_IDS='1,2,5'"
expect_grep "$dir/cassandra-worker-0/etc/kstack/env" "export KSTACK_NODE_ID='3'"

# ---- kafka: 3 controllers + 2 brokers -> 3 brokers ----
start_app kafka
C0=$(domain_of kafka kafka-controller-0)
C1=$(domain_of kafka kafka-controller-1)
C2=$(domain_of kafka kafka-controller-2)
VOTERS="controller.quorum.voters=1@$C0:9093,2@$C1:9093,3@$C2:9093"
configure_all kafka "$dir" var/lib/kafka
while read -r role pod fqdn id; do
  c=$dir/$pod/etc/kafka/server.properties
  expect_grep "$c" "$VOTERS"
  expect_grep "$c" "node.id=$id"
  expect_grep "$c" "process.roles=$role"
  expect_grep "$c" "log.dirs=/var/lib/kafka/data"
  if [ "$role" = broker ]; then
    expect_grep "$c" "advertised.listeners=PLAINTEXT://$fqdn:9092"
    expect_grep "$c" "offsets.topic.replication.factor=2"
  else
    expect_grep "$c" "listeners=CONTROLLER://0.0.0.0:9093"
  fi
done <"$dir.members"
# One cluster id, 22 base64url characters, the same on every member.
ids=$(cat "$dir"/*/var/lib/kafka/kstack-cluster-id | sort -u)
[ "$(printf '%s\n' "$ids" | wc -l)" -eq 1 ] || fail "kafka members disagree on the cluster id: $ids"
printf '%s\n' "$ids" | grep -Eqx '[A-Za-z0-9_-]{22}' || fail "kafka cluster id malformed: $ids"
expect_grep "$dir/kafka-controller-0/var/lib/kafka/kstack-actions.log" "would run: kafka-storage.sh format --ignore-formatted -t $ids"
scale kafka "$dir" var/lib/kafka broker 3 "controller broker"
while read -r role pod fqdn id; do
  expect_grep "$dir/$pod/etc/kafka/server.properties" "$VOTERS"
  expect_grep "$dir/$pod/etc/kafka/server.properties" "# kstack brokers: $(domain_of kafka kafka-broker-0),$(domain_of kafka kafka-broker-1),$(domain_of kafka kafka-broker-2)"
done <"$dir.members"
expect_grep "$dir/kafka-broker-2/etc/kafka/server.properties" "node.id=6"
# A fourth controller (node id 7, the next after the brokers') joins every member's voters.
scale kafka "$dir" var/lib/kafka controller 4 "controller broker"
while read -r role pod fqdn id; do
  expect_grep "$dir/$pod/etc/kafka/server.properties" "$VOTERS,7@$(domain_of kafka kafka-controller-3):9093"
done <"$dir.members"
expect_grep "$dir/kafka-controller-3/etc/kafka/server.properties" "node.id=7"
scale kafka "$dir" var/lib/kafka controller 3 "controller broker"
while read -r role pod fqdn id; do
  expect_grep "$dir/$pod/etc/kafka/server.properties" "$VOTERS"
  expect_no_grep "$dir/$pod/etc/kafka/server.properties" "kafka-controller-3"
done <"$dir.members"

# ---- postgresql: primary + 2 replicas -> 3 replicas -> 1 ----
start_app postgresql
PP=$(domain_of postgresql postgresql-primary-0)
configure_all postgresql "$dir" var/lib/postgresql
while read -r role pod fqdn id; do
  c=$dir/$pod/etc/kstack/postgresql
  expect_grep "$c/postgresql.conf" "data_directory = '/var/lib/postgresql/data'"
  expect_grep "$c/postgresql.conf" "hba_file = '/etc/kstack/postgresql/pg_hba.conf'"
  expect_grep "$c/postgresql.conf" "unix_socket_directories = '/tmp/kstack-postgresql'"
  expect_grep "$c/postgresql.conf" "shared_buffers = 16MB"
  expect_grep "$c/postgresql.conf" "max_connections = 20"
  expect_grep "$c/postgresql.conf" "cluster_name = '$pod'"
  # the entrypoint gives the pod IP on the command line; never a wildcard in the file
  expect_no_grep "$c/postgresql.conf" "listen_addresses ="
  expect_grep "$c/pg_hba.conf" "host    replication  replicator  10.244.0.0/16    trust"
  expect_grep "$c/pg_hba.conf" "host    all          all         10.244.0.0/16    scram-sha-256"
  expect_lines "$c/pg_hba.conf" "trust" 2 # the container's socket and replication
  expect_grep "$c/role" "$role"
  expect_grep "$c/primary" "$PP"
  expect_grep "$c/port" "5432"
  if [ "$role" = replica ]; then
    expect_grep "$c/postgresql.conf" "primary_conninfo = 'host=$PP port=5432 user=replicator application_name=$pod connect_timeout=5'"
  else
    expect_no_grep "$c/postgresql.conf" "primary_conninfo"
  fi
done <"$dir.members"
# No role asks for --addnodes/--delnodes; new replicas find the primary on their own.
scale postgresql "$dir" var/lib/postgresql replica 3 ""
expect_grep "$dir/postgresql-replica-2/etc/kstack/postgresql/postgresql.conf" "primary_conninfo = 'host=$PP port=5432 user=replicator application_name=postgresql-replica-2 connect_timeout=5'"
scale postgresql "$dir" var/lib/postgresql replica 1 ""
r=$dir/postgresql-primary-0
step postgresql "$r" --addnodes --role replica --fqdns "$(domain_of postgresql postgresql-replica-7)"
expect_grep "$r/var/lib/postgresql/kstack-members/replica" "postgresql-replica-7"
expect_no_grep "$r/etc/kstack/postgresql/postgresql.conf" "postgresql-replica-7"
step postgresql "$r" --delnodes --role replica --fqdns "$(domain_of postgresql postgresql-replica-7)"
# configMeta: several networks, other sizes.
pg_config() { # pg_config ROOT KEY VALUE: the env with KSTACK_CONFIG_KEY='VALUE' (quoted as kstack does)
  cp "$1/etc/kstack/env" "$1/env.orig"
  printf "export KSTACK_CONFIG_%s='%s'\n" "$2" "$(printf '%s' "$3" | sed "s/'/'\\\\''/g")" >>"$1/etc/kstack/env"
}
pg_config_reset() { mv -f "$1/env.orig" "$1/etc/kstack/env"; }
r=$dir/postgresql-replica-0
pg_config "$r" ALLOWED_CIDR "10.0.0.0/8,192.168.1.0/24"
step postgresql "$r" --configure
expect_grep "$r/etc/kstack/postgresql/pg_hba.conf" "host    replication  replicator  10.0.0.0/8       trust"
expect_grep "$r/etc/kstack/postgresql/pg_hba.conf" "host    replication  replicator  192.168.1.0/24   trust"
expect_no_grep "$r/etc/kstack/postgresql/pg_hba.conf" "10.244.0.0/16"
pg_config_reset "$r"
pg_config "$r" SHARED_BUFFERS 32MB
step postgresql "$r" --configure
expect_grep "$r/etc/kstack/postgresql/postgresql.conf" "shared_buffers = 32MB"
pg_config_reset "$r"
step postgresql "$r" --configure
# Hostile or malformed values: refused (exit 2), nothing changed.
snapshot "$r" >"$tmp/before"
for bad in "10.244.0.0/16 trust" "0.0.0.0/0
host all all 0.0.0.0/0 trust" "10.244.0.0" "10.244.0.256/16" "10.244.0.0/33" "010.1.1.1/8" \
  "10.244.0/16" "all" "samenet" "\$(id)" "'x'" "10.0.0.0/8," ",10.0.0.0/8"; do
  pg_config "$r" ALLOWED_CIDR "$bad"
  run postgresql "$r" --configure
  [ "$rc" -eq 2 ] || fail "postgresql accepted allowed_cidr '$bad' (exit $rc)"
  pg_config_reset "$r"
done
for bad in "20; shared_buffers = 1GB" "0" "4" "020" "abc" "99999999"; do
  pg_config "$r" MAX_CONNECTIONS "$bad"
  run postgresql "$r" --configure
  [ "$rc" -eq 2 ] || fail "postgresql accepted max_connections '$bad' (exit $rc)"
  pg_config_reset "$r"
done
for bad in "16MB'" "16 MB" "MB" "16XB" "16" "0MB" "16MB
hot_standby = off"; do
  pg_config "$r" SHARED_BUFFERS "$bad"
  run postgresql "$r" --configure
  [ "$rc" -eq 2 ] || fail "postgresql accepted shared_buffers '$bad' (exit $rc)"
  pg_config_reset "$r"
done
for bad in "x;rm -rf /" "a b" "\$(id)" "-flag"; do
  run postgresql "$r" --addnodes --role replica --fqdns "$bad"
  [ "$rc" -eq 2 ] || fail "postgresql accepted --fqdns '$bad'"
done
cp "$r/etc/kstack/env" "$r/env.orig"
printf "export KSTACK_ROLE='standby'\n" >>"$r/etc/kstack/env"
run postgresql "$r" --configure
[ "$rc" -eq 2 ] || fail "postgresql configured an unknown role"
pg_config_reset "$r"
snapshot "$r" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "refused postgresql invocations changed files"
run postgresql "$tmp/no-such-root" --configure
[ "$rc" -ne 0 ] || fail "postgresql configured without /etc/kstack/env"
# A running server (postmaster.pid) is reloaded when its files change, and only then.
mkdir -p "$tmp/stub-pg" "$r/var/lib/postgresql/data"
printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\n' "$tmp/pg_ctl.calls" >"$tmp/stub-pg/pg_ctl"
chmod +x "$tmp/stub-pg/pg_ctl"
: >"$r/var/lib/postgresql/data/postmaster.pid"
SCRIPT_PATH=$tmp/stub-pg:$BASE_PATH
step postgresql "$r" --configure
[ -f "$tmp/pg_ctl.calls" ] && fail "postgresql reloaded a server whose files did not change"
pg_config "$r" ALLOWED_CIDR "10.1.0.0/16"
step postgresql "$r" --configure
expect_lines "$tmp/pg_ctl.calls" "reload -s -D $r/var/lib/postgresql/data" 1
pg_config_reset "$r"
SCRIPT_PATH=$BASE_PATH

# ---- spark: master + 2 workers -> 3 workers -> 1 ----
start_app spark
MA=$(domain_of spark spark-master-0)
configure_all spark "$dir" var/lib/spark
while read -r role pod fqdn id; do
  expect_grep "$dir/$pod/opt/spark/conf/spark-env.sh" "export SPARK_MASTER_HOST='$MA'"
  expect_grep "$dir/$pod/opt/spark/conf/spark-env.sh" "export SPARK_LOCAL_HOSTNAME='$fqdn'"
  expect_grep "$dir/$pod/opt/spark/conf/spark-defaults.conf" "spark://$MA:7077"
done <"$dir.members"
expect_lines "$dir/spark-master-0/opt/spark/conf/workers" "spark-worker-" 2
scale spark "$dir" var/lib/spark worker 3 master
expect_lines "$dir/spark-master-0/opt/spark/conf/workers" "spark-worker-" 3
expect_grep "$dir/spark-master-0/opt/spark/conf/workers" "$(domain_of spark spark-worker-2)"
scale spark "$dir" var/lib/spark worker 1 master
expect_lines "$dir/spark-master-0/opt/spark/conf/workers" "spark-worker-" 1
expect_grep "$dir/spark-master-0/opt/spark/conf/workers" "$(domain_of spark spark-worker-0)"
# spark-env.sh is sh: sourcing it gives the values back.
(
  # shellcheck disable=SC1090,SC1091
  . "$dir/spark-worker-0/opt/spark/conf/spark-env.sh"
  [ "$SPARK_MASTER_HOST" = "$MA" ]
) || fail "spark-env.sh does not source to SPARK_MASTER_HOST=$MA"

# ---- jupyter: one notebook ----
start_app jupyter
J=$(domain_of jupyter jupyter-notebook-0)
configure_all jupyter "$dir" var/lib/jupyter
c=$dir/jupyter-notebook-0/etc/jupyter/jupyter_server_config.py
expect_grep "$c" "c.ServerApp.ip = '0.0.0.0'"
expect_grep "$c" "c.ServerApp.port = 8888"
expect_grep "$c" "c.ServerApp.base_url = '/'"
expect_grep "$c" "c.ServerApp.custom_display_url = 'http://$J:8888/'"
[ -d "$dir/jupyter-notebook-0/home/jovyan/work" ] || fail "jupyter work dir not created"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$c" || fail "$c is not Python"
fi
# base_url from configMeta; a value that could close the Python string is refused.
r=$dir/jupyter-notebook-0
printf "export KSTACK_CONFIG_BASE_URL='/lab/x'\n" >>"$r/etc/kstack/env"
step jupyter "$r" --configure
expect_grep "$c" "c.ServerApp.base_url = '/lab/x/'"
printf "export KSTACK_CONFIG_BASE_URL='/x'\\\\''; import os; #'\n" >>"$r/etc/kstack/env"
run jupyter "$r" --configure
[ "$rc" -ne 0 ] || fail "jupyter accepted a base_url with a quote"
expect_grep "$c" "c.ServerApp.base_url = '/lab/x/'"

# ---- zookeeper: 3 servers -> 5 -> 3 ----
start_app zookeeper
Z0=$(domain_of zookeeper zookeeper-server-0)
Z1=$(domain_of zookeeper zookeeper-server-1)
Z2=$(domain_of zookeeper zookeeper-server-2)
Z3=$(domain_of zookeeper zookeeper-server-3)
Z4=$(domain_of zookeeper zookeeper-server-4)
zk_line() { printf 'server.%s=%s:2888:3888:%s;%s:2181' "$1" "$2" "$3" "$2"; } # id fqdn type
configure_all zookeeper "$dir" var/lib/zookeeper
id=0
for p in zookeeper-server-0 zookeeper-server-1 zookeeper-server-2; do
  id=$((id + 1))
  c=$dir/$p/opt/kstack/zookeeper/zoo.cfg
  for want in reconfigEnabled=true standaloneEnabled=false quorumListenOnAllIPs=false \
    dataDir=/var/lib/zookeeper/data admin.enableServer=false tickTime=2000 \
    dynamicConfigFile=/opt/kstack/zookeeper/zoo.cfg.dynamic 4lw.commands.whitelist=srvr,mntr,ruok,conf; do
    expect_grep "$c" "$want"
  done
  d=$dir/$p/opt/kstack/zookeeper/zoo.cfg.dynamic
  expect_lines "$d" "server." 3
  expect_grep "$d" "$(zk_line 1 "$Z0" participant)"
  expect_grep "$d" "$(zk_line 2 "$Z1" participant)"
  expect_grep "$d" "$(zk_line 3 "$Z2" participant)"
  expect_grep "$dir/$p/var/lib/zookeeper/data/myid" "$id"
  expect_grep "$dir/$p/opt/kstack/zookeeper/client-endpoint" "$p.zookeeper.$ns.svc.cluster.local 2181"
done
# Without the image's client (kstack-zkcli) the first server records the reconfig commands.
scale zookeeper "$dir" var/lib/zookeeper server 5 server
[ "$changed" = "$Z3,$Z4" ] || fail "zookeeper scale-up: --fqdns $changed"
ZLOG=$dir/zookeeper-server-0/var/lib/zookeeper/kstack-reconfig.log
expect_lines "$ZLOG" "would run: kstack-zkcli -server $Z0:2181 reconfig -add $(zk_line 4 "$Z3" participant),$(zk_line 5 "$Z4" participant) #" 1
for p in zookeeper-server-1 zookeeper-server-2; do
  [ -f "$dir/$p/var/lib/zookeeper/kstack-reconfig.log" ] && fail "zookeeper: $p is not the first server but recorded reconfig"
done
for p in zookeeper-server-0 zookeeper-server-3 zookeeper-server-4; do
  expect_lines "$dir/$p/var/lib/zookeeper/kstack-members/server" "zookeeper-server-" 5
done
expect_grep "$dir/zookeeper-server-4/var/lib/zookeeper/data/myid" "5"
scale zookeeper "$dir" var/lib/zookeeper server 3 server
[ "$changed" = "$Z3,$Z4" ] || fail "zookeeper scale-down: --fqdns $changed"
expect_lines "$ZLOG" "reconfig -remove 4,5 #" 1
# --configure again (a restarted container) keeps what ZooKeeper maintains since its start.
r=$dir/zookeeper-server-1
printf '%s\nversion=100000005\n' "$(zk_line 2 "$Z1" participant)" >"$r/opt/kstack/zookeeper/zoo.cfg.dynamic.100000005"
sed 's/^dynamicConfigFile=.*/dynamicConfigFile=\/opt\/kstack\/zookeeper\/zoo.cfg.dynamic.100000005/' \
  "$r/opt/kstack/zookeeper/zoo.cfg" >"$tmp/zoo.cfg" && mv "$tmp/zoo.cfg" "$r/opt/kstack/zookeeper/zoo.cfg"
step zookeeper "$r" --configure
expect_grep "$r/opt/kstack/zookeeper/zoo.cfg" "dynamicConfigFile=/opt/kstack/zookeeper/zoo.cfg.dynamic.100000005"
# Hostile or malformed input: refused, nothing changed.
snapshot "$r" >"$tmp/before"
for bad in "x;rm -rf /" "a b" "\$(id)" "-flag"; do
  run zookeeper "$r" --addnodes --role server --fqdns "$bad"
  [ "$rc" -eq 2 ] || fail "zookeeper accepted --fqdns '$bad' (exit $rc)"
done
snapshot "$r" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "refused zookeeper invocations changed files"
cp "$r/etc/kstack/env" "$tmp/zk-env"
cp "$r/opt/kstack/zookeeper/zoo.cfg" "$tmp/zk-cfg"
for bad in "KSTACK_NODE_ID='1;id'" "KSTACK_NODE_ID='0'" "KSTACK_CONFIG_TICK_TIME='2000
server.9=evil'" "KSTACK_ROLE_SERVER_NODE_IDS='1,\$(id)'" "KSTACK_SERVICE_CLIENT_PORT='99999'"; do
  cp "$tmp/zk-env" "$r/etc/kstack/env"
  printf 'export %s\n' "$bad" >>"$r/etc/kstack/env"
  rm -f "$r/opt/kstack/zookeeper/zoo.cfg" # so that --configure would write it
  run zookeeper "$r" --configure
  [ "$rc" -eq 2 ] || fail "zookeeper accepted $bad (exit $rc)"
  [ -f "$r/opt/kstack/zookeeper/zoo.cfg" ] && fail "zookeeper wrote zoo.cfg with $bad"
done
cp "$tmp/zk-env" "$r/etc/kstack/env"
cp "$tmp/zk-cfg" "$r/opt/kstack/zookeeper/zoo.cfg"
snapshot "$r" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "refused zookeeper environments changed files"
run zookeeper "$r" --addnodes --role other --fqdns "$Z3"
[ "$rc" -eq 0 ] || fail "zookeeper --addnodes --role other: exit $rc"
ok

# With the image's tools: a stub kstack-zkcli keeps the committed membership in a file, and a
# stub bash answers the four-letter word `conf` from it (the scripts reach a server over
# bash's /dev/tcp); a new server then joins the running ensemble as an observer, and the
# reconfig commands really run, once.
mkdir -p "$tmp/zkstub"
cat >"$tmp/zkstub/kstack-zkcli" <<'STUB'
#!/bin/sh
# kstack-zkcli stand-in: -server H:P reconfig -add|-remove LIST | config, on $ZK_STUB_STATE.
state=${ZK_STUB_STATE:?}
printf '%s\n' "$*" >>"$state.calls"
[ "$1" = -server ] && shift 2
case $1 in
  config) cat "$state" ;;
  reconfig)
    if [ "$2" = -add ]; then
      printf '%s\n' "$3" | tr ',' '\n' >>"$state"
    else
      for id in $(printf '%s\n' "$3" | tr ',' ' '); do
        grep -v "^server\.$id=" "$state" >"$state.tmp" || true
        mv "$state.tmp" "$state"
      done
    fi ;;
  *) exit 1 ;;
esac
STUB
cat >"$tmp/zkstub/bash" <<'STUB'
#!/bin/sh
# bash stand-in for `bash -c '<4lw over /dev/tcp>' NAME HOST PORT WORD`: answers conf.
state=${ZK_STUB_STATE:?}
[ "$6" = conf ] && [ -s "$state" ] || exit 1
printf 'serverId=1\nmembership: \n'
cat "$state"
printf 'version=100000000\n'
STUB
printf '#!/bin/sh\nshift\nexec "$@"\n' >"$tmp/zkstub/timeout"
chmod +x "$tmp/zkstub/kstack-zkcli" "$tmp/zkstub/bash" "$tmp/zkstub/timeout"
export ZK_STUB_STATE="$tmp/zk.state"
cp "$dir/zookeeper-server-0/opt/kstack/zookeeper/zoo.cfg.dynamic" "$ZK_STUB_STATE"
SCRIPT_PATH=$tmp/zkstub:$BASE_PATH
rm -rf "$dir/zookeeper-server-3" # a new pod: no emptyDir, and a volume of its own
scale zookeeper "$dir" var/lib/zookeeper server 4 server
Z3N=$(domain_of zookeeper zookeeper-server-3) # node id 6 now
d=$dir/zookeeper-server-3/opt/kstack/zookeeper/zoo.cfg.dynamic
expect_grep "$d" "$(zk_line 1 "$Z0" participant)"
expect_grep "$d" "$(zk_line 6 "$Z3N" observer)"
expect_lines "$d" "server." 4
expect_lines "$ZK_STUB_STATE.calls" "reconfig -add $(zk_line 6 "$Z3N" participant)" 1
expect_lines "$ZK_STUB_STATE" "$(zk_line 6 "$Z3N" participant)" 1
expect_grep "$ZLOG" "ran: reconfig -add $(zk_line 6 "$Z3N" participant)"
scale zookeeper "$dir" var/lib/zookeeper server 3 server
expect_lines "$ZK_STUB_STATE.calls" "reconfig -remove 6" 1
expect_lines "$ZK_STUB_STATE" "server." 3
# A reconfig that does not take effect fails the handler (kstack retries), nothing recorded.
printf '#!/bin/sh\nexit 0\n' >"$tmp/zkstub/kstack-zkcli"
run zookeeper "$dir/zookeeper-server-0" --addnodes --role server --fqdns "$Z3"
[ "$rc" -ne 0 ] || fail "zookeeper --addnodes succeeded although reconfig did nothing"
expect_no_grep "$dir/zookeeper-server-0/var/lib/zookeeper/kstack-members/server" "$Z3"
SCRIPT_PATH=$BASE_PATH
unset ZK_STUB_STATE

printf '%s checks, %s failure(s)\n' "$checks" "$failures"
[ "$failures" -eq 0 ]
