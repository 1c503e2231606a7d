#!/usr/bin/env bash
# kstack's main command: run kstack end to end on this machine.
#
#  1. installs what is missing (Debian packages, the control-plane binaries, the build);
#  2. starts a local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager
#     v1.20.2) with kstack's CRDs installed, and a simulated node standing in for the kubelet;
#  3. installs kstack's namespace and least-privilege RBAC from deploy/ and runs
#     `kstack operator` with the deploy/ ServiceAccount's token (not as admin), its admission
#     webhook registered with the API server;
#  4. publishes the appdefs/ catalog (AppTypes + setup packages as ConfigMaps) and creates the
#     example Stack (redis: a primary and two replicas, each configured by its setup package);
#  5. waits until the Stack is Ready and shows `kubectl get stacks,statefulsets,pods`.
#
# Then it keeps everything running until Ctrl-C (KUBECONFIG is printed); with --check it stops
# everything and exits 0 if the Stack became Ready. KSTACK_RUN_APP=etcd (any appdefs/ app)
# picks another example.
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

bash "$root/scripts/install-deps.sh"
bash "$root/tests/testenv/get-binaries.sh" >/dev/null
build=$(bash "$root/scripts/build.sh")
bin=$(bash "$root/tests/testenv/get-binaries.sh")
kubectl_bin="$bin/kubectl"
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

echo "=== control plane (CRDs installed before the controller-manager starts)"
"$build/tests/testenv/kstack-testenv" up --controller-manager --dir "$work/cluster" \
  --apply "$root/deploy/crds" >"$work/testenv.log" 2>&1 &
pids+=($!)
wait_for 180 "control plane start" grep -q '^running;' "$work/testenv.log" || {
  cat "$work/testenv.log" >&2; exit 1; }
admin=$(sed -n 's/^kubeconfig: *//p' "$work/testenv.log" | head -n1)
server=$(sed -n 's/^server: *//p' "$work/testenv.log" | head -n1)
k() { "$kubectl_bin" --kubeconfig "$admin" "$@"; }
echo "server $server"

echo "=== simulated node"
mkdir -p "$work/node"
"$build/tests/nodesim/kstack-nodesim" --kubeconfig "$admin" --node-name kstack-node-0 \
  --state-dir "$work/node" --log-level warn >"$work/nodesim.log" 2>&1 &
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
k -n demo wait --for=condition=Ready "stack/$app" --timeout=300s || status=$?
echo "=== kubectl get stacks,statefulsets,pods -n demo"
k -n demo get stacks,statefulsets,pods
if [ "$status" -ne 0 ]; then
  k -n demo get stack "$app" -o yaml >&2 || true
  tail -n 40 "$work/operator.log" >&2
fi
if [ "$check" -eq 1 ]; then exit "$status"; fi
echo "running; export KUBECONFIG=$admin ; Ctrl-C stops everything"
wait "${pids[0]}"
