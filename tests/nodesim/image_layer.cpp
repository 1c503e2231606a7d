// An image's files in a sandbox (see image_layer.h).
#include "tests/nodesim/image_layer.h"

#include <algorithm>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <unistd.h>

#include "tests/nodesim/sandbox.h"

namespace kstack::nodesim {

namespace fs = std::filesystem;

namespace {

// Where the image's files are assembled before they are moved or bound into place.
constexpr const char* kStagingDir = "image";

// Top-level entries of the sandbox that are the host's (read-only /usr and its links).
bool host_top(const std::string& top) {
  static const std::set<std::string> tops = {"usr",   "bin",   "sbin",  "lib",
                                             "lib32", "lib64", "libx32"};
  return tops.count(top) != 0;
}

bool private_top(const std::string& top) {
  const auto& dirs = private_dirs();
  return std::find(dirs.begin(), dirs.end(), top) != dirs.end();
}

std::string top_of(const fs::path& absolute) {
  auto it = absolute.begin();
  if (it == absolute.end()) return {};
  ++it;  // "/"
  return it == absolute.end() ? std::string() : it->string();
}

struct Owner {
  unsigned uid = 0;
  unsigned gid = 0;
  std::optional<mode_t> mode;  // --chmod; else the source's
};

std::string error_text(const std::string& what, const fs::path& p, const std::error_code& ec) {
  return fmt::format("{} {}: {}", what, p.string(), ec.message());
}

tl::expected<void, std::string> set_owner(const fs::path& p, const Owner& o, fs::perms source) {
  if (::lchown(p.c_str(), o.uid, o.gid) != 0) {
    return tl::unexpected(error_text("chown", p, std::error_code(errno, std::generic_category())));
  }
  if (fs::is_symlink(fs::symlink_status(p))) return {};
  std::error_code ec;
  fs::permissions(p, o.mode ? static_cast<fs::perms>(*o.mode) : source, ec);
  if (ec) return tl::unexpected(error_text("chmod", p, ec));
  return {};
}

tl::expected<void, std::string> make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return tl::unexpected(error_text("create", dir, ec));
  return {};
}

// Copies src (file, symlink or directory, recursively) to dst, merging into an existing
// directory and replacing anything else, as COPY does.
tl::expected<void, std::string> copy_entry(const fs::path& src, const fs::path& dst,
                                           const Owner& o) {
  std::error_code ec;
  const auto st = fs::symlink_status(src, ec);
  if (ec) return tl::unexpected(error_text("stat", src, ec));
  const bool dst_dir = fs::is_directory(fs::symlink_status(dst, ec));
  if (fs::is_directory(st)) {
    if (!dst_dir) {
      fs::remove(dst, ec);
      fs::create_directory(dst, ec);
      if (ec) return tl::unexpected(error_text("create", dst, ec));
      if (auto r = set_owner(dst, o, st.permissions()); !r) return r;
    }
    for (const auto& entry : fs::directory_iterator(src, ec)) {
      if (auto r = copy_entry(entry.path(), dst / entry.path().filename(), o); !r) return r;
    }
    if (ec) return tl::unexpected(error_text("list", src, ec));
    return {};
  }
  if (dst_dir) fs::remove_all(dst, ec);
  if (fs::is_symlink(st)) {
    fs::remove(dst, ec);
    fs::create_symlink(fs::read_symlink(src, ec), dst, ec);
  } else {
    fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
  }
  if (ec) return tl::unexpected(error_text("copy " + src.string() + " to", dst, ec));
  return set_owner(dst, o, st.permissions());
}

// Moves the staged tree `src` into the private directory tree at `dst`, merging directories
// (an existing one keeps its owner and mode) and replacing anything else.
tl::expected<void, std::string> merge_move(const fs::path& src, const fs::path& dst) {
  std::error_code ec;
  const auto dst_status = fs::symlink_status(dst, ec);
  if (fs::exists(dst_status) && fs::is_directory(fs::symlink_status(src)) &&
      fs::is_directory(fs::status(dst, ec))) {
    for (const auto& entry : fs::directory_iterator(src, ec)) {
      if (auto r = merge_move(entry.path(), dst / entry.path().filename()); !r) return r;
    }
    return {};
  }
  if (fs::exists(dst_status)) fs::remove_all(dst, ec);
  fs::rename(src, dst, ec);
  if (ec) return tl::unexpected(error_text("move " + src.string() + " to", dst, ec));
  return {};
}

class Layer {
 public:
  Layer(const fs::path& root, const fs::path& host)
      : root_(root), host_(host), staging_(root / kStagingDir) {}

