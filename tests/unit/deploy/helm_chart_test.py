#!/usr/bin/env python3
"""The Helm chart deploy/helm/kstack against the kustomize base deploy/ (ctest, label unit; no
cluster). kubectl 1.31 and helm 3.17 come from scripts/get-kube-tools.sh (kube_tools.py).

Cases (one ctest entry each):
  lint             `helm lint` and `helm lint --strict` pass.
  same-objects     `helm template --include-crds` (release namespace kstack-system,
                   namespace.create=true) renders exactly the objects of `kubectl kustomize
                   deploy/`, field for field. Nothing is normalised: the chart adds no Helm
                   labels. On a difference it prints each differing object as a diff.
  values           another namespace and image: every namespaced object, the webhooks'
                   Service reference and the bindings' subjects follow the namespace, the image
                   is the one given, kstack-system is named nowhere; the default render has no
                   Namespace object; one replica renders no PodDisruptionBudget; Kubernetes
                   1.19 (kubeVersion), an unknown value and an out-of-range one
                   (values.schema.json) are refused.

Usage: helm_chart_test.py <repository root> <case>
"""
import difflib
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_tools  # noqa: E402

CHART = os.path.join("deploy", "helm", "kstack")


def objects(text):
    return [doc for doc in yaml.safe_load_all(text) if doc]


def key(obj):
    meta = obj.get("metadata") or {}
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta.get("name", ""))


def by_key(objs, source):
    keyed = {}
    for obj in objs:
        k = key(obj)
        if k in keyed:
            raise AssertionError(f"{source} renders {fmt_key(k)} twice")
        keyed[k] = obj
    return keyed


def fmt_key(k):
    api_version, kind, namespace, name = k
    return f"{kind} {namespace + '/' if namespace else ''}{name} ({api_version})"


def helm_template(root, tools, namespace, *flags):
    return objects(kube_tools.run(os.path.join(tools, "helm"), [
        "template", "kstack", os.path.join(root, CHART), "--namespace", namespace, *flags]))


def case_lint(root, tools):
    helm = os.path.join(tools, "helm")
    for flags in ([], ["--strict"]):
        out = kube_tools.run(helm, ["lint", *flags, os.path.join(root, CHART)])
        if "1 chart(s) linted, 0 chart(s) failed" not in out:
            raise AssertionError(f"helm lint {' '.join(flags)} did not pass:\n{out}")
    return "helm lint and helm lint --strict pass"


def case_same_objects(root, tools):
    base = by_key(objects(kube_tools.run(os.path.join(tools, "kubectl"),
                                         ["kustomize", os.path.join(root, "deploy")])),
                  "kubectl kustomize deploy/")
    chart = by_key(helm_template(root, tools, "kstack-system", "--include-crds",
                                 "--set", "namespace.create=true"), "helm template")
    problems = []
    for k in sorted(base.keys() - chart.keys()):
        problems.append(f"only in kubectl kustomize deploy/: {fmt_key(k)}")
    for k in sorted(chart.keys() - base.keys()):
        problems.append(f"only in the Helm chart: {fmt_key(k)}")
    for k in sorted(base.keys() & chart.keys()):
        if base[k] != chart[k]:
            diff = difflib.unified_diff(
                yaml.safe_dump(base[k], sort_keys=True).splitlines(),
                yaml.safe_dump(chart[k], sort_keys=True).splitlines(),
                "kubectl kustomize deploy/", f"helm template {CHART}", lineterm="")
            problems.append(f"{fmt_key(k)} differs:\n" + "\n".join(diff))
    if problems:
        raise AssertionError(
            "the Helm chart and the kustomize base render different objects (edit "
            f"{CHART}/templates/ to match deploy/; for a CRD run scripts/sync-helm-crds.sh):\n"
            + "\n".join(problems))
    return f"{len(base)} objects, identical in both renders"


def expect(condition, message, problems):
    if not condition:
        problems.append(message)


