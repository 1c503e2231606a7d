#!/usr/bin/env python3
"""Removed-API guard (ctest, label unit): kstack must work on every Kubernetes release from
1.20 to the newest, so no manifest it ships and no API it calls may use an API version that a
release no longer serves.

Checked against kubernetes_api_lifecycle.csv (beside this file; its header names the source):
  * every object in the YAML files under deploy/ and appdefs/ (apiVersion + kind),
  * every object the Helm chart deploy/helm/kstack renders (`helm template --include-crds`; its
    templates are not YAML themselves; helm from scripts/get-kube-tools.sh, see kube_tools.py),
  * every API the code requests: kube::ResourceType literals ({"group", "version", "plural",
    "Kind", ...}), "/apis/<group>/<version>/" path literals and "apiVersion" literals in the
    C++ sources.
An API version that is no longer served in some release fails the test with the file, the
line and the replacement; one that is only deprecated is printed as a warning.

Usage: removed_api_guard.py <repository root> [<extra file or directory> ...]
"""
import csv
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_tools  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST_DIRS = ("deploy", "appdefs")
CODE_DIRS = ("kube", "informer", "catalog", "validator", "observer", "reconciler", "executor",
             "cmd", "tests")
SKIP_PARTS = ("/build", "/tests/fuzz/corpus/", "/deploy/helm/")  # helm templates are not YAML
HELM_CHART = os.path.join("deploy", "helm", "kstack")


def load_table():
    rows = []
    with open(os.path.join(HERE, "kubernetes_api_lifecycle.csv"), newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    for row in csv.DictReader(lines):
        rows.append(row)
    return rows


def lookup(table, group_version, kind=None, resource=None):
    """Rows of the table for this group/version (and kind or resource, when known)."""
    found = []
    for row in table:
        if row["group_version"] != group_version:
            continue
        if kind is not None and row["kind"] != kind:
            continue
        if resource is not None and row["resource"] != resource:
            continue
        found.append(row)
    return found


class Report:
    def __init__(self):
        self.errors = []
        self.warnings = []
        self.checked = 0

    def check(self, table, where, group_version, kind=None, resource=None, whole_version=False):
        self.checked += 1
        rows = lookup(table, group_version, kind, resource)
        if whole_version and kind is None and resource is None:
            # A bare apiVersion literal: only a group/version that is gone for every kind it
            # ever served counts (the kind it goes with is not known here).
            if not rows or any(not r["removed_in"] for r in rows):
                rows = []
        for row in rows:
            what = f"{group_version} {row['kind']}"
            if row["removed_in"]:
                self.errors.append(
                    f"{where}: {what} is no longer served from Kubernetes {row['removed_in']} "
                    f"(deprecated in {row['deprecated_in']}); use {row['replacement']}")
            else:
                self.warnings.append(
                    f"{where}: {what} is deprecated since Kubernetes {row['deprecated_in']}; "
                    f"prefer {row['replacement']}")


def yaml_files(root, dirs):
    for d in dirs:
        base = os.path.join(root, d)
        if os.path.isfile(base):
            yield base
            continue
        for dirpath, _, names in os.walk(base):
            if any(part in dirpath + "/" for part in SKIP_PARTS):
                continue
            for name in sorted(names):
                if name.endswith((".yaml", ".yml")):
                    yield os.path.join(dirpath, name)


def objects(doc):
    if isinstance(doc, dict):
        if "apiVersion" in doc and "kind" in doc:
            yield doc
        for item in doc.get("items", []) or []:
            yield from objects(item)


def check_yaml_text(table, report, rel, text):
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        report.errors.append(f"{rel}: not valid YAML: {e}")
        return
    for index, doc in enumerate(docs):
        for obj in objects(doc):
            if obj["kind"] == "Kustomization":
                continue  # read by kustomize, never sent to the API server
            name = (obj.get("metadata") or {}).get("name", "?")
            where = f"{rel} (document {index + 1}, {obj['kind']} {name})"
            report.check(table, where, str(obj["apiVersion"]), kind=str(obj["kind"]))


def check_manifests(root, table, report, paths):
    for path in yaml_files(root, paths):
        with open(path, encoding="utf-8") as f:
            check_yaml_text(table, report, os.path.relpath(path, root), f.read())


def check_helm_chart(root, table, report):
    """Every value-dependent object on: the Namespace too (namespace.create)."""
    chart = os.path.join(root, HELM_CHART)
    try:
        helm = os.path.join(kube_tools.tools_bin(root), "helm")
        text = kube_tools.run(helm, ["template", "kstack", chart, "--namespace", "kstack-system",
                                     "--include-crds", "--set", "namespace.create=true"])
    except kube_tools.ToolError as e:
        report.errors.append(f"{HELM_CHART}: could not render the chart: {e}")
        return
    check_yaml_text(table, report, f"{HELM_CHART} (helm template)", text)


RESOURCE_TYPE = re.compile(
    r'ResourceType\s+\w+\s*\{\s*"([^"]*)"\s*,\s*"([^"]+)"\s*,\s*"([^"]+)"\s*,\s*"([^"]+)"')
API_PATH = re.compile(r'"/apis/([a-z0-9.-]+)/(v[0-9a-z]+)/(?:namespaces/[^/"]+/)?([a-z]+)?')
API_VERSION = re.compile(r'"apiVersion"\s*,\s*"([a-z0-9.-]+/)?(v[0-9a-z]+)"')


def check_code(root, table, report):
    for d in CODE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            if any(part in dirpath + "/" for part in SKIP_PARTS):
                continue
            for name in sorted(names):
                if not name.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in RESOURCE_TYPE.finditer(text):
                    group, version, resource, kind = m.groups()
                    gv = f"{group}/{version}" if group else version
                    line = text.count("\n", 0, m.start()) + 1
                    report.check(table, f"{rel}:{line}", gv, kind=kind)
                for m in API_PATH.finditer(text):
                    group, version, resource = m.groups()
                    line = text.count("\n", 0, m.start()) + 1
                    report.check(table, f"{rel}:{line}", f"{group}/{version}", resource=resource,
                                 whole_version=resource is None)
                for m in API_VERSION.finditer(text):
                    group, version = m.groups()
                    gv = f"{group}{version}" if group else version
                    line = text.count("\n", 0, m.start()) + 1
                    report.check(table, f"{rel}:{line}", gv, whole_version=True)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    root = os.path.abspath(argv[1])
    table = load_table()
    report = Report()
    extra = argv[2:]
    check_manifests(root, table, report, extra or MANIFEST_DIRS)
    if not extra:
        if os.path.isdir(os.path.join(root, HELM_CHART)):
            check_helm_chart(root, table, report)
        check_code(root, table, report)
    for w in report.warnings:
        print(f"warning: {w}")
    for e in report.errors:
        print(f"error: {e}")
    if report.errors:
        print(f"removed_api_guard: {len(report.errors)} use(s) of API versions that a supported "
              f"Kubernetes release no longer serves ({report.checked} checked)")
        return 1
    print(f"removed_api_guard: {report.checked} API uses checked, none removed in any release")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
