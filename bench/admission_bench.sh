#!/usr/bin/env bash
# Admission webhook throughput, latency and CPU over TLS keep-alive: kstack's real rules
# (validator::RulesHandler over a populated in-memory catalog, bench/admission/serve.cpp
# --handler rules), the same server with an allow-all handler, and nginx serving a static
# answer over TLS on the same machine (the reference ceiling for "TLS + HTTP/1.1").
#
# Request kinds (AdmissionReviews as kube-apiserver sends them, managedFields included):
#   stack-create   Stack CREATE        POST /validate
#   stack-update   Stack UPDATE        POST /validate (oldObject with 2 workers, object with 4)
#   stack-mutate   Stack CREATE        POST /mutate   (the defaulting patch)
#   apptype-create AppType CREATE      POST /validate
# Every answer must contain "allowed":true (wrk's response hook checks it; a denial counts as
# an error), and a first request per kind and server is checked before timing.
#
# For each kind and server: req/s, p50, p99, CPU microseconds per request (utime+stime of the
# server's processes from /proc/PID/stat before and after, divided by the requests) and the
# ratio to nginx's req/s; --rounds interleaved rounds (every server runs each kind once per
# round), medians printed. The load average is printed before and after.
#
#   bench/admission_bench.sh [--build DIR] [--duration SECONDS] [--concurrency "16"]
#                            [--threads N] [--rounds N] [--kinds "stack-create ..."]
#                            [--servers "rules allow nginx"] [--perf FILE] [--other SERVE]
#   bench/admission_bench.sh --reviews-only DIR
#
# --threads: kstack server threads = nginx worker processes (default 2). wrk runs on the same
# cores (min(concurrency, 2) threads), so absolute figures depend on the machine; the ratio is
# the point. --perf FILE records the rules server with `perf record -g` during the runs (perf
# costs CPU: take figures without it). Installs wrk and nginx-light from Debian when missing
# (needs root). --reviews-only DIR writes the four reviews (DIR/<kind>.json and DIR/<kind>.path)
# and exits, for `kstack_bench_admission_serve --in-process DIR/<kind>.json --path
# "$(cat DIR/<kind>.path)"` (the rules' own cost without the transport). --other SERVE adds the
# server "other": the rules handler of another build's kstack_bench_admission_serve, for an A/B
# of a change (`--servers "rules other nginx"`: the two builds take turns within every round,
# so both see the same load; compare their CPU per request).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
build="$repo/build"
duration=5
concurrency="16"
threads=2
rounds=3
kinds="stack-create stack-update stack-mutate apptype-create"
servers="rules allow nginx"
perf_file=""
reviews_only=""
other=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --kinds) kinds=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --perf) perf_file=$2; shift 2 ;;
    --reviews-only) reviews_only=$2; shift 2 ;;
    --other) other=$2; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ " $servers " == *" nginx "* ]] || { echo "--servers must include nginx (the reference)" >&2; exit 2; }
if [[ " $servers " == *" other "* && ! -x "$other" ]]; then
  echo "the server \"other\" needs --other pointing at a kstack_bench_admission_serve" >&2
  exit 2
fi

uid=0b2ae6a2-3f36-4f3a-9d1c-6c1f1f7f3b10
# Writes DIR/<kind>.json (the review) and DIR/<kind>.path (/validate or /mutate).
write_reviews() {
python3 - "$1" "$uid" "$repo/appdefs/spark/apptype.yaml" <<'EOF'
import copy, json, sys
import yaml

work, uid, apptype_file = sys.argv[1:4]
user = {"username": "alice@example.com", "uid": "8c6f3e1a-2b7d-4c55-9a0e-5f2d7b1c9e44",
        "groups": ["analytics-admins", "system:authenticated"],
        "extra": {"scopes": ["openid", "email"]}}

def managed(fields):
    return [{"manager": "kubectl-client-side-apply", "operation": "Update",
             "apiVersion": "kstack.io/v1beta1", "time": "2026-11-20T10:14:07Z",
             "fieldsType": "FieldsV1", "fieldsV1": fields}]

def review(kind, resource, operation, name, namespace, obj, old, options_kind):
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {
        "uid": uid,
        "kind": {"group": "kstack.io", "version": "v1beta1", "kind": kind},
        "resource": {"group": "kstack.io", "version": "v1beta1", "resource": resource},
        "requestKind": {"group": "kstack.io", "version": "v1beta1", "kind": kind},
        "requestResource": {"group": "kstack.io", "version": "v1beta1", "resource": resource},
        "name": name, "namespace": namespace, "operation": operation, "userInfo": user,
        "object": obj, "oldObject": old, "dryRun": False,
        "options": {"kind": options_kind, "apiVersion": "meta.k8s.io/v1",
                    "fieldManager": "kubectl-client-side-apply"}}}

