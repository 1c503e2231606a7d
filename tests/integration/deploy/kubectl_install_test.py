#!/usr/bin/env python3
"""docs/quick-start.md's kubectl install and uninstall, run as written against the test control
plane (Kubernetes 1.20.2, `kstack-testenv up`; ctest label integration), with kubectl 1.20 (the
testenv's) and kubectl 1.31 (scripts/get-kube-tools.sh).

The commands are read from the guide itself: the fenced block after each
`<!-- tested: NAME ... -->` marker, one command per line, `# comment` dropped. So the guide
cannot drift from what works:

  * `install-1.20` installs kstack on 1.20: every object of deploy/ but the PodDisruptionBudget;
  * `uninstall` removes the operator, its Service, webhooks and permissions and keeps the CRDs,
    the kstack-system namespace and every Stack and AppType; a line marked "1.21 and later" is
    skipped only because this server does not serve policy/v1;
  * and the plain `kubectl apply -k deploy/` of the guide does fail on 1.20, naming the
    PodDisruptionBudget (the reason the 1.20 path exists).

No operator runs (the deploy/ e2e test runs it under these same objects); Stacks are created
while kstack is uninstalled, as in helm_install_test.py.
Usage: kubectl_install_test.py <repository root> <kstack-testenv binary>
"""
import json
import os
import re
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helm"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "unit", "deploy"))
import kube_tools  # noqa: E402
from helm_install_test import check, run_on_control_plane  # noqa: E402

NS = "kstack-system"
ONLY_NEWER = "1.21 and later"


def guide_blocks(root):
    """{name: [command line, ...]} of the guide's tested blocks."""
    text = open(os.path.join(root, "docs", "quick-start.md")).read()
    blocks = {}
    for m in re.finditer(r"<!-- tested: ([\w.-]+)[^>]*-->\s*```sh\n(.*?)```", text, re.S):
        blocks[m.group(1)] = [line.strip() for line in m.group(2).splitlines() if line.strip()]
    for name in ("install-1.20", "uninstall"):
        check(name in blocks, f"docs/quick-start.md has no tested block {name}")
    return blocks


def run_block(c, kubectl, lines, skip_newer):
    """Runs each `kubectl ...` line of a block with the given kubectl binary; returns how many
    lines were skipped as needing Kubernetes 1.21 or later."""
    skipped = 0
    for line in lines:
        command, _, comment = line.partition("#")
        argv = shlex.split(command)
        check(argv and argv[0] == "kubectl", f"not a kubectl command in a tested block: {line}")
        if ONLY_NEWER in comment and skip_newer:
            skipped += 1
            continue
        kube_tools.run(kubectl, ["--kubeconfig", c.kubeconfig, *argv[1:]])
    return skipped


def installed(c):
    return {
        "crds": c.names("crd"),
        "namespace": c.names("namespace", "--field-selector", f"metadata.name={NS}"),
        "deployments": c.names("deployment", "-n", NS),
        "services": c.names("service", "-n", NS),
        "serviceaccounts": [n for n in c.names("serviceaccount", "-n", NS) if n != "default"],
        "validating": c.names("validatingwebhookconfiguration"),
        "mutating": c.names("mutatingwebhookconfiguration"),
        "clusterroles": [n for n in c.names("clusterrole") if n.startswith("kstack")],
        "pdbs": c.names("poddisruptionbudgets.v1beta1.policy", "-n", NS),
    }


CRDS = ["apptypes.kstack.io", "kstackconfigs.kstack.io", "stacks.kstack.io"]