  // Destinations through the host's top-level links (/bin -> usr/bin) are put where they lead.
  tl::expected<fs::path, std::string> destination(const std::string& dest) const {
    fs::path p = fs::path(dest).lexically_normal();
    const std::string top = top_of(p);
    if (top == "proc" || top == "dev" || top == "sys") {
      return tl::unexpected(fmt::format("cannot place files in /{}", top));
    }
    std::error_code ec;
    if (host_top(top) && fs::is_symlink(fs::symlink_status(host_ / top, ec))) {
      const fs::path target = fs::read_symlink(host_ / top, ec);
      fs::path mapped = fs::path("/") / target.relative_path();
      for (auto it = std::next(std::next(p.begin())); it != p.end(); ++it) mapped /= *it;
      p = mapped.lexically_normal();
    }
    return p;
  }

  fs::path staged(const fs::path& dest) const { return staging_ / dest.relative_path(); }

  // Whether `dest` is a directory in the image so far: staged, private, or the host's.
  bool is_dir(const fs::path& dest) const {
    std::error_code ec;
    if (fs::is_directory(staged(dest), ec)) return true;
    const std::string top = top_of(dest);
    if (private_top(top)) return fs::is_directory(root_ / dest.relative_path(), ec);
    if (host_top(top)) return fs::is_directory(host_ / dest.relative_path(), ec);
    return dest == "/";
  }

  tl::expected<void, std::string> copy(const ImageCopy& c) {
    Owner owner;
    if (!c.chown.empty()) {
      auto ids = resolve_user(c.chown, root_ / "etc");
      if (!ids)
        return tl::unexpected(fmt::format("{}: --chown={}: {}", c.where, c.chown, ids.error()));
      owner.uid = ids->uid;
      // Docker: a user without a group gives the uid as the gid.
      owner.gid = c.chown.find(':') == std::string::npos ? ids->uid : ids->gid;
    }
    owner.mode = c.chmod;
    auto dest = destination(c.destination);
    if (!dest) return tl::unexpected(fmt::format("{}: {}", c.where, dest.error()));
    const bool into_dir = c.destination.back() == '/' || c.sources.size() > 1 || is_dir(*dest);
    for (const auto& source : c.sources) {
      std::error_code ec;
      const bool source_dir = fs::is_directory(source, ec);
      const fs::path target =
          source_dir || !into_dir ? staged(*dest) : staged(*dest) / source.filename();
      if (auto r = make_dirs(target.parent_path()); !r) return r;
      auto r =
          source_dir ? copy_dir_contents(source, target, owner) : copy_entry(source, target, owner);
      if (!r) return tl::unexpected(fmt::format("{}: {}", c.where, r.error()));
    }
    return {};
  }

  tl::expected<void, std::string> workdir(const std::string& dir) {
    if (dir.empty()) return {};
    auto dest = destination(dir);
    if (!dest) return tl::unexpected(dest.error());
    if (is_dir(*dest)) return {};
    return make_dirs(staged(*dest));
  }

