#!/usr/bin/env python3
"""The operator image holds what the binary needs (ctest, label unit; no container runtime).

No container runtime is available to the tests, so the image's final stage is reproduced with
bubblewrap: a sandbox whose file system holds exactly what deploy/Dockerfile puts in the image
(the shared objects of the base image's packages, deploy/image/base-image-packages.txt, CA certificates, the
binary and the libraries deploy/image/runtime-libs.sh copies), read-only, as the image's
non-root user, with no environment but the image's. The binary must start and do real work
there (parse a catalog, print its version), and must NOT start when the copied libraries are
left out (so the sandbox really hides the host's libraries).

It also checks that the Dockerfile, deploy/deployment.yaml and the project version agree: the
final stage is the distroless nonroot base, its USER is the Deployment's runAsUser:runAsGroup,
its library directory is its LD_LIBRARY_PATH, its ENTRYPOINT is the binary it copies, the
Deployment's image is kstack:<project version> (no placeholder registry), and the binary
reports that version.

Usage: image_runtime_test.py <repository root> <kstack binary>
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

BASE_IMAGE = "gcr.io/distroless/cc-debian12:nonroot"
failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def final_stage(dockerfile):
    """Instructions of the Dockerfile's last stage as (keyword, rest) pairs, continuations joined."""
    text = re.sub(r"\\\n", " ", open(dockerfile).read())
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((keyword.upper(), rest.strip()))
    return stages, text


def project_version(root):
    match = re.search(r"project\(kstack VERSION (\S+)", open(os.path.join(root, "CMakeLists.txt")).read())
    return match.group(1) if match else None


def operator_deployment(root):
    for doc in yaml.safe_load_all(open(os.path.join(root, "deploy", "deployment.yaml"))):
        if doc and doc.get("kind") == "Deployment":
            return doc
    return None


def check_manifests(root, binary):
    stages, text = final_stage(os.path.join(root, "deploy", "Dockerfile"))
    last = stages[-1]
    image = last[0][1]
    if image != BASE_IMAGE:
        fail(f"deploy/Dockerfile: the final stage is FROM {image}, expected {BASE_IMAGE}")
    if "deploy/image/runtime-libs.sh" not in text:
        fail("deploy/Dockerfile: the build stage does not collect libraries with "
             "deploy/image/runtime-libs.sh (the script this test checks)")
    values = {k: v for k, v in last}
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(v for k, v in last if k == "ENV")))
    copies = [v.split() for k, v in last if k == "COPY"]
    destinations = {c[-2].rstrip("/"): c[-1].rstrip("/") for c in copies}
    lib_dir = destinations.get("/out/lib")
    bin_path = destinations.get("/out/kstack")
    if lib_dir is None or bin_path is None:
        fail(f"deploy/Dockerfile: the final stage must COPY /out/lib/ and /out/kstack (has {copies})")
    if env.get("LD_LIBRARY_PATH") != lib_dir:
        fail(f"deploy/Dockerfile: LD_LIBRARY_PATH={env.get('LD_LIBRARY_PATH')} but the libraries "
             f"are copied to {lib_dir}")
    if bin_path and f'"{bin_path}"' not in values.get("ENTRYPOINT", ""):
        fail(f"deploy/Dockerfile: ENTRYPOINT {values.get('ENTRYPOINT')} is not the copied binary {bin_path}")

    deployment = operator_deployment(root)
    pod = deployment["spec"]["template"]["spec"]
    security = pod.get("securityContext", {})
    user = f"{security.get('runAsUser')}:{security.get('runAsGroup')}"
    if values.get("USER") != user:
        fail(f"deploy/Dockerfile: USER {values.get('USER')} differs from deploy/deployment.yaml's "
             f"runAsUser:runAsGroup {user}")
    if security.get("runAsNonRoot") is not True:
        fail("deploy/deployment.yaml: runAsNonRoot is not true")

    version = project_version(root)
    container = pod["containers"][0]
    expected_image = f"kstack:{version}"
    if container["image"] != expected_image:
        fail(f"deploy/deployment.yaml: image {container['image']}, expected {expected_image} "
             "(the tag deploy/Dockerfile's comment and README.md build)")
    if container.get("securityContext", {}).get("readOnlyRootFilesystem") is not True:
        fail("deploy/deployment.yaml: the operator container's root file system is not read-only")
    return version, user.split(":"), container["args"], lib_dir, bin_path


