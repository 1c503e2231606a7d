// A Compose service's `volumes` -> the role's persisted directories (catalog/
// compose_internal.h): every volume mount becomes a directory on the member's own claim; bind
// mounts, tmpfs and mount options are not carried, and a named volume is not shared between
// services. Each of these is a warning.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/compose_internal.h"

namespace kstack::catalog::compose_detail {
namespace {

// "/data/" -> "/data"; empty if not an absolute path kstack can persist.
std::string persist_dir(std::string_view target) {
  std::string d(target);
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  if (d.empty() || d.front() != '/' || d == "/") return {};
  if (d.find("//") != std::string::npos) return {};
  for (auto part : split(std::string_view(d).substr(1), '/')) {
    if (part == "." || part == "..") return {};
  }
  return d;
}

void add_persist_dir(Role& r, std::string_view target, const std::string& path, Warnings& w) {
  auto d = persist_dir(target);
  if (d.empty()) {
    w.add(path, fmt::format("target {} is not an absolute directory kstack can persist; ignored",
                            quoted(target)));
    return;
  }
  if (std::find(r.persist_dirs.begin(), r.persist_dirs.end(), d) == r.persist_dirs.end()) {
    r.persist_dirs.push_back(d);
  }
}

bool bind_source(std::string_view source) {
  return !source.empty() && (source.front() == '/' || source.front() == '.' ||
                             source.front() == '~' || source.find('/') != std::string_view::npos ||
                             source.find('\\') != std::string_view::npos);
}

void bind_warning(std::string_view source, std::string_view target, const std::string& path,
                  Warnings& w) {
  w.add(path, fmt::format("bind mount of host path {} on {} is not carried: members have no "
                          "host files (put configuration in the image or a setup package); "
                          "ignored",
                          quoted(source), target));
}

// "ro", "rw,z", "nocopy": the options of a short volume syntax.
bool volume_mode(std::string_view text) {
  if (text.empty()) return false;
  for (auto opt : split(text, ',')) {
    if (opt != "ro" && opt != "rw" && opt != "z" && opt != "Z" && opt != "nocopy" &&
        opt != "consistent" && opt != "cached" && opt != "delegated") {
      return false;
    }
  }
  return true;
}

// The long syntax: {type, source, target, read_only, and options kstack does not carry}.
void long_volume(Role& r, const json::object& o, const std::string& p, Warnings& w) {
  std::string type = "volume", source, target;
  if (const auto* t = o.if_contains("type"); t && t->is_string()) type = t->get_string();
  if (const auto* s = o.if_contains("source"); s && s->is_string()) source = s->get_string();
  if (const auto* t = o.if_contains("target"); t && t->is_string()) target = t->get_string();
  if (type == "bind") {
    bind_warning(source, target, p, w);
    return;
  }
  if (type != "volume") {
    w.add(key(p, "type"),
          fmt::format("{} mounts are not carried; ignored", type == "tmpfs" ? "tmpfs" : type));
    return;
  }
  if (target.empty()) {
    w.add(p, "has no target; ignored");
    return;
  }
  for (const auto& [k, val] : o) {
    if (k == "type" || k == "source" || k == "target" || is_extension(k)) continue;
    if (k == "read_only") {
      if (val.is_bool() && val.get_bool()) {
        w.add(key(p, k),
              "read-only mounts are not carried: the member's claim is mounted "
              "read-write");
      }
      continue;
    }
    w.add(key(p, k), "volume mount options are not carried; ignored");
  }
  add_persist_dir(r, target, p, w);
  if (!source.empty()) r.volumes.emplace_back(source, p);
}

// The short syntax: [SOURCE:]TARGET[:MODE].
void short_volume(Role& r, std::string_view s, const std::string& p, Warnings& w) {
  std::vector<std::string_view> parts = split(s, ':');
  // A Windows drive letter (C:\...) in the source is a bind mount too.
  std::string_view source, target, mode;
  if (parts.size() == 1) {
    target = parts[0];
  } else if (parts.size() == 2) {
    if (volume_mode(parts[1])) {  // TARGET:MODE of an anonymous volume
      target = parts[0];
      mode = parts[1];
    } else {
      source = parts[0];
      target = parts[1];
    }
  } else {
    source = parts[0];
    target = parts[1];
    mode = parts[2];
  }
  if (bind_source(source)) {
    bind_warning(source, target, p, w);
    return;
  }
  if (!mode.empty() && mode != "rw") {
    w.add(p, fmt::format("mode {} is not carried: the member's claim is mounted read-write",
                         quoted(mode)));
  }
  add_persist_dir(r, target, p, w);
  if (!source.empty()) r.volumes.emplace_back(std::string(source), p);
}

}  // namespace

void convert_volumes(Role& r, const json::value& v, Warnings& w) {
  for_each_item(v, key(r.path, "volumes"), w, [&](const json::value& item, const std::string& p) {
    if (const auto* o = item.if_object()) {
      long_volume(r, *o, p, w);
    } else if (item.is_string()) {
      short_volume(r, item.get_string(), p, w);
    } else {
      w.add(p, "must be a string or a mapping; ignored");
    }
  });
}

void shared_volume_warnings(const std::vector<Role>& roles, Warnings& w) {
  std::map<std::string, std::string> first_user;  // volume -> service
  for (const auto& r : roles) {
    std::set<std::string> seen;
    for (const auto& [vol, path] : r.volumes) {
      if (!seen.insert(vol).second) continue;
      auto [it, inserted] = first_user.emplace(vol, r.service);
      if (!inserted) {
        w.add(path, fmt::format("volume {} is also mounted by service {}: in kstack every member "
                                "has a claim of its own, so they do not share its files",
                                quoted(vol), quoted(it->second)));
      }
    }
  }
}

}  // namespace kstack::catalog::compose_detail
