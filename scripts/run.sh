#!/usr/bin/env bash
# kstack's main command: run kstack end to end on this machine.
#
#  1. installs what is missing (Debian packages, the control-plane binaries, kubectl 1.31, the
#     build);
#  2. enters the pod network the e2e tests run in (`kstack-testenv pod-network`: a network
#     namespace of its own, 10.244.0.1/16 on its loopback; the host's network is not touched)
#     and starts there a local Kubernetes control plane (etcd, kube-apiserver,
#     kube-controller-manager v1.20.2) with kstack's CRDs installed, the cluster DNS
#     (dnsmasq: cluster.local on 10.244.0.1) and a simulated node standing in for the kubelet,
#     which runs the app's image (appdefs/<app>/image) with pod IPs in 10.244.1.0/24;
#  3. installs kstack's namespace and least-privilege RBAC from deploy/ and runs
#     `kstack operator` with the deploy/ ServiceAccount's token (not as admin), its admission
#     webhook registered with the API server;
#  4. publishes the appdefs/ catalog (AppTypes + setup packages as ConfigMaps) and creates the
#     example Stack (redis: a primary and two replicas running Debian's redis-server, each
#     configured by its setup package, the replicas replicating the primary);
#  5. waits until the Stack is Ready and shows `kubectl get stacks,statefulsets,pods`;
#  6. (redis) writes a key through the primary and reads it back through a replica, with
#     redis-cli exec'ed in the pods (`kubectl exec`).
#
# Then it keeps everything running until Ctrl-C (it prints how to reach the cluster from
# another shell); with --check it stops everything and exits 0 if the Stack became Ready and
# the key was read back. KSTACK_RUN_APP=etcd (any appdefs/ app) picks another example (the
# data check is Redis's).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
  esac
done
app=${KSTACK_RUN_APP:-redis}
[ -f "$root/appdefs/$app/stack.yaml" ] || { echo "run: no appdefs/$app/stack.yaml" >&2; exit 2; }

# Steps 1 and 2: set up, then run the rest of this script again inside the pod network.
if [ -z "${KSTACK_RUN_IN_POD_NETWORK:-}" ]; then
  bash "$root/scripts/install-deps.sh"
  bash "$root/tests/testenv/get-binaries.sh" >/dev/null
  KSTACK_RUN_BUILD=$(bash "$root/scripts/build.sh")
  KSTACK_RUN_KUBE_TOOLS=$(bash "$root/scripts/get-kube-tools.sh")
  export KSTACK_RUN_BUILD KSTACK_RUN_KUBE_TOOLS KSTACK_RUN_IN_POD_NETWORK=1
  echo "=== the pod network: a network namespace of its own, 10.244.0.1/16 on its loopback"
  exec "$KSTACK_RUN_BUILD/tests/testenv/kstack-testenv" pod-network -- bash "$0" "$@"
fi
build=$KSTACK_RUN_BUILD
bin=$(bash "$root/tests/testenv/get-binaries.sh")
kubectl_bin="$bin/kubectl"
exec_kubectl="$KSTACK_RUN_KUBE_TOOLS/kubectl" # >= 1.30: exec over WebSocket, as the node serves
kstack="$build/cmd/kstack"