  // Moves private parts into place and plans the mounts of the others.
  tl::expected<std::vector<std::string>, std::string> finish() {
    std::error_code ec;
    if (!fs::exists(staging_, ec)) return std::vector<std::string>{};
    std::vector<fs::path> tops;  // listed first: private ones are removed below
    for (const auto& entry : fs::directory_iterator(staging_, ec)) tops.push_back(entry.path());
    for (const auto& staged_top : tops) {
      const std::string top = staged_top.filename().string();
      if (private_top(top)) {
        if (auto r = merge_move(staged_top, root_ / top); !r) return tl::unexpected(r.error());
        fs::remove_all(staged_top, ec);  // what is left: directories merged into existing ones
      } else {
        plan(staged_top, fs::path("/") / top);
      }
    }
    std::vector<std::string> args;
    for (const auto& dir : shadows_) {  // parents first (std::set of paths orders them so)
      args.insert(args.end(), {"--tmpfs", dir.string()});
      for (const auto& entry : fs::directory_iterator(host_ / dir.relative_path(), ec)) {
        const fs::path inside = dir / entry.path().filename();
        if (entry.is_symlink(ec)) {
          args.insert(args.end(),
                      {"--symlink", fs::read_symlink(entry.path(), ec).string(), inside.string()});
        } else {
          args.insert(args.end(), {"--ro-bind", entry.path().string(), inside.string()});
        }
      }
    }
    for (const auto& [source, target] : binds_) {
      args.insert(args.end(), {"--bind", source.string(), target.string()});
    }
    return args;
  }

 private:
  static tl::expected<void, std::string> copy_dir_contents(const fs::path& source,
                                                           const fs::path& target,
                                                           const Owner& owner) {
    std::error_code ec;
    if (!fs::is_directory(target, ec)) {
      fs::create_directory(target, ec);
      if (ec) return tl::unexpected(error_text("create", target, ec));
      if (auto r = set_owner(target, owner, fs::status(source, ec).permissions()); !r) return r;
    }
    for (const auto& entry : fs::directory_iterator(source, ec)) {
      if (auto r = copy_entry(entry.path(), target / entry.path().filename(), owner); !r) return r;
    }
    return {};
  }

  void plan(const fs::path& staged_path, const fs::path& dest) {
    std::error_code ec;
    const fs::path on_host = host_ / dest.relative_path();
    const bool host_area = host_top(top_of(dest));
    if (host_area && fs::exists(fs::symlink_status(on_host, ec))) {
      if (fs::is_directory(fs::symlink_status(staged_path, ec)) && fs::is_directory(on_host, ec)) {
        for (const auto& entry : fs::directory_iterator(staged_path, ec)) {
          plan(entry.path(), dest / entry.path().filename());
        }
        return;
      }
      binds_.emplace_back(staged_path, dest);
      return;
    }
    if (host_area) {
      // The mount point must be created, and the host's directory is read-only: a tmpfs over
      // its deepest existing ancestor, with the host's entries bound again.
      fs::path parent = dest.parent_path();
      while (parent != "/" && !fs::exists(host_ / parent.relative_path(), ec)) {
        parent = parent.parent_path();
      }
      if (parent != "/") shadows_.insert(parent);
    }
    binds_.emplace_back(staged_path, dest);
  }

  fs::path root_;
  fs::path host_;
  fs::path staging_;
  std::set<fs::path> shadows_;
  std::vector<std::pair<fs::path, fs::path>> binds_;  // staged source, destination
};

}  // namespace

tl::expected<std::vector<std::string>, std::string> place_image_files(const Image& image,
                                                                      const fs::path& root,
                                                                      const fs::path& host) {
  Layer layer(root, host);
  for (const auto& c : image.copies) {
    if (auto r = layer.copy(c); !r) return tl::unexpected(r.error());
  }
  if (auto r = layer.workdir(image.working_dir); !r) {
    return tl::unexpected("WORKDIR " + image.working_dir + ": " + r.error());
  }
  return layer.finish();
}

}  // namespace kstack::nodesim