def ldd(binary):
    """(interpreter path, {soname: path}) of the binary's resolved shared libraries."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libs, interpreter = {}, None
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            libs[parts[0]] = parts[2]
        elif parts and parts[0].startswith("/") and "ld-linux" in parts[0]:
            interpreter = parts[0]
    return interpreter, libs


def base_image_files(root):
    """The shared objects the base image carries: every .so file (and symlink) owned by a package
    of deploy/image/base-image-packages.txt, at the path the package installs it."""
    path = os.path.join(root, "deploy", "image", "base-image-packages.txt")
    packages = [l.strip() for l in open(path) if l.strip() and not l.startswith("#")]
    out = subprocess.run(["dpkg-query", "-L"] + packages, capture_output=True, text=True,
                         check=True).stdout
    return sorted(f for f in out.splitlines()
                  if re.search(r"\.so(\.[0-9.]+)?$", f) and os.path.exists(f) and not os.path.isdir(f))


def sandbox(binary, lib_dir_host, lib_dir, bin_path, base_files, uid_gid, root):
    """bwrap argv prefix for a read-only root holding the image's files only."""
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--clearenv",
            "--uid", uid_gid[0], "--gid", uid_gid[1],
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--setenv", "LD_LIBRARY_PATH", lib_dir,
            "--ro-bind", binary, bin_path]
    for path in base_files:
        argv += ["--ro-bind", os.path.realpath(path), path]
    if lib_dir_host is not None:
        argv += ["--ro-bind", lib_dir_host, lib_dir]
    certs = "/etc/ssl/certs/ca-certificates.crt"
    if os.path.exists(certs):
        argv += ["--ro-bind", certs, certs]
    argv += ["--ro-bind", os.path.join(root, "appdefs"), "/appdefs", "--remount-ro", "/"]
    return argv


def main():
    root, binary = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    version, uid_gid, args, lib_dir, bin_path = check_manifests(root, binary)
    if failures:
        return 1
    if args[0] != "operator":
        fail(f"deploy/deployment.yaml: the container's args start with {args[0]}, not operator")

    interpreter, libs = ldd(binary)
    base_files = base_image_files(root)
    if interpreter not in base_files:
        fail(f"the binary's interpreter {interpreter} is not in the base image's packages")
    base_names = {os.path.basename(f) for f in base_files}
    work = tempfile.mkdtemp(prefix="kstack-image-")
    try:
        collected = os.path.join(work, "lib")
        subprocess.run(["bash", os.path.join(root, "deploy", "image", "runtime-libs.sh"), binary,
                        collected], check=True, stdout=subprocess.DEVNULL)
        want = sorted(s for s in libs if s not in base_names)
        got = sorted(os.listdir(collected))
        if want != got:
            fail(f"runtime-libs.sh copied {got}, the binary needs {want} beyond the base image")

        image = sandbox(binary, collected, lib_dir, bin_path, base_files, uid_gid, root)
        runs = {
            "--version": [bin_path, "--version"],
            "validate": [bin_path, "validate", "-f", "/appdefs"],
            "operator --help": [bin_path] + args + ["--help"],
        }
        for name, command in runs.items():
            r = subprocess.run(image + command, capture_output=True, text=True, timeout=60)
            print(f"image: kstack {name} -> exit {r.returncode}")
            if r.returncode != 0:
                fail(f"in the image's file system, `{' '.join(command)}` exited {r.returncode}: "
                     f"{r.stderr.strip()[:2000]}")
            elif name == "--version" and not r.stdout.startswith(f"kstack {version} "):
                fail(f"`kstack --version` in the image printed {r.stdout.strip()!r}, "
                     f"expected the project version {version} (the image tag)")

        # Control: without the copied libraries the binary cannot start, so the sandbox above
        # really hid the host's libraries and the copied ones were what made it work.
        bare = sandbox(binary, None, lib_dir, bin_path, base_files, uid_gid, root)
        r = subprocess.run(bare + [bin_path, "--version"], capture_output=True, text=True, timeout=60)
        if want and (r.returncode == 0 or "error while loading shared libraries" not in r.stderr):
            fail("control: without the copied libraries the binary still ran (exit "
                 f"{r.returncode}, {r.stderr.strip()[:300]}): the sandbox leaks host libraries")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"image: {len(want)} copied libraries {want}, {len(base_files)} base-image files; "
          "all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