def check_namespace_followed(objs, ns, problems):
    for obj in objs:
        k = fmt_key(key(obj))
        if obj["kind"] in ("ServiceAccount", "Role", "RoleBinding", "Service", "Deployment",
                           "PodDisruptionBudget"):
            expect(obj["metadata"].get("namespace") == ns, f"{k}: metadata.namespace is not {ns}",
                   problems)
        if obj["kind"].endswith("WebhookConfiguration"):
            for hook in obj["webhooks"]:
                got = hook["clientConfig"]["service"]["namespace"]
                expect(got == ns, f"{k}: webhook {hook['name']} calls a Service in {got}",
                       problems)
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            for subject in obj["subjects"]:
                expect(subject.get("namespace") == ns,
                       f"{k}: subject {subject['name']} is in {subject.get('namespace')}", problems)


def case_values(root, tools):
    ns, image = "team-a", "registry.example.com/platform/kstack"
    objs = helm_template(root, tools, ns, "--set", "namespace.create=true",
                         "--set", f"image.repository={image}", "--set", "image.tag=1.2.3",
                         "--set", "extraArgs={--workers=8}")
    problems = []
    kinds = {o["kind"]: o for o in objs}
    check_namespace_followed(objs, ns, problems)
    expect(kinds.get("Namespace", {}).get("metadata", {}).get("name") == ns,
           f"no Namespace object named {ns}", problems)
    container = kinds["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    expect(container["image"] == f"{image}:1.2.3", f"image is {container['image']}", problems)
    expect(container["args"] == ["operator", "--log-format=json", "--workers=8"],
           f"args are {container['args']}", problems)
    mentions = [fmt_key(key(o)) for o in objs if "kstack-system" in yaml.safe_dump(o)]
    expect(not mentions, f"kstack-system is still named in {mentions}", problems)

    default = helm_template(root, tools, "kstack-system")
    expect("Namespace" not in {o["kind"] for o in default},
           "the default render has a Namespace object (helm install --create-namespace "
           "creates it; the chart's own would collide)", problems)
    default_image = [o for o in default if o["kind"] == "Deployment"][0][
        "spec"]["template"]["spec"]["containers"][0]["image"]
    expect(default_image == "kstack:0.1.0", f"default image is {default_image}", problems)

    try:
        helm_template(root, tools, "kstack-system", "--kube-version", "1.19.16")
        problems.append("renders for Kubernetes 1.19 (Chart.yaml kubeVersion says >=1.20)")
    except kube_tools.ToolError as e:
        expect("incompatible with Kubernetes v1.19.16" in str(e), f"1.19 refused with {e}",
               problems)

    for bad, said in (("replicas=3", "Additional property replicas is not allowed"),
                      ("webhook.timeoutSeconds=31", "webhook.timeoutSeconds: Must be less than")):
        try:
            helm_template(root, tools, "kstack-system", "--set", bad)
            problems.append(f"--set {bad} renders (values.schema.json should refuse it)")
        except kube_tools.ToolError as e:
            expect(said in str(e), f"--set {bad} refused with {e}", problems)

    single = helm_template(root, tools, "kstack-system", "--set", "replicaCount=1")
    expect("PodDisruptionBudget" not in {o["kind"] for o in single},
           "one replica still renders a PodDisruptionBudget (minAvailable 1 blocks drains)",
           problems)
    if problems:
        raise AssertionError("the chart does not follow its values:\n" + "\n".join(problems))
    return f"namespace {ns} and image {image}:1.2.3 followed by {len(objs)} objects"


CASES = {"lint": case_lint, "same-objects": case_same_objects, "values": case_values}


def main(argv):
    if len(argv) != 3 or argv[2] not in CASES:
        print(__doc__)
        return 2
    root = os.path.abspath(argv[1])
    try:
        tools = kube_tools.tools_bin(root)
        print(f"helm_chart_test {argv[2]}: {CASES[argv[2]](root, tools)}")
    except (kube_tools.ToolError, AssertionError) as e:
        print(f"helm_chart_test {argv[2]}: FAILED: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
