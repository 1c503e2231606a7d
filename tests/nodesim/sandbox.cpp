// Sandbox layout and bwrap arguments (see sandbox.h).
#include "tests/nodesim/sandbox.h"

#include <algorithm>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

namespace kstack::nodesim {

namespace fs = std::filesystem;

namespace {

tl::expected<void, std::string> write_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) return tl::unexpected("cannot write " + path.string());
  return {};
}

std::size_t depth(const std::string& path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

}  // namespace

tl::expected<void, std::string> prepare_root(const SandboxSpec& spec) {
  std::error_code ec;
  for (const auto& dir : private_dirs()) {
    fs::create_directories(spec.root / dir, ec);
    if (ec) return tl::unexpected("create " + (spec.root / dir).string() + ": " + ec.message());
  }
  fs::permissions(spec.root / "tmp", fs::perms::all | fs::perms::sticky_bit, ec);
  fs::permissions(spec.root / "root", fs::perms::owner_all, ec);
  for (const char* sub : {"var/tmp", "var/log", "var/lib", "var/cache", "var/spool", "run/lock"}) {
    fs::create_directories(spec.root / sub, ec);
  }
  fs::permissions(spec.root / "var/tmp", fs::perms::all | fs::perms::sticky_bit, ec);
  // Relative, so that they resolve inside the sandbox (bwrap creates mount points through them).
  fs::create_directory_symlink("../run", spec.root / "var/run", ec);
  fs::create_directory_symlink("../run/lock", spec.root / "var/lock", ec);

  const fs::path etc = spec.root / "etc";
  for (const auto& entry : copied_etc_entries()) {
    const fs::path from = fs::path("/etc") / entry;
    if (!fs::exists(fs::symlink_status(from))) continue;
    fs::copy(from, etc / entry,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks |
                 fs::copy_options::overwrite_existing,
             ec);
    ec.clear();  // best effort: an unreadable host file is not worth failing a pod for
  }
  if (auto r = write_file(etc / "hosts", spec.hosts_file); !r) return r;
  if (auto r = write_file(etc / "hostname", spec.hostname + "\n"); !r) return r;
  if (!spec.resolv_conf.empty()) {
    fs::remove(etc / "resolv.conf", ec);  // the host's may be a symlink
    if (auto r = write_file(etc / "resolv.conf", spec.resolv_conf); !r) return r;
  }
  return {};
}

std::vector<std::string> bwrap_args(const SandboxSpec& spec) {
  std::vector<std::string> a = {"--die-with-parent", "--unshare-pid", "--unshare-ipc",
                                "--unshare-uts",     "--hostname",    spec.hostname,
                                "--ro-bind",         "/usr",          "/usr"};
  // Mirror the host's top-level links into /usr (merged-/usr Debian) or bind real dirs.
  for (const char* top : {"bin", "sbin", "lib", "lib32", "lib64", "libx32"}) {
    const fs::path host = fs::path("/") / top;
    std::error_code ec;
    auto st = fs::symlink_status(host, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_symlink(st)) {
      a.insert(a.end(), {"--symlink", fs::read_symlink(host, ec).string(), host.string()});
    } else if (fs::is_directory(st)) {
      a.insert(a.end(), {"--ro-bind", host.string(), host.string()});
    }
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
  for (const auto& dir : private_dirs()) {
    a.insert(a.end(), {"--bind", (spec.root / dir).string(), "/" + dir});
  }
  a.insert(a.end(), spec.image_args.begin(), spec.image_args.end());
  std::vector<BindMount> mounts = spec.mounts;
  std::stable_sort(mounts.begin(), mounts.end(), [](const BindMount& x, const BindMount& y) {
    return depth(x.target) < depth(y.target);
  });
  for (const auto& m : mounts) {
    a.insert(a.end(), {m.read_only ? "--ro-bind" : "--bind", m.source.string(), m.target});
  }
  a.insert(a.end(), {"--chdir", "/"});
  return a;
}

tl::expected<void, std::string> remove_inside(const fs::path& base, const fs::path& dir) {
  fs::path b = fs::absolute(base).lexically_normal();
  fs::path d = fs::absolute(dir).lexically_normal();
  auto rel = d.lexically_relative(b);
  if (rel.empty() || rel == "." || *rel.begin() == "..") {
    return tl::unexpected("refusing to remove " + d.string() + ": not inside " + b.string());
  }
  std::error_code ec;
  fs::remove_all(d, ec);
  if (ec) return tl::unexpected("remove " + d.string() + ": " + ec.message());
  return {};
}

tl::expected<void, std::string> make_mount_source(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) return {};
  std::vector<fs::path> missing;  // deepest first
  fs::path existing = dir;
  while (!existing.empty() && existing != existing.root_path() && !fs::exists(existing, ec)) {
    missing.push_back(existing);
    existing = existing.parent_path();
  }
  const auto mode = fs::status(existing, ec).permissions();
  if (ec) return tl::unexpected(fmt::format("{}: {}", existing.string(), ec.message()));
  fs::create_directories(dir, ec);
  if (ec) return tl::unexpected(fmt::format("create {}: {}", dir.string(), ec.message()));
  for (const auto& d : missing) {
    fs::permissions(d, mode, ec);  // the umask does not apply, as with the kubelet's chmod
    if (ec) return tl::unexpected(fmt::format("chmod {}: {}", d.string(), ec.message()));
  }
  return {};
}

bool safe_relative_path(const std::string& relative) {
  if (relative.empty()) return true;
  fs::path p(relative);
  if (p.is_absolute()) return false;
  return std::none_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; });
}

}  // namespace kstack::nodesim
