"""Finds kubectl 1.31 and helm 3.17 for the tests of deploy/ (helm_chart_test.py,
removed_api_guard.py): the folder in $KSTACK_KUBE_TOOLS_BIN (scripts/test.sh sets it), else the
one scripts/get-kube-tools.sh prints (it installs them into ~/.cache/kstack-tools on first use,
so a bare `ctest` works too). The system's kubectl is never used: its kustomize differs."""
import os
import subprocess


class ToolError(Exception):
    pass


def tools_bin(root):
    given = os.environ.get("KSTACK_KUBE_TOOLS_BIN")
    if given:
        return given
    script = os.path.join(root, "scripts", "get-kube-tools.sh")
    done = subprocess.run(["bash", script], capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolError(f"{script} failed (exit {done.returncode}):\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def run(tool, args):
    """Runs a tool; its stdout, or ToolError with the command line and its stderr."""
    done = subprocess.run([tool, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolError(f"`{' '.join([tool, *args])}` failed (exit {done.returncode}):\n"
                        f"{done.stdout}{done.stderr}")
    return done.stdout
