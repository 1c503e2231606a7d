// Reading deploy/'s kustomization (see manifests.h).
#include "tests/e2e/deploy/manifests.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace kstack::testenv::e2e {
namespace {

namespace fs = std::filesystem;

tl::expected<std::string, std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return tl::unexpected("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The YAML documents of `text`, split at the `---` lines, each as written.
std::vector<std::string> split_documents(const std::string& text) {
  std::vector<std::string> docs(1);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("---", 0) == 0 && line.find_first_not_of("- \t\r") == std::string::npos) {
      docs.emplace_back();
    } else {
      docs.back() += line + "\n";
    }
  }
  return docs;
}

// node[key] of a map; an empty node otherwise (never an invalid one, which throws when read).
YAML::Node child(const YAML::Node& node, const char* key) {
  return node && node.IsMap() && node[key] ? node[key] : YAML::Node();
}

std::string scalar(const YAML::Node& node, const char* key) {
  return node && node.IsMap() && node[key] && node[key].IsScalar() ? node[key].as<std::string>()
                                                                   : std::string();
}

std::pair<int, int> major_minor(const std::string& v) {
  int major = -1;
  int minor = -1;
  char dot = 0;
  std::istringstream in(v.rfind('v', 0) == 0 ? v.substr(1) : v);
  if (!(in >> major >> dot >> minor) || dot != '.') return {-1, -1};
  return {major, minor};
}

tl::expected<void, std::string> collect(const fs::path& dir, const std::string& prefix,
                                        std::vector<ManifestDocument>& out) {
  auto resources = kustomization_resources(dir);
  if (!resources) return tl::unexpected(resources.error());
  for (const auto& resource : *resources) {
    const fs::path path = dir / resource;
    const std::string file = prefix + resource;
    if (fs::is_directory(path)) {
      if (auto r = collect(path, file + "/", out); !r) return r;
      continue;
    }
    auto text = read_file(path);
    if (!text) return tl::unexpected(text.error());
    const auto docs = split_documents(*text);
    for (std::size_t i = 0; i < docs.size(); ++i) {
      YAML::Node node;
      try {
        node = YAML::Load(docs[i]);
      } catch (const YAML::Exception& e) {
        return tl::unexpected(fmt::format("{} document {}: {}", file, i, e.what()));
      }
      if (!node || node.IsNull()) continue;  // comments only
      if (!node.IsMap()) return tl::unexpected(fmt::format("{} document {}: not a map", file, i));
      ManifestDocument d;
      d.file = file;
      d.index = static_cast<int>(i);
      d.text = docs[i];
      d.api_version = scalar(node, "apiVersion");
      d.kind = scalar(node, "kind");
      const YAML::Node metadata = child(node, "metadata");
      d.name = scalar(metadata, "name");
      d.ns = scalar(metadata, "namespace");
      d.min_kubernetes_version =
          scalar(child(metadata, "labels"), "kstack.io/min-kubernetes-version");
      out.push_back(std::move(d));
    }
  }
  return {};
}

}  // namespace

std::string ManifestDocument::describe() const {
  return fmt::format("{} {} {}{} ({} #{})", api_version, kind, ns.empty() ? "" : ns + "/", name,
                     file, index);
}

tl::expected<std::vector<std::string>, std::string> kustomization_resources(const fs::path& dir) {
  const fs::path path = dir / "kustomization.yaml";
  try {
    const YAML::Node k = YAML::LoadFile(path.string());
    if (!k["resources"] || !k["resources"].IsSequence()) {
      return tl::unexpected(path.string() + ": no resources list");
    }
    std::vector<std::string> files;
    for (const auto& r : k["resources"]) files.push_back(r.as<std::string>());
    return files;
  } catch (const YAML::Exception& e) {
    return tl::unexpected(path.string() + ": " + e.what());
  }
}

tl::expected<std::vector<ManifestDocument>, std::string> kustomization_documents(
    const fs::path& dir) {
  std::vector<ManifestDocument> out;
  if (auto r = collect(dir, "", out); !r) return tl::unexpected(r.error());
  return out;
}

tl::expected<std::vector<std::string>, std::string> unlisted_manifests(const fs::path& root) {
  std::vector<std::string> unlisted;
  std::vector<fs::path> dirs = {root};
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_directory()) dirs.push_back(entry.path());
  }
  for (const auto& dir : dirs) {
    if (!fs::exists(dir / "kustomization.yaml")) continue;
    auto listed = kustomization_resources(dir);
    if (!listed) return tl::unexpected(listed.error());
    for (const auto& entry : fs::directory_iterator(dir)) {
      const auto name = entry.path().filename().string();
      if (!entry.is_regular_file() || entry.path().extension() != ".yaml" ||
          name == "kustomization.yaml") {
        continue;
      }
      if (std::find(listed->begin(), listed->end(), name) == listed->end()) {
        unlisted.push_back(fs::relative(entry.path(), root).string());
      }
    }
  }
  return unlisted;
}

bool version_less(const std::string& a, const std::string& b) {
  const auto va = major_minor(a);
  const auto vb = major_minor(b);
  return va.first >= 0 && vb.first >= 0 && va < vb;
}

}  // namespace kstack::testenv::e2e