work=$(mktemp -d -t kstack-run.XXXXXX)
pids=()
stop() {
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM

free_port() {  # a loopback port nothing listens on
  local p
  while :; do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
}
wait_for() {  # wait_for <seconds> <what> <command...>: poll a cheap check, bounded
  local seconds=$1 what=$2; shift 2
  for _ in $(seq 1 $((seconds * 4))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  echo "run: $what did not happen within ${seconds}s" >&2
  return 1
}

echo "=== control plane (CRDs installed before the controller-manager starts) and cluster DNS"
"$build/tests/testenv/kstack-testenv" up --controller-manager --cluster-dns --dir "$work/cluster" \
  --apply "$root/deploy/crds" >"$work/testenv.log" 2>&1 &
pids+=($!)
wait_for 180 "control plane start" grep -q '^running;' "$work/testenv.log" || {
  cat "$work/testenv.log" >&2; exit 1; }
admin=$(sed -n 's/^kubeconfig: *//p' "$work/testenv.log" | head -n1)
server=$(sed -n 's/^server: *//p' "$work/testenv.log" | head -n1)
k() { "$kubectl_bin" --kubeconfig "$admin" "$@"; }
echo "server $server"

# The app's image, under the tag its AppType names (as the e2e nodes register every appdefs
# image; docs/nodesim.md "Images").
images=()
if [ -f "$root/appdefs/$app/image/Dockerfile" ]; then
  tag=$(sed -n 's/^ *defaultImageRepoTag: *//p' "$root/appdefs/$app/apptype.yaml" | head -n1)
  images+=("--image=$tag=$root/appdefs/$app/image")
fi
echo "=== simulated node (pod IPs 10.244.1.0/24, cluster DNS 10.244.0.1) ${images[*]}"
mkdir -p "$work/node"
"$build/tests/nodesim/kstack-nodesim" --kubeconfig "$admin" --node-name kstack-node-0 \
  --state-dir "$work/node" --log-level warn --pod-cidr 10.244.1.0/24 --cluster-dns 10.244.0.1 \
  "${images[@]}" >"$work/nodesim.log" 2>&1 &
pids+=($!)
wait_for 60 "node kstack-node-0 Ready" sh -c \
  "'$kubectl_bin' --kubeconfig '$admin' get node kstack-node-0 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -q True"

echo "=== kstack: namespace, RBAC (deploy/), the operator as ServiceAccount kstack-system/kstack"
k apply -f "$root/deploy/namespace.yaml" -f "$root/deploy/rbac.yaml"
token_secret() {
  k -n kstack-system get secrets \
    -o jsonpath='{range .items[?(@.type=="kubernetes.io/service-account-token")]}{.metadata.annotations.kubernetes\.io/service-account\.name}={.metadata.name}{"\n"}{end}' |
    sed -n 's/^kstack=//p' | head -n1
}
wait_for 60 "the ServiceAccount token" test -n "$(token_secret)"
secret=$(token_secret)
wait_for 30 "the ServiceAccount token" test -n "$(token_secret)"
token=$(k -n kstack-system get secret "$secret" -o jsonpath='{.data.token}' | base64 -d)
ca=$(k config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
operator_kubeconfig="$work/operator.kubeconfig"
umask 077
cat >"$operator_kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: kstack
  user: {token: "$token"}
contexts:
- name: kstack
  context: {cluster: local, user: kstack, namespace: kstack-system}
current-context: kstack
EOF
umask 022

webhook_port=$(free_port)
probe_port=$(free_port)
# The API server reaches the webhook by URL here (there is no Service network); the operator
# writes its CA into these configurations.
for kind in Validating Mutating; do
  lower=$(echo "$kind" | tr 'A-Z' 'a-z')
  path=$([ "$kind" = Validating ] && echo validate || echo mutate)
  ops=$([ "$kind" = Validating ] && echo "[CREATE, UPDATE, DELETE]" || echo "[CREATE, UPDATE]")
  k apply -f - <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ${kind}WebhookConfiguration
metadata: {name: kstack-${lower}-webhook}
webhooks:
- name: ${path}.kstack.io
  admissionReviewVersions: [v1, v1beta1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 10
  clientConfig: {url: "https://127.0.0.1:${webhook_port}/${path}"}
  rules:
  - apiGroups: [kstack.io]
    apiVersions: [v1beta1]
    operations: ${ops}
    resources: [apptypes, stacks, stacks/status, kstackconfigs]
    scope: "*"
EOF
done

"$kstack" operator --kubeconfig "$operator_kubeconfig" --namespace kstack-system \
  --webhook-port "$webhook_port" --webhook-url-host 127.0.0.1 --bind-address 127.0.0.1 \
  --metrics-port "$probe_port" --probe-port "$probe_port" --poll-interval-ms 500 \
  --log-format text >"$work/operator.log" 2>&1 &
pids+=($!)
started=$(date +%s%N)
wait_for 60 "operator /readyz" curl -fsS "http://127.0.0.1:$probe_port/readyz" || {
  tail -n 30 "$work/operator.log" >&2; exit 1; }
echo "operator ready after $((($(date +%s%N) - started) / 1000000)) ms (log: $work/operator.log)"
wait_for 30 "the webhook's caBundle" sh -c \
  "'$kubectl_bin' --kubeconfig '$admin' get validatingwebhookconfiguration kstack-validating-webhook -o jsonpath='{.webhooks[0].clientConfig.caBundle}' | grep -q ."

echo "=== appdefs catalog into kstack-system, then the example Stack '$app' in namespace demo"
bash "$root/appdefs/build-packages.sh" "$work/appdefs" >/dev/null
k apply -k "$work/appdefs"
k create namespace demo --dry-run=client -o yaml | k apply -f -
k -n demo apply -f "$root/appdefs/$app/stack.yaml"
status=0
created=$(date +%s%N)
k -n demo wait --for=condition=Ready "stack/$app" --timeout=300s || status=$?
[ "$status" -ne 0 ] || echo "Stack $app Ready after $((($(date +%s%N) - created) / 1000000)) ms"
echo "=== kubectl get stacks,statefulsets,pods -n demo"
k -n demo get stacks,statefulsets,pods -o wide
if [ "$status" -ne 0 ]; then
  k -n demo get stack "$app" -o yaml >&2 || true
  tail -n 40 "$work/operator.log" >&2
fi

# Step 6: the data, through the members' daemons (redis-cli by the members' FQDNs).
kx() { "$exec_kubectl" --kubeconfig "$admin" -n demo exec "$1" -c app -- "${@:2}"; }
data_check_redis() {
  local primary=redis-primary-0 replica=redis-replica-0 domain="$app.demo.svc.cluster.local"
  local key=kstack:run value got=
  value="written-through-$primary-$(date -u +%H%M%S)"
  echo "=== data: SET $key through $primary: redis-cli -h $primary.$domain set $key $value"
  kx "$primary" redis-cli -h "$primary.$domain" set "$key" "$value" || return 1
  echo "=== data: GET $key through $replica: redis-cli -h $replica.$domain get $key"
  # Replication is asynchronous: a few tries, bounded.
  for _ in $(seq 1 40); do
    got=$(kx "$replica" redis-cli -h "$replica.$domain" get "$key") || got=
    [ "$got" = "$value" ] && break
    sleep 0.25
  done
  echo "$got"
  if [ "$got" != "$value" ]; then
    echo "run: $replica returned '$got', not '$value'" >&2
    return 1
  fi
  echo "read back through $replica: the value written through $primary"
}
if [ "$status" -eq 0 ] && [ "$app" = redis ]; then
  data_check_redis || status=1
fi

if [ "$check" -eq 1 ]; then exit "$status"; fi
if [ "$(id -u)" -eq 0 ]; then enter="nsenter -t $$ -n"; else enter="nsenter -t $$ -U -n --preserve-credentials"; fi
cat <<EOF
running. The cluster lives in this script's network namespace; from another shell:
  $enter $exec_kubectl --kubeconfig $admin -n demo get stacks,pods
Ctrl-C stops everything.
EOF
wait "${pids[0]}"
