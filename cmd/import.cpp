#include "cmd/import.h"

#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "catalog/kubedirector.h"
#include "catalog/yaml.h"
#include "cmd/inputs.h"
#include "cmd/yaml_out.h"

namespace kstack::cmd {
namespace json = boost::json;
using catalog::ImportIssue;

namespace {

bool loses_data(ImportIssue::Severity s) {
  return s == ImportIssue::Severity::kDropped || s == ImportIssue::Severity::kChanged;
}

// What stderr calls an issue: strict mode turns lost data into errors.
std::string_view label(ImportIssue::Severity s, bool strict) {
  if (loses_data(s)) return strict ? "error" : "warning";
  return s == ImportIssue::Severity::kNote ? "note" : "warning";
}

struct Tally {
  std::size_t documents = 0, converted = 0, skipped = 0, unusable = 0;
  std::size_t dropped = 0, changed = 0;
};

void print_objects(const std::vector<json::value>& objects, const std::string& format,
                   std::ostream& out) {
  if (format == "json") {
    if (objects.size() == 1) {
      out << json::serialize(objects.front()) << "\n";
    } else {  // kubectl's form for several objects; `kubectl apply -f` takes it as is
      json::array items(objects.begin(), objects.end());
      out << json::serialize(
                 json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}})
          << "\n";
    }
    return;
  }
  bool first = true;
  for (const auto& o : objects) {
    out << (first ? "" : "---\n") << to_yaml(o);
    first = false;
  }
}

}  // namespace

int import_manifests(const ImportOptions& options) {
  return import_manifests(options, std::cout, std::cerr);
}

int import_manifests(const ImportOptions& options, std::ostream& out, std::ostream& err) {
  if (options.output != "yaml" && options.output != "json") {
    err << fmt::format("kstack import: unknown output format \"{}\" (yaml or json)\n",
                       options.output);
    return 2;
  }
  if (options.paths.empty()) {
    err << "kstack import: no input: give files or directories with -f (or convert a Compose "
           "file with `kstack import compose FILE`)\n";
    return 2;
  }
  catalog::ImportOptions conversion;
  conversion.namespace_override = options.namespace_name;
  conversion.operator_namespace = options.operator_namespace;
  catalog::YamlLimits limits;
  limits.max_bytes = options.max_file_bytes;

  std::vector<InputError> errors;
  std::vector<json::value> objects;
  Tally tally;
  for (const auto& file : collect_inputs(options.paths, errors)) {
    std::string error;
    std::string text = read_input(file, options.max_file_bytes, error);
    std::vector<catalog::YamlDocument> docs;
    if (error.empty()) {
      auto parsed = catalog::parse_manifests(text, limits);
      if (parsed) {
        docs = std::move(*parsed);
      } else {
        error = parsed.error().message;
      }
    }
    if (!error.empty()) {
      errors.push_back({file, error});
      continue;
    }
    for (const auto& doc : docs) {
      ++tally.documents;
      std::string where = fmt::format("{}:doc{}", file, doc.index);
      if (!doc.error.empty()) {
        ++tally.unusable;
        err << fmt::format("{}: error: {}\n", where, doc.error);
        continue;
      }
      auto result = catalog::import_kubedirector(doc.value, conversion);
      if (!result.error.empty()) {
        ++tally.unusable;
        err << fmt::format("{}: error: {}; skipped\n", where, result.error);
        continue;
      }
      for (const auto& issue : result.issues) {
        tally.dropped += issue.severity == ImportIssue::Severity::kDropped ? 1 : 0;
        tally.changed += issue.severity == ImportIssue::Severity::kChanged ? 1 : 0;
        err << fmt::format("{}: {}: {}\n", where, label(issue.severity, options.strict),
                           catalog::format_issue(result, issue));
      }
      if (result.skipped) {
        ++tally.skipped;
        continue;
      }
      ++tally.converted;
      objects.push_back(std::move(result.object));
    }
  }
  for (const auto& e : errors)
    err << "kstack import: " << e.path << ": error: " << e.message << "\n";

  bool unusable = !errors.empty() || tally.unusable > 0;
  bool strict_failed = options.strict && tally.dropped + tally.changed > 0;
  err << fmt::format(
      "kstack import: {} of {} documents converted ({} skipped, {} unusable{}); {} fields not "
      "carried over, {} changed{}\n",
      tally.converted, tally.documents, tally.skipped, tally.unusable,
      errors.empty() ? "" : fmt::format(", {} unreadable input(s)", errors.size()), tally.dropped,
      tally.changed, strict_failed ? "; --strict: nothing printed" : "");
  if (strict_failed) return 1;
  print_objects(objects, options.output, out);
  return unusable ? 1 : 0;
}

}  // namespace kstack::cmd