spec = {"app": "spark", "appCatalog": "system", "serviceType": "ClusterIP",
        "namingScheme": "CrNameRole", "roles": [
    {"id": "master", "members": 1,
     "resources": {"requests": {"cpu": "2", "memory": "4Gi"},
                   "limits": {"cpu": "2", "memory": "4Gi"}},
     "storage": {"size": "20Gi", "storageClassName": "standard"},
     "env": [{"name": "SPARK_MODE", "value": "master"}],
     "podLabels": {"tier": "control"},
     "serviceAnnotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}},
    {"id": "worker", "members": 4,
     "resources": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "0"},
                   "limits": {"cpu": "4", "memory": "16Gi"}},
     "storage": {"size": "100Gi", "storageClassName": "fast-ssd"},
     "env": [{"name": "SPARK_MODE", "value": "worker"},
             {"name": "SPARK_WORKER_CORES", "value": "4"}],
     "nodeSelector": {"node-role.example.com/compute": "true"},
     "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "spark",
                      "effect": "NoSchedule"}],
     "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 100, "podAffinityTerm": {
             "labelSelector": {"matchLabels": {"kstack.io/role": "worker"}},
             "topologyKey": "kubernetes.io/hostname"}}]}}}]}
applied = json.dumps({"apiVersion": "kstack.io/v1beta1", "kind": "Stack",
                      "metadata": {"name": "spark-prod", "namespace": "analytics"},
                      "spec": spec}, separators=(",", ":")) + "\n"
stack = {"apiVersion": "kstack.io/v1beta1", "kind": "Stack", "metadata": {
    "name": "spark-prod", "namespace": "analytics",
    "uid": "d2b1a6c4-7e0f-4e8b-8a3d-1c9f5e2b7a60", "creationTimestamp": "2026-11-20T10:14:07Z",
    "labels": {"team": "data", "env": "prod"},
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied},
    "managedFields": managed({"f:metadata": {"f:annotations": {
        ".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
        "f:labels": {".": {}, "f:env": {}, "f:team": {}}},
        "f:spec": {".": {}, "f:app": {}, "f:roles": {}, "f:serviceType": {}}})},
    "spec": spec}

# UPDATE: the stored Stack (defaulted, with status and finalizer) had 2 workers; now 4.
old = copy.deepcopy(stack)
old["metadata"].update({"resourceVersion": "48213", "generation": 3,
                        "finalizers": ["kstack.io/cleanup"]})
old["spec"]["roles"][1]["members"] = 2
old["status"] = {"state": "Ready", "observedGeneration": 3}
new = copy.deepcopy(old)
new["spec"]["roles"][1]["members"] = 4

with open(apptype_file) as f:
    apptype = yaml.safe_load(f)
apptype["metadata"] = {"name": "spark-next", "namespace": "kstack-system",
                       "uid": "5d0c1f8e-9a7b-4c3d-8e2f-1a6b7c8d9e0f",
                       "creationTimestamp": "2026-11-20T10:14:07Z",
                       "managedFields": managed({"f:spec": {".": {}, "f:roles": {}}})}

kinds = {
    "stack-create": ("/validate", review("Stack", "stacks", "CREATE", "spark-prod", "analytics",
                                         stack, None, "CreateOptions")),
    "stack-update": ("/validate", review("Stack", "stacks", "UPDATE", "spark-prod", "analytics",
                                         new, old, "UpdateOptions")),
    "stack-mutate": ("/mutate", review("Stack", "stacks", "CREATE", "spark-prod", "analytics",
                                       stack, None, "CreateOptions")),
    "apptype-create": ("/validate", review("AppType", "apptypes", "CREATE", "spark-next",
                                           "kstack-system", apptype, None, "CreateOptions")),
}
for kind, (path, body) in kinds.items():
    with open(f"{work}/{kind}.json", "w") as f:
        json.dump(body, f, separators=(",", ":"))
    with open(f"{work}/{kind}.path", "w") as f:
        f.write(path)
EOF
}
if [[ -n "$reviews_only" ]]; then
  mkdir -p "$reviews_only"
  write_reviews "$reviews_only"
  exit 0
fi

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v openssl >/dev/null || missing+=(openssl)
command -v curl >/dev/null || missing+=(curl)
command -v ss >/dev/null || missing+=(iproute2)  # ss: how nginx split the connections
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-upgrade \
    "${missing[@]}" >/dev/null
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

serve="$build/bench/kstack_bench_admission_serve"
[[ -x "$serve" ]] || serve="$build/kstack_bench_admission_serve"
if [[ ! -x "$serve" ]]; then
  echo "building kstack_bench_admission_serve in $build" >&2
  ninja -C "$build" -j2 kstack_bench_admission_serve >/dev/null
  serve="$build/bench/kstack_bench_admission_serve"
