#include "cmd/validate.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/yaml.h"
#include "validator/rules/offline.h"

namespace kstack::cmd {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

bool is_manifest(const fs::path& p) {
  auto ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

// Expands directories (recursively, sorted so output is stable); errors name the path.
std::vector<std::string> collect(const std::vector<std::string>& paths,
                                 std::vector<InputError>& errors) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (p != "-" && fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && is_manifest(it->path())) {
          found.push_back(it->path().string());
        }
      }
      if (ec) errors.push_back({p, ec.message()});
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (p == "-" || fs::exists(p, ec)) {  // "-" is stdin
      files.push_back(p);
    } else {
      errors.push_back({p, "no such file or directory"});
    }
  }
  return files;
}

// Reads at most max_bytes (+1 to detect oversize) so a huge file never lands in memory.
bool read_capped(std::istream& in, std::size_t max_bytes, std::string& text) {
  text.assign(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text.size() <= max_bytes;
}

std::string read_file(const std::string& file, std::size_t max_bytes, std::string& error) {
  std::string text;
  bool ok = false;
  if (file == "-") {
    ok = read_capped(std::cin, max_bytes, text);
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      error = "cannot open file";
      return {};
    }
    ok = read_capped(in, max_bytes, text);
    if (in.bad()) {
      error = "read error";
      return {};
    }
  }
  if (!ok) error = fmt::format("larger than the limit of {} bytes", max_bytes);
  return text;
}

}  // namespace

std::vector<validator::SourceDocument> read_sources(const std::vector<std::string>& paths,
                                                    std::size_t max_file_bytes,
                                                    std::vector<InputError>& errors) {
  std::vector<validator::SourceDocument> docs;
  catalog::YamlLimits limits;
  limits.max_bytes = max_file_bytes;
  for (const auto& file : collect(paths, errors)) {
    std::string error;
    std::string text = read_file(file, max_file_bytes, error);
    if (!error.empty()) {
      errors.push_back({file, error});
      continue;
    }
    auto parsed = catalog::parse_manifests(text, limits);
    if (!parsed) {
      errors.push_back({file, parsed.error().message});
      continue;
    }
    for (auto& d : *parsed) docs.push_back(validator::SourceDocument{file, std::move(d)});
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
