// The apps' container images (appdefs/<app>/image/, docs/nodesim.md "Images") for the simulated
// nodes of the e2e tests, and the check that the test machines have what those images install.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <tl/expected.hpp>

namespace kstack::testenv::e2e {

// The source tree's appdefs/ directory.
std::filesystem::path appdefs_dir();

// For every <appdefs_root>/<app>/ with both an apptype.yaml and an image/ directory:
// spec.defaultImageRepoTag -> <appdefs_root>/<app>/image. The default images of the e2e
// environment's simulated nodes (EnvironmentOptions::node), so that app e2e tests need nothing.
// An apptype.yaml that cannot be read or has no defaultImageRepoTag is an error naming it.
tl::expected<std::map<std::string, std::filesystem::path>, std::string> appdef_images(
    const std::filesystem::path& appdefs_root = appdefs_dir());

// The Debian packages of scripts/install-deps.sh's `packages=(...)` list.
std::vector<std::string> install_deps_packages(const std::string& script_text);

// The packages a Dockerfile `apt-get install`s that `available` lacks, as
// "<Dockerfile>: <package>" lines (empty: none missing).
tl::expected<std::vector<std::string>, std::string> packages_missing_from(
    const std::filesystem::path& dockerfile, const std::vector<std::string>& available);

}  // namespace kstack::testenv::e2e