fi

work=$(mktemp -d /tmp/kstack-admission-bench-XXXXXX)
declare -A pid=()
cleanup() {
  for p in "${pid[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

# ---- certificate, requests, answer --------------------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
  -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null

write_reviews "$work"
answer="{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"$uid\",\"allowed\":true}}"

for kind in $kinds; do
  [[ -f "$work/$kind.json" ]] || { echo "unknown kind $kind" >&2; exit 2; }
  cat >"$work/$kind.lua" <<EOF
wrk.method = "POST"
local f = assert(io.open("$work/$kind.json", "rb"))
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
local threads = {}
function setup(thread) table.insert(threads, thread) end
denied = 0
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"allowed":true', 1, true) then denied = denied + 1 end
end
done = function(summary, latency, requests)
  local d = 0
  for _, t in ipairs(threads) do d = d + t:get("denied") end
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout, d))
end
EOF
done

# ---- servers ------------------------------------------------------------------------------------
declare -A port=()
for server in $servers; do
  [[ "$server" == nginx ]] && continue
  binary=$serve handler=$server
  case "$server" in
    rules | allow) ;;
    other) binary=$other handler=rules ;;
    *) echo "unknown server $server" >&2; exit 2 ;;
  esac
  "$binary" --cert "$work/tls.crt" --key "$work/tls.key" --port 0 --threads "$threads" \
    --handler "$handler" --appdefs "$repo/appdefs" >"$work/$server.out" 2>"$work/$server.err" &
  pid[$server]=$!
  for _ in $(seq 200); do grep -q '^listening on' "$work/$server.out" && break; sleep 0.05; done
  port[$server]=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$work/$server.out")
  [[ -n "${port[$server]}" ]] || { cat "$work/$server.out" "$work/$server.err" >&2; exit 1; }
done
[[ -s "$work/rules.err" ]] && cat "$work/rules.err"

port[nginx]=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx"
cat >"$work/nginx.conf" <<EOF
worker_processes $threads;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  keepalive_requests 10000000;
  client_max_body_size 3m;
  client_body_buffer_size 64k;
  server {
    listen 127.0.0.1:${port[nginx]} ssl;
    ssl_certificate $work/tls.crt;
    ssl_certificate_key $work/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {
      default_type application/json;
      return 200 '$answer';
    }
  }
}
EOF
"$nginx_bin" -c "$work/nginx.conf" -e "$work/nginx/error.log" 2>"$work/nginx/start.log" &
pid[nginx]=$!
for _ in $(seq 100); do [[ -s "$work/nginx.pid" ]] && break; sleep 0.05; done
[[ -s "$work/nginx.pid" ]] || { cat "$work/nginx/start.log" "$work/nginx/error.log" >&2; exit 1; }

# ---- every server answers every kind with "allowed":true ---------------------------------------
for kind in $kinds; do
  for server in $servers; do
    out=$(curl -sS --cacert "$work/tls.crt" -H 'Content-Type: application/json' \
      --data-binary "@$work/$kind.json" "https://127.0.0.1:${port[$server]}$(cat "$work/$kind.path")")
    if [[ "$out" != *'"allowed":true'* ]]; then
      echo "$server denied $kind: $out" >&2
      exit 1
    fi
  done
done

