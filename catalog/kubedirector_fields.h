// The field tables behind catalog/kubedirector.h (detail, not part of the catalog's API):
// for each KubeDirector kind, every field KubeDirector documents (its API types,
// bluek8s/kubedirector pkg/apis/kubedirector/v1beta1/*_types.go) and what becomes of it in kstack —
// copied, walked into, dropped with a reason, or handled by a function (role-id renaming, quantity
// checks, setup-package and affinity warnings).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <fmt/format.h>

#include "catalog/kubedirector.h"

namespace kstack::catalog::kubedirector_detail {

using Severity = ImportIssue::Severity;

// The state of one object's conversion: which kind, the issues found so far, the setup
// packages already warned about (once per package).
struct Context {
  std::string_view kind;
  std::vector<ImportIssue>& issues;
  std::set<std::string> packages_seen;

  void add(Severity severity, std::string field, std::string message) {
    issues.push_back(ImportIssue{severity, std::move(field), std::move(message)});
  }
  void dropped(std::string field, std::string_view why) {
    add(Severity::kDropped, std::move(field), fmt::format("not carried over: {}", why));
  }
};

// The whole object (apiVersion, kind, metadata, spec, status) walked with the table of
// c.kind (KubeDirectorApp, KubeDirectorCluster or KubeDirectorConfig): the carried fields
// under their kstack names, in the documented order; apiVersion and kind are left to the
// caller. Issues go to c.
boost::json::object convert_fields(Context& c, const boost::json::object& source);

}  // namespace kstack::catalog::kubedirector_detail
