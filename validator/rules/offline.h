// Offline validation (`kstack validate`, and `kstack render` before it renders): manifests
// read from files are checked as CREATE requests by the webhook's own RulesHandler. The
// AppTypes among them form the catalog: one that names its namespace is found there (`local`
// for Stacks of that namespace, `system` in the operator namespace); one that names none is
// found by every Stack of the input, as if applied to each Stack's namespace. A KStackConfig
// that names no namespace is taken as the operator's. Other objects without a namespace get
// OfflineOptions::default_namespace, as kubectl would. StorageClasses are unknown offline, so
// the storage class rules are skipped.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/memory_catalog.h"
#include "catalog/yaml.h"

namespace kstack::validator {

struct OfflineOptions {
  std::string operator_namespace = "kstack-system";
  std::string default_namespace = "default";  // for objects without metadata.namespace
};

struct SourceDocument {
  std::string file;
  catalog::YamlDocument document;  // document.error set when it could not be read
};

struct OfflineResult {
  enum class Status { kOk, kInvalid, kUnreadable, kSkipped };
  std::string file;
  std::size_t document = 0;  // 1-based
  std::size_t line = 0;
  std::string kind;
  std::string namespace_name;
  std::string name;
  Status status = Status::kOk;
  std::vector<std::string> problems;  // "field: reason" (kInvalid) or the read error
  std::vector<std::string> warnings;
};

std::string_view to_string(OfflineResult::Status status);  // ok, invalid, unreadable, skipped

// One result per document, in order. Objects of other API groups are kSkipped; an unknown
// kind in kstack.io is kInvalid.
std::vector<OfflineResult> validate_offline(const std::vector<SourceDocument>& documents,
                                            const OfflineOptions& options = {});

// One offline run: the results, the objects as they would be stored (index = document; null
// for unreadable documents) and the catalog they formed, which `kstack render` resolves the
// Stack's AppType and the KStackConfig from, exactly as the rules did.
struct OfflineRun {
  explicit OfflineRun(const OfflineOptions& options);
  std::vector<OfflineResult> results;
  std::vector<boost::json::value> objects;
  std::unique_ptr<catalog::MemoryCatalog> memory;
};
OfflineRun run_offline(const std::vector<SourceDocument>& documents,
                       const OfflineOptions& options = {});

// "file:docN kind ns/name: OK" / one line per problem and warning (text output).
std::vector<std::string> format_text(const OfflineResult& result);
// The JSON form of `-o json`: {file, document, line, kind, namespace, name, status,
// problems[], warnings[]}.
boost::json::value to_json(const OfflineResult& result);

}  // namespace kstack::validator