# ---- runs ---------------------------------------------------------------------------------------
# CPU ticks (utime + stime) of a process and its children (nginx's workers).
cpu_ticks() {
  local total=0 p
  for p in $1 $(pgrep -P "$1" || true); do
    # Fields 14 and 15 after the command name (which may hold spaces) in parentheses.
    total=$((total + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
  done
  echo "$total"
}
hz=$(getconf CLK_TCK)

# nginx's workers race to accept, so how they split the connections changes from run to run
# (16 connections over 2 workers, one series of 12 runs: 8/8 55.5k-61.6k req/s, 3/13 49.3k-50.8k,
# all 16 on one worker 43.2k), while kstack's server deals connections out in turn. The
# reference is nginx with its connections spread as evenly: a run whose split is uneven is
# stopped once every connection is open and started again, up to 50 times (an even split comes
# one time in four or so); the split is kept.
# nginx's connections per worker, e.g. "8/8" (sorted), once `want` are open (3 s at most).
nginx_split() {
  local want=$1 split="" deadline=$((SECONDS + 3))
  while ((SECONDS < deadline)); do
    split=$(ss -tnpH state established "( sport = :${port[nginx]} )" | grep -o 'pid=[0-9]*' |
      sort | uniq -c | awk '{ print $1 }' | sort -n | paste -sd/)
    (( $(tr '/' '+' <<<"${split:-0}") >= want )) && break
    sleep 0.05
  done
  echo "${split:-none}"
}
# Waits (3 s at most) until nginx holds no connection: those of a stopped run would be counted
# with the next run's.
nginx_idle() {
  local deadline=$((SECONDS + 3))
  while ((SECONDS < deadline)) &&
    ss -tnH state established "( sport = :${port[nginx]} )" | grep -q .; do
    sleep 0.05
  done
}
# Whether SPLIT spreads CONNECTIONS over the workers as evenly as they divide.
even_split() {
  local -a n
  IFS=/ read -r -a n <<<"$1"
  local workers=$((threads < $2 ? threads : $2))
  ((${#n[@]} == workers && n[${#n[@]} - 1] - n[0] <= 1))
}

# run SERVER KIND CONNECTIONS -> appends "server kind conns req/s p50_ms p99_ms cpu_us errors split"
run() {
  local server=$1 kind=$2 connections=$3 wrk_threads=$(( $3 < 2 ? $3 : 2 ))
  local before after line split="-" attempt wrk_pid
  for ((attempt = 1; ; attempt++)); do
    before=$(cpu_ticks "${pid[$server]}")
    wrk -t "$wrk_threads" -c "$connections" -d "${duration}s" -s "$work/$kind.lua" \
      "https://127.0.0.1:${port[$server]}$(cat "$work/$kind.path")" >"$work/wrk.out" &
    wrk_pid=$!
    if [[ "$server" == nginx ]]; then
      split=$(nginx_split "$connections")
      if ! even_split "$split" "$connections" && ((attempt < 50)); then
        kill "$wrk_pid" && wait "$wrk_pid" || true
        nginx_idle
        continue
      fi
    fi
    wait "$wrk_pid"
    after=$(cpu_ticks "${pid[$server]}")
    break
  done
  line=$(grep '^RESULT' "$work/wrk.out")
  # RESULT requests duration_us p50_us p99_us errors denied
  awk -v s="$server" -v k="$kind" -v c="$connections" -v t=$((after - before)) -v hz="$hz" \
    -v sp="$split" \
    '{ printf "%s %s %s %.0f %.3f %.3f %.1f %d %s\n", s, k, c, $2 / ($3 / 1e6), $4 / 1000, $5 / 1000,
       ($2 > 0 ? t * 1e6 / hz / $2 : 0), $6 + $7, sp }' <<<"$line" >>"$work/results"
}

echo "admission bench: TLS keep-alive, ${duration}s per point, $rounds interleaved rounds (medians)," \
  "kstack threads = nginx workers = $threads, $(nproc) cores"
for kind in $kinds; do
  echo "  $kind: POST $(cat "$work/$kind.path"), $(wc -c <"$work/$kind.json") B"
done
if [[ -n "$perf_file" ]]; then
  # KSTACK_PERF_ARGS="--call-graph dwarf -F 499" attributes time to callers without frame
  # pointers (Release builds omit them).
  perf record ${KSTACK_PERF_ARGS:--g} -o "$perf_file" -p "${pid[rules]}" 2>"$work/perf.err" &
  pid[perf]=$!
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  for c in $concurrency; do
    for kind in $kinds; do
      for server in $servers; do run "$server" "$kind" "$c"; done
    done
  done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n "$perf_file" ]]; then
  kill -INT "${pid[perf]}" && wait "${pid[perf]}" || true
  unset 'pid[perf]'
  echo "perf data: $perf_file (perf report -i $perf_file --no-children)"
fi

python3 - "$work/results" "$kinds" "$servers" "$concurrency" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
kinds, servers, conns = sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()
def med(s, k, c, i):
    return statistics.median(float(r[i]) for r in rows if r[:3] == [s, k, c])
print(f"{'kind':<15} {'conns':>5} {'server':<6} | {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
      f"{'CPU us/req':>10} {'errors':>6} | {'x nginx':>7}")
print("-" * 86)
for c in conns:
    for k in kinds:
        nginx = med("nginx", k, c, 3)
        for s in servers:
            errors = sum(int(r[7]) for r in rows if r[:3] == [s, k, c])
            rps = med(s, k, c, 3)
            print(f"{k:<15} {c:>5} {s:<6} | {rps:>8.0f} {med(s, k, c, 4):>8.3f} "
                  f"{med(s, k, c, 5):>8.3f} {med(s, k, c, 6):>10.1f} {errors:>6} | "
                  f"{rps / nginx if nginx else 0:>7.2f}")
splits = [r[8] for r in rows if r[0] == "nginx"]
print("nginx's connections per worker, run by run: " + " ".join(splits))
EOF
