// Manifest input shared by the commands that take `-f FILE|DIR|-` (validate, render, import,
// apply): directories searched recursively for *.yaml, *.yml and *.json in sorted order, "-"
// for stdin, every file read up to a byte cap so a huge file never lands in memory.
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <vector>

#include "catalog/yaml.h"

namespace kstack::cmd {

// The per-file read cap of every command (kstack validate's since issue 8).
inline constexpr std::size_t kMaxInputFileBytes = 4u << 20;

// A path that could not be read (missing, too large, not YAML/JSON).
struct InputError {
  std::string path;
  std::string message;
};

// The files `paths` name: directories expanded recursively (sorted), "-" kept as is, a missing
// path reported in `errors`.
std::vector<std::string> collect_inputs(const std::vector<std::string>& paths,
                                        std::vector<InputError>& errors);

// Reads `in` up to max_bytes into `text`; false when it holds more (text then holds
// max_bytes + 1 bytes, never the whole stream).
bool read_capped(std::istream& in, std::size_t max_bytes, std::string& text);

// One file's text ("-" = stdin), at most max_bytes; `error` set (and "" returned) when it
// cannot be opened or read, or is larger than max_bytes.
std::string read_input(const std::string& file, std::size_t max_bytes, std::string& error);

// The documents of one input file as catalog::parse_manifests splits them.
struct InputDocument {
  std::string file;
  catalog::YamlDocument document;
};

// Every document of every file of `paths`; a file that cannot be read or parsed as a whole is
// reported in `errors` (a single bad document keeps its own `error`).
std::vector<InputDocument> read_documents(const std::vector<std::string>& paths,
                                          std::size_t max_file_bytes,
                                          std::vector<InputError>& errors);

}  // namespace kstack::cmd
