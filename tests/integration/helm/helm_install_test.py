#!/usr/bin/env python3
"""The Helm chart deploy/helm/kstack installed with helm 3.17 into the test control plane
(Kubernetes 1.20.2, `kstack-testenv up`; ctest label integration): what the chart promises on
a real API server, which `helm template` alone cannot show.

  * `helm install -n kstack-system --create-namespace` succeeds on 1.20 and leaves the
    PodDisruptionBudget out (policy/v1 is not served there; the templates are rendered against
    the server's discovery);
  * `helm upgrade` keeps the CA bundle the operator writes into the webhook configurations
    (the chart never sets it) while applying a changed value;
  * `helm uninstall` keeps the CRDs, and so Stacks and AppTypes: created while kstack is not
    installed, they survive a further install and uninstall.

No operator runs: the webhook configurations are removed before anything is admitted.
Usage: helm_install_test.py <repository root> <kstack-testenv binary>
"""
import base64
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "unit",
                                "deploy"))
import kube_tools  # noqa: E402

NS = "kstack-system"
START_DEADLINE_S = 180
WEBHOOK_GONE_DEADLINE_S = 30  # the API server's webhook informer drops a deleted configuration


class ControlPlane:
    """`kstack-testenv up` in the background; the kubeconfig once it reports ready."""

    def __init__(self, binary):
        self.proc = subprocess.Popen([binary, "up"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        lines = queue.Queue()  # a reader thread: readline() alone has no deadline

        def read():
            for line in self.proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        self.log = []
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("kstack-testenv up did not report a kubeconfig:\n"
                                     + "".join(self.log))
            self.log.append(line)
            if line.startswith("export KUBECONFIG="):
                self.kubeconfig = line.strip().split("=", 1)[1]
                return

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)


class Cluster:
    def __init__(self, root, tools, kubeconfig):
        self.root, self.kubeconfig = root, kubeconfig
        self.helm_bin = os.path.join(tools, "helm")
        self.kubectl_bin = os.path.join(tools, "kubectl")

    def helm(self, *args):
        return kube_tools.run(self.helm_bin, ["--kubeconfig", self.kubeconfig, *args])

    def kubectl(self, *args):
        return kube_tools.run(self.kubectl_bin, ["--kubeconfig", self.kubeconfig, *args])

    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args))

    def names(self, kind, *args):
        return sorted(i["metadata"]["name"] for i in self.get(kind, *args)["items"])

    def install(self, *flags):
        self.helm("install", "kstack", os.path.join(self.root, "deploy", "helm", "kstack"),
                  "--namespace", NS, *flags)

    def create_when_no_webhook_calls(self, path, *flags):
        """kubectl create, retried while the API server still calls the removed webhook."""
        deadline = time.monotonic() + WEBHOOK_GONE_DEADLINE_S
        while True:
            try:
                return self.kubectl("create", "-f", path, *flags)
            except kube_tools.ToolError as e:
                if "failed calling webhook" not in str(e) or time.monotonic() > deadline:
                    raise
            time.sleep(0.2)  # polling the API server's state, not waiting for a time


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def install_on_1_20_leaves_the_pdb_out(c):
    c.install("--create-namespace")
    manifest_kinds = [line.split(":", 1)[1].strip()
                      for line in c.helm("get", "manifest", "kstack", "-n", NS).splitlines()
                      if line.startswith("kind:")]
    check("Deployment" in manifest_kinds and "PodDisruptionBudget" not in manifest_kinds,
          f"helm install on 1.20 rendered {manifest_kinds}")
    check(c.names("poddisruptionbudgets.v1beta1.policy", "-n", NS) == [],
          "a PodDisruptionBudget exists after installing on 1.20")
    check(c.names("crd") == ["apptypes.kstack.io", "kstackconfigs.kstack.io", "stacks.kstack.io"],
          f"CRDs after install: {c.names('crd')}")


def upgrade_keeps_the_ca_bundle(c):
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nnot checked here\n").decode()
    for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
        c.kubectl("patch", kind, f"kstack-{kind[:-len('webhookconfiguration')]}-webhook",
                  "--type=json", "-p",
                  json.dumps([{"op": "add", "path": "/webhooks/0/clientConfig/caBundle",
                               "value": ca}]))
    c.helm("upgrade", "kstack", os.path.join(c.root, "deploy", "helm", "kstack"), "-n", NS,
           "--set", "webhook.timeoutSeconds=5")
    for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
        hook = c.get(kind, f"kstack-{kind[:-len('webhookconfiguration')]}-webhook")["webhooks"][0]
        check(hook["clientConfig"].get("caBundle") == ca, f"{kind}: caBundle lost by the upgrade")
        check(hook["timeoutSeconds"] == 5, f"{kind}: timeoutSeconds {hook['timeoutSeconds']}")


def uninstall_keeps_crds_and_stacks(c):
    c.helm("uninstall", "kstack", "-n", NS)
    check(len(c.names("crd")) == 3, f"CRDs after uninstall: {c.names('crd')}")
    check(c.names("validatingwebhookconfiguration") == [], "webhook left after uninstall")
    c.kubectl("create", "namespace", "demo")
    c.create_when_no_webhook_calls(os.path.join(c.root, "appdefs", "redis", "apptype.yaml"))
    c.create_when_no_webhook_calls(os.path.join(c.root, "appdefs", "redis", "stack.yaml"),
                                   "-n", "demo")
    c.install()  # the CRDs exist: Helm keeps them as they are
    c.helm("uninstall", "kstack", "-n", NS)
    check(c.names("stacks", "-n", "demo") == ["redis"], "the Stack did not survive uninstall")
    check(c.names("apptypes", "-A") == ["redis"], "the AppType did not survive uninstall")


def run_on_control_plane(name, root, binary, body):
    """Starts `kstack-testenv up`, calls body(Cluster), stops it; 0, or 1 with why it failed."""
    cp = None
    try:
        tools = kube_tools.tools_bin(root)
        cp = ControlPlane(binary)
        body(Cluster(root, tools, cp.kubeconfig))
    except (kube_tools.ToolError, AssertionError) as e:
        print(f"{name}: FAILED: {e}")
        return 1
    finally:
        if cp:
            cp.stop()
    return 0


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2

    def steps(c):
        for step in (install_on_1_20_leaves_the_pdb_out, upgrade_keeps_the_ca_bundle,
                     uninstall_keeps_crds_and_stacks):
            step(c)
            print(f"helm_install_test: {step.__name__.replace('_', ' ')}: ok")

    return run_on_control_plane("helm_install_test", os.path.abspath(argv[1]), argv[2], steps)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
