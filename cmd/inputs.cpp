#include "cmd/inputs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

namespace kstack::cmd {
namespace fs = std::filesystem;

namespace {

bool is_manifest(const fs::path& p) {
  auto ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

}  // namespace

// Reads at most max_bytes (+1 to detect oversize) so a huge file never lands in memory.
bool read_capped(std::istream& in, std::size_t max_bytes, std::string& text) {
  text.assign(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text.size() <= max_bytes;
}

std::vector<std::string> collect_inputs(const std::vector<std::string>& paths,
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

std::string read_input(const std::string& file, std::size_t max_bytes, std::string& error) {
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
  if (!ok) {
    error = fmt::format("larger than the limit of {} bytes", max_bytes);
    return {};
  }
  return text;
}

std::vector<InputDocument> read_documents(const std::vector<std::string>& paths,
                                          std::size_t max_file_bytes,
                                          std::vector<InputError>& errors) {
  std::vector<InputDocument> docs;
  catalog::YamlLimits limits;
  limits.max_bytes = max_file_bytes;
  for (const auto& file : collect_inputs(paths, errors)) {
    std::string error;
    std::string text = read_input(file, max_file_bytes, error);
    if (!error.empty()) {
      errors.push_back({file, error});
      continue;
    }
    auto parsed = catalog::parse_manifests(text, limits);
    if (!parsed) {
      errors.push_back({file, parsed.error().message});
      continue;
    }
    for (auto& d : *parsed) docs.push_back(InputDocument{file, std::move(d)});
  }
  return docs;
}

}  // namespace kstack::cmd