def install_uninstall_cycle(c, kubectl, blocks, label, stack_ns):
    run_block(c, kubectl, blocks["install-1.20"], skip_newer=True)
    got = installed(c)
    want = {"crds": CRDS, "namespace": [NS], "deployments": ["kstack-operator"],
            "services": ["kstack-webhook"], "serviceaccounts": ["kstack"],
            "validating": ["kstack-validating-webhook"], "mutating": ["kstack-mutating-webhook"],
            "clusterroles": ["kstack-operator"], "pdbs": []}
    check(got == want, f"{label}: after install-1.20: {got}, expected {want}")

    skipped = run_block(c, kubectl, blocks["uninstall"], skip_newer=True)
    check(skipped == 1, f"{label}: uninstall: {skipped} lines marked '{ONLY_NEWER}' (one: pdb)")
    got = installed(c)
    want = {"crds": CRDS, "namespace": [NS], "deployments": [], "services": [],
            "serviceaccounts": [], "validating": [], "mutating": [], "clusterroles": [],
            "pdbs": []}
    check(got == want, f"{label}: after uninstall: {got}, expected {want}")

    # Stacks and AppTypes made while kstack is uninstalled outlive another install/uninstall.
    name = f"redis-{label}"
    for path, ns in (("apptype.yaml", None), ("stack.yaml", stack_ns)):
        text = open(os.path.join(c.root, "appdefs", "redis", path)).read()
        text = re.sub(r"(?m)^  name: redis$", f"  name: {name}", text, count=1)
        text = re.sub(r"(?m)^  app: redis$", f"  app: {name}", text)  # the Stack's AppType
        tmp = os.path.join(c.workdir, f"{label}-{path}")
        open(tmp, "w").write(text)
        c.create_when_no_webhook_calls(tmp, *(["-n", ns] if ns else []))
    run_block(c, kubectl, blocks["install-1.20"], skip_newer=True)
    run_block(c, kubectl, blocks["uninstall"], skip_newer=True)
    check(name in c.names("stacks", "-n", stack_ns), f"{label}: the Stack did not survive")
    check(name in c.names("apptypes", "-A"), f"{label}: the AppType did not survive")


def plain_apply_k_fails_on_1_20(c, kubectl):
    try:
        kube_tools.run(kubectl, ["--kubeconfig", c.kubeconfig, "apply", "-k", "deploy/"])
    except kube_tools.ToolError as e:
        check("PodDisruptionBudget" in str(e) and "policy/v1" in str(e),
              f"kubectl apply -k deploy/ failed on 1.20, but not for the PDB: {e}")
        return
    raise AssertionError("kubectl apply -k deploy/ succeeded on 1.20: the 1.20 path of "
                         "docs/quick-start.md would not be needed")


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    root, binary = os.path.abspath(argv[1]), argv[2]
    # The test control plane's own kubectl (tests/testenv/get-binaries.sh puts it there).
    testenv = os.environ.get("KSTACK_TESTENV_DIR",
                             os.path.join(os.path.expanduser("~"), ".cache", "kstack-testenv"))
    kubectl_1_20 = os.path.join(testenv, "bin", "kubectl")
    os.chdir(root)  # the guide's commands are run from the checkout's root
    blocks = guide_blocks(root)

    def steps(c):
        c.workdir = os.path.dirname(c.kubeconfig)
        kubectl_1_31 = c.kubectl_bin
        policy = json.loads(c.kubectl("get", "--raw", "/apis/policy"))
        check(policy.get("preferredVersion", {}).get("version") == "v1beta1",
              f"the test control plane serves {policy}: not the 1.20 this test is about")
        c.kubectl("create", "namespace", "demo")
        for label, kubectl in (("kubectl-1.20", kubectl_1_20), ("kubectl-1.31", kubectl_1_31)):
            install_uninstall_cycle(c, kubectl, blocks, label, "demo")
            print(f"kubectl_install_test: {label}: install-1.20 and uninstall as written: ok")
            plain_apply_k_fails_on_1_20(c, kubectl)
            print(f"kubectl_install_test: {label}: plain apply -k refused for the PDB: ok")
            run_block(c, kubectl, blocks["uninstall"], skip_newer=True)

    return run_on_control_plane("kubectl_install_test", root, binary, steps)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
