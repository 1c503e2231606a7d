// Per-container filesystem sandboxes with bubblewrap: the layout on the host, the files copied
// into a container's private /etc, and the bwrap command line. docs/nodesim.md describes the
// layout. Nothing here starts a process (runtime.h does).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <tl/expected.hpp>

namespace kstack::nodesim {

// Directories every container gets as private, writable copies (bound from the host's
// <container dir>/<name>); they are wiped when the container restarts.
inline const std::vector<std::string>& private_dirs() {
  static const std::vector<std::string> dirs = {"etc",  "opt", "var", "tmp", "root",
                                                "home", "run", "srv", "mnt", "media"};
  return dirs;
}

// Host files copied into each container's /etc (when the host has them): users, name
// resolution, the dynamic linker's cache, Debian's alternatives symlinks, TLS roots.
inline const std::vector<std::string>& copied_etc_entries() {
  static const std::vector<std::string> entries = {"passwd",          "group",
                                                   "shadow",          "gshadow",
                                                   "nsswitch.conf",   "resolv.conf",
                                                   "ld.so.cache",     "ld.so.conf",
                                                   "ld.so.conf.d",    "alternatives",
                                                   "localtime",       "timezone",
                                                   "os-release",      "debian_version",
                                                   "profile",         "profile.d",
                                                   "bash.bashrc",     "environment",
                                                   "login.defs",      "ssl",
                                                   "ca-certificates", "ca-certificates.conf",
                                                   "services",        "protocols",
                                                   "mime.types",      "inputrc",
                                                   "shells",          "host.conf",
                                                   "gai.conf",        "mtab"};
  return entries;
}

struct BindMount {
  std::filesystem::path source;  // host path
  std::string target;            // absolute path inside the container
  bool read_only = false;
};

struct SandboxSpec {
  std::filesystem::path root;  // the container's host directory holding private_dirs()
  std::string hostname;        // UTS hostname (the pod's hostname)
  std::string hosts_file;      // content of /etc/hosts
  std::vector<BindMount> mounts;
  std::string resolv_conf;  // content of /etc/resolv.conf; "" = a copy of the host's
  // bwrap arguments placing an image's files (image_layer.h), after the private dirs' binds
  // and before the volumes'.
  std::vector<std::string> image_args;
};

// Creates root/<private dirs>, copies the host's /etc entries and writes /etc/hosts and
// /etc/hostname. Idempotent only on an empty root: callers wipe before re-preparing.
tl::expected<void, std::string> prepare_root(const SandboxSpec& spec);

// bwrap arguments (without the command): private pid/ipc/uts namespaces with the container's
// hostname, host /usr read-only (and the /bin, /lib... symlinks or binds mirroring the host),
// fresh /proc and /dev, the private dirs, then the volume mounts (parents before children).
std::vector<std::string> bwrap_args(const SandboxSpec& spec);

// Removes `dir` recursively, but only if it lies strictly inside `base` (both made absolute
// and normal first): a guard against deleting anything outside the simulator's state.
tl::expected<void, std::string> remove_inside(const std::filesystem::path& base,
                                              const std::filesystem::path& dir);

// Creates a volume mount's missing source directory (a subPath) as the kubelet does
// (kubelet_pods.go makeMounts: SafeMakeDir with the mode of the volume's directory): every
// directory created gets the mode of the nearest existing ancestor, so a 0777 volume gives
// 0777 sub-directories that a non-root container can write. Existing directories are left.
tl::expected<void, std::string> make_mount_source(const std::filesystem::path& dir);

// True if `relative` is a relative path without ".." components (volumeMounts[].subPath).
bool safe_relative_path(const std::string& relative);

}  // namespace kstack::nodesim
