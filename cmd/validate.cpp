#include "cmd/validate.h"

#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "validator/rules/offline.h"

namespace kstack::cmd {
namespace json = boost::json;

std::vector<validator::SourceDocument> read_sources(const std::vector<std::string>& paths,
                                                    std::size_t max_file_bytes,
                                                    std::vector<InputError>& errors) {
  std::vector<validator::SourceDocument> docs;
  for (auto& d : read_documents(paths, max_file_bytes, errors)) {
    docs.push_back(validator::SourceDocument{std::move(d.file), std::move(d.document)});
  }
  return docs;
}

int validate(const ValidateOptions& options) { return validate(options, std::cout, std::cerr); }

int validate(const ValidateOptions& options, std::ostream& out, std::ostream& err) {
  if (options.output != "text" && options.output != "json") {
    err << fmt::format("kstack validate: unknown output format \"{}\" (text or json)\n",
                       options.output);
    return 2;
  }
  if (options.paths.empty()) {
    err << "kstack validate: no input: give files or directories with -f\n";
    return 2;
  }
  std::vector<InputError> errors;
  auto docs = read_sources(options.paths, options.max_file_bytes, errors);

  validator::OfflineOptions vopts;
  vopts.operator_namespace = options.operator_namespace;
  vopts.default_namespace = options.default_namespace;
  auto results = validator::validate_offline(docs, vopts);

  bool invalid = false, unreadable = !errors.empty();
  for (const auto& r : results) {
    invalid = invalid || r.status == validator::OfflineResult::Status::kInvalid;
    unreadable = unreadable || r.status == validator::OfflineResult::Status::kUnreadable;
  }
  if (options.output == "json") {
    json::array a;
    for (const auto& e : errors) {
      a.push_back(json::object{{"file", e.path},
                               {"status", "unreadable"},
                               {"problems", json::array{json::value(e.message)}},
                               {"warnings", json::array{}}});
    }
    for (const auto& r : results) a.push_back(validator::to_json(r));
    out << json::serialize(a) << "\n";
  } else {
    for (const auto& r : results) {
      for (const auto& line : validator::format_text(r)) out << line << "\n";
    }
  }
  for (const auto& e : errors) err << "kstack validate: " << e.path << ": " << e.message << "\n";
  if (unreadable) return 2;
  return invalid ? 1 : 0;
}

}  // namespace kstack::cmd
