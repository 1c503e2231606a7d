// The apps' images for the e2e nodes (see appdef_images.h).
#include "tests/nodesim/testing/appdef_images.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "tests/nodesim/image.h"

#ifndef KSTACK_SOURCE_DIR
#error "KSTACK_SOURCE_DIR must name the source tree"
#endif

namespace kstack::testenv::e2e {

namespace fs = std::filesystem;

fs::path appdefs_dir() { return fs::path(KSTACK_SOURCE_DIR) / "appdefs"; }

tl::expected<std::map<std::string, fs::path>, std::string> appdef_images(
    const fs::path& appdefs_root) {
  std::map<std::string, fs::path> images;
  std::error_code ec;
  for (const auto& app : fs::directory_iterator(appdefs_root, ec)) {
    const fs::path apptype = app.path() / "apptype.yaml";
    std::error_code probe;  // a missing file is an answer here, not an error
    if (!fs::is_directory(app.path() / "image", probe) || !fs::exists(apptype, probe)) continue;
    std::string ref;
    try {
      // An AppType file may hold several documents; the AppType's is the one with the tag.
      for (const auto& doc : YAML::LoadAllFromFile(apptype.string())) {
        if (doc["kind"] && doc["kind"].as<std::string>() == "AppType" && doc["spec"] &&
            doc["spec"]["defaultImageRepoTag"]) {
          ref = doc["spec"]["defaultImageRepoTag"].as<std::string>();
        }
      }
    } catch (const YAML::Exception& e) {
      return tl::unexpected(fmt::format("{}: {}", apptype.string(), e.what()));
    }
    if (ref.empty()) {
      return tl::unexpected(fmt::format("{}: no spec.defaultImageRepoTag for its image/ directory",
                                        apptype.string()));
    }
    images[ref] = app.path() / "image";
  }
  if (ec) return tl::unexpected(fmt::format("{}: {}", appdefs_root.string(), ec.message()));
  return images;
}

std::vector<std::string> install_deps_packages(const std::string& script_text) {
  std::vector<std::string> out;
  const auto start = script_text.find("packages=(");
  if (start == std::string::npos) return out;
  std::istringstream lines(script_text.substr(start + 10));
  for (std::string line; std::getline(lines, line);) {
    const auto close = line.find(')');
    std::string body = line.substr(0, std::min(close, line.find('#')));
    std::istringstream words(body);
    for (std::string w; words >> w;) out.push_back(w);
    if (close != std::string::npos && close < line.find('#')) break;
  }
  return out;
}

tl::expected<std::vector<std::string>, std::string> packages_missing_from(
    const fs::path& dockerfile, const std::vector<std::string>& available) {
  std::ifstream in(dockerfile);
  if (!in) return tl::unexpected("cannot read " + dockerfile.string());
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  auto packages = nodesim::apt_installed_packages(text, dockerfile.string());
  if (!packages) return tl::unexpected(packages.error());
  std::vector<std::string> missing;
  for (const auto& p : *packages) {
    if (std::find(available.begin(), available.end(), p) == available.end()) {
      missing.push_back(fmt::format("{}: {}", dockerfile.string(), p));
    }
  }
  return missing;
}

}  // namespace kstack::testenv::e2e
