#include "cmd/import_compose.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/compose.h"
#include "catalog/yaml.h"
#include "cmd/inputs.h"
#include "cmd/yaml_out.h"

namespace kstack::cmd {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// The names Compose looks for in a project directory, in its order.
constexpr const char* kComposeFileNames[] = {"compose.yaml", "compose.yml", "docker-compose.yaml",
                                             "docker-compose.yml"};

// The file's text (the file found in it for a directory), and the name of the directory the
// project is named after; error set when it cannot be read.
std::string read_input(const std::string& given, std::istream& in, std::size_t max_bytes,
                       std::string& file, std::string& directory, std::string& error) {
  std::string text;
  std::error_code ec;
  if (given == "-") {
    file = "<stdin>";
    directory = fs::current_path(ec).filename().string();
    if (!read_capped(in, max_bytes, text)) {
      error = fmt::format("larger than the limit of {} bytes", max_bytes);
    }
    return text;
  }
  fs::path path(given);
  if (fs::is_directory(path, ec)) {
    fs::path found;
    for (const char* name : kComposeFileNames) {
      if (fs::is_regular_file(path / name, ec)) {
        found = path / name;
        break;
      }
    }
    if (found.empty()) {
      file = given;
      error =
          "a directory without compose.yaml, compose.yml, docker-compose.yaml or "
          "docker-compose.yml";
      return text;
    }
    path = found;
  }
  file = path.string();
  directory = fs::absolute(path, ec).parent_path().filename().string();
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    error = fs::exists(path, ec) ? "cannot open file" : "no such file or directory";
    return text;
  }
  if (!read_capped(stream, max_bytes, text)) {
    error = fmt::format("larger than the limit of {} bytes", max_bytes);
  } else if (stream.bad()) {
    error = "read error";
  }
  return text;
}

}  // namespace

int import_compose(const ComposeImportOptions& options) {
  return import_compose(options, std::cin, std::cout, std::cerr);
}

int import_compose(const ComposeImportOptions& options, std::istream& in, std::ostream& out,
                   std::ostream& err) {
  if (options.output != "yaml" && options.output != "json") {
    err << fmt::format("kstack import compose: unknown output format \"{}\" (yaml or json)\n",
                       options.output);
    return 2;
  }
  if (options.file.empty()) {
    err << "kstack import compose: no input: give a Compose file, a directory or -\n";
    return 2;
  }
  std::string file, directory, error;
  std::string text = read_input(options.file, in, options.max_file_bytes, file, directory, error);
  json::value document;
  if (error.empty()) {
    catalog::YamlLimits limits;
    limits.max_bytes = options.max_file_bytes;
    auto parsed = catalog::parse_yaml(text, limits);
    if (parsed) {
      document = std::move(*parsed);
    } else {
      error = parsed.error().message;
    }
  }
  if (!error.empty()) {
    err << fmt::format("kstack import compose: {}: error: {}\n", file, error);
    return 1;
  }

  catalog::ComposeOptions conversion;
  conversion.name = options.name;
  conversion.directory_name = directory;
  conversion.namespace_name = options.namespace_name;
  conversion.storage_size = options.storage_size;
  auto result = catalog::convert_compose(document, conversion);
  if (!result.error.empty()) {
    err << fmt::format("{}: error: {}\n", file, result.error);
    return 1;
  }
  const char* label = options.strict ? "error" : "warning";
  for (const auto& w : result.warnings) {
    err << fmt::format("{}: {}: {}\n", file, label, catalog::format_warning(w));
  }
  const auto& name = result.stack.at("metadata").at("name").get_string();
  const auto roles = result.stack.at("spec").at("roles").get_array().size();
  bool strict_failed = options.strict && !result.warnings.empty();
  err << fmt::format(
      "kstack import compose: AppType and Stack \"{}\" ({} role{}); {} warning{}{}\n",
      std::string_view(name), roles, roles == 1 ? "" : "s", result.warnings.size(),
      result.warnings.size() == 1 ? "" : "s", strict_failed ? "; --strict: nothing printed" : "");
  if (strict_failed) return 1;
  if (options.output == "json") {
    out << json::serialize(json::object{{"apiVersion", "v1"},
                                        {"kind", "List"},
                                        {"items", json::array{result.apptype, result.stack}}})
        << "\n";
  } else {
    out << to_yaml(result.apptype) << "---\n" << to_yaml(result.stack);
  }
  return 0;
}

CLI::App* add_import_compose_command(CLI::App& import_cmd, ComposeImportOptions& options) {
  auto* cmd = import_cmd.add_subcommand(
      "compose",
      "Convert a Compose file to an AppType (one role per service) and a Stack of it; what "
      "kstack cannot carry over is a warning naming its Compose path (docs/compose.md)");
  cmd->add_option("file", options.file,
                  "The Compose file, a directory holding compose.yaml or docker-compose.yml, or "
                  "- for stdin")
      ->required();
  cmd->add_option_function<std::string>(
      "--name", [&options](const std::string& v) { options.name = v; },
      "Name of the AppType and the Stack (default: the file's top-level name:, else its "
      "directory's name)");
  cmd->add_option_function<std::string>(
      "-n,--namespace", [&options](const std::string& v) { options.namespace_name = v; },
      "Namespace of the AppType and the Stack");
  cmd->add_option("-o,--output", options.output, "Output format: yaml or json")
      ->check(CLI::IsMember({"yaml", "json"}));
  cmd->add_option("--storage-size", options.storage_size,
                  "Claim size of each member of a service with volumes")
      ->capture_default_str();
  cmd->add_flag("--strict", options.strict,
                "Fail (print the warnings, nothing on stdout) if anything is not carried over");
  return cmd;
}

}  // namespace kstack::cmd
