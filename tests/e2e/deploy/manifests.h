// deploy/ as `kubectl apply -k deploy/` would apply it: every file its kustomization.yaml lists,
// in that order, every document of each as written. Applying file by file in the
// kustomization's order is what the test does instead of `apply -k` (kubectl 1.20's kustomize
// is old), and it lets the test see each object it applies or leaves out.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <tl/expected.hpp>

namespace kstack::testenv::e2e {

struct ManifestDocument {
  std::string file;  // relative to the kustomization's directory
  int index = 0;     // 0-based document number in the file
  std::string text;  // exactly as written (comments included)
  std::string api_version;
  std::string kind;
  std::string name;
  std::string ns;
  std::string min_kubernetes_version;  // label kstack.io/min-kubernetes-version, "" if none
  std::string describe() const;        // "policy/v1 PodDisruptionBudget kstack-system/x (f #1)"
};

// The documents of the files `dir`/kustomization.yaml lists under `resources` (a directory
// resource: its own kustomization, recursively), in order. Documents holding only comments
// are left out, as kubectl does. Errors name the file.
tl::expected<std::vector<ManifestDocument>, std::string> kustomization_documents(
    const std::filesystem::path& dir);

// The files a kustomization lists under `resources`, relative to its directory.
tl::expected<std::vector<std::string>, std::string> kustomization_resources(
    const std::filesystem::path& dir);

// *.yaml files of every directory under `root` that has a kustomization.yaml (its own
// directory only) which that kustomization does not list: a manifest `apply -k` would skip.
tl::expected<std::vector<std::string>, std::string> unlisted_manifests(
    const std::filesystem::path& root);

// "1.21" < "1.20"? Major.minor versions compared as numbers; false when either is malformed.
bool version_less(const std::string& a, const std::string& b);

}  // namespace kstack::testenv::e2e
