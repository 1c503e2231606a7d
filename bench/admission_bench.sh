#!/usr/bin/env bash
# Admission webhook throughput and latency over TLS keep-alive, side by side with nginx serving a
# static JSON answer over TLS on the same machine (the reference ceiling for "TLS + HTTP/1.1").
#
# wrk POSTs a real Stack AdmissionReview (as kube-apiserver sends it) to kstack's /validate
# (bench/admission/serve.cpp: the real server, decoding and encoding every review, with a
# handler that allows everything) and the same body to nginx (`return 200` with the answer kstack
# gives), at each concurrency, and prints req/s, p50 and p99 for both and the ratio kstack/nginx.
#
#   bench/admission_bench.sh [--build DIR] [--duration SECONDS] [--concurrency "1 8 32 64"]
#                            [--threads N]
#
# --threads: kstack server threads = nginx worker processes (default 2). wrk runs on the same
# cores (min(concurrency, 2) threads), so absolute figures depend on the machine; the ratio is
# the point. Installs wrk and nginx-light from Debian when missing (needs root).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
build="$repo/build"
duration=5
concurrency="1 8 32 64"
threads=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v openssl >/dev/null || missing+=(openssl)
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
kstack_pid=""
nginx_pid=""
cleanup() {
  [[ -n "$kstack_pid" ]] && kill "$kstack_pid" 2>/dev/null && wait "$kstack_pid" 2>/dev/null
  [[ -n "$nginx_pid" ]] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# ---- certificate, request, answer -------------------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
  -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null

uid=0b2ae6a2-3f36-4f3a-9d1c-6c1f1f7f3b10
# A Stack CREATE as kube-apiserver 1.20 sends it (managedFields included).
cat >"$work/review.json" <<EOF
{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"$uid","kind":{"group":"kstack.io","version":"v1beta1","kind":"Stack"},"resource":{"group":"kstack.io","version":"v1beta1","resource":"stacks"},"requestKind":{"group":"kstack.io","version":"v1beta1","kind":"Stack"},"requestResource":{"group":"kstack.io","version":"v1beta1","resource":"stacks"},"name":"spark-prod","namespace":"analytics","operation":"CREATE","userInfo":{"username":"alice@example.com","uid":"8c6f3e1a-2b7d-4c55-9a0e-5f2d7b1c9e44","groups":["analytics-admins","system:authenticated"],"extra":{"scopes":["openid","email"]}},"object":{"apiVersion":"kstack.io/v1beta1","kind":"Stack","metadata":{"name":"spark-prod","namespace":"analytics","uid":"d2b1a6c4-7e0f-4e8b-8a3d-1c9f5e2b7a60","creationTimestamp":"2026-11-20T10:14:07Z","labels":{"team":"data","env":"prod"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"kstack.io/v1beta1\",\"kind\":\"Stack\",\"metadata\":{\"name\":\"spark-prod\",\"namespace\":\"analytics\"},\"spec\":{\"app\":\"spark312\"}}\n"},"managedFields":[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"kstack.io/v1beta1","time":"2026-11-20T10:14:07Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:env":{},"f:team":{}}},"f:spec":{".":{},"f:app":{},"f:roles":{},"f:serviceType":{}}}}]},"spec":{"app":"spark312","appCatalog":"local","serviceType":"ClusterIP","namingScheme":"CrNameRole","roles":[{"id":"controller","members":1,"resources":{"requests":{"cpu":"2","memory":"4Gi"},"limits":{"cpu":"2","memory":"4Gi"}},"storage":{"size":"20Gi","storageClassName":"standard"},"env":[{"name":"SPARK_MODE","value":"master"}],"podLabels":{"tier":"control"}},{"id":"worker","members":4,"resources":{"requests":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":"0"},"limits":{"cpu":"4","memory":"16Gi"}},"storage":{"size":"100Gi","storageClassName":"fast-ssd"},"env":[{"name":"SPARK_MODE","value":"worker"},{"name":"SPARK_WORKER_CORES","value":"4"}],"nodeSelector":{"node-role.example.com/compute":"true"},"tolerations":[{"key":"dedicated","operator":"Equal","value":"spark","effect":"NoSchedule"}],"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"labelSelector":{"matchLabels":{"kstack.io/role":"worker"}},"topologyKey":"kubernetes.io/hostname"}}]}}},{"id":"jupyter","members":1,"resources":{"requests":{"cpu":"1","memory":"2Gi"}},"serviceAnnotations":{"service.beta.kubernetes.io/aws-load-balancer-internal":"true"}}]}},"oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-client-side-apply"}}}
EOF
answer="{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"$uid\",\"allowed\":true}}"

cat >"$work/post.lua" <<EOF
wrk.method = "POST"
local f = assert(io.open("$work/review.json", "rb"))
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
EOF

# ---- servers ------------------------------------------------------------------------------------
"$serve" --cert "$work/tls.crt" --key "$work/tls.key" --port 0 --threads "$threads" >"$work/kstack.out" 2>&1 &
kstack_pid=$!
for _ in $(seq 100); do grep -q '^listening on' "$work/kstack.out" && break; sleep 0.05; done
kstack_port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$work/kstack.out")
[[ -n "$kstack_port" ]] || { cat "$work/kstack.out" >&2; exit 1; }

nginx_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
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
    listen 127.0.0.1:$nginx_port ssl;
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
nginx_pid=$!
for _ in $(seq 100); do [[ -s "$work/nginx.pid" ]] && break; sleep 0.05; done
[[ -s "$work/nginx.pid" ]] || { cat "$work/nginx/start.log" "$work/nginx/error.log" >&2; exit 1; }

# ---- runs ---------------------------------------------------------------------------------------
# run URL CONNECTIONS -> "req/s p50_ms p99_ms errors"
run() {
  local url=$1 connections=$2 wrk_threads=$(( $2 < 2 ? $2 : 2 ))
  local line
  line=$(wrk -t "$wrk_threads" -c "$connections" -d "${duration}s" -s "$work/post.lua" "$url" | grep '^RESULT')
  # RESULT requests duration_us p50_us p99_us errors
  awk '{ printf "%.0f %.3f %.3f %d\n", $2 / ($3 / 1e6), $4 / 1000, $5 / 1000, $6 }' <<<"$line"
}

echo "admission bench: POST $(wc -c <"$work/review.json") B Stack AdmissionReview, TLS keep-alive," \
  "${duration}s per point, kstack threads = nginx workers = $threads, $(nproc) cores"
printf '%-5s | %10s %9s %9s %6s | %10s %9s %9s %6s | %12s\n' conns "kstack r/s" "p50 ms" "p99 ms" errs \
  "nginx r/s" "p50 ms" "p99 ms" errs "kstack/nginx"
printf -- '------+-------------------------------------+-------------------------------------+-------------\n'
for c in $concurrency; do
  read -r k_rps k_p50 k_p99 k_err < <(run "https://127.0.0.1:$kstack_port/validate" "$c")
  read -r n_rps n_p50 n_p99 n_err < <(run "https://127.0.0.1:$nginx_port/validate" "$c")
  ratio=$(awk -v k="$k_rps" -v n="$n_rps" 'BEGIN { printf "%.2f", (n > 0 ? k / n : 0) }')
  printf '%-5s | %10s %9s %9s %6s | %10s %9s %9s %6s | %12s\n' "$c" "$k_rps" "$k_p50" "$k_p99" "$k_err" \
    "$n_rps" "$n_p50" "$n_p99" "$n_err" "$ratio"
done
