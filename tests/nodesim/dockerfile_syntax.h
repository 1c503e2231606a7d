// Dockerfile syntax, for the reader (image.h): instructions out of lines (continuations,
// comments, parser directives, RUN heredocs), Docker's word processing with variable
// substitution, and exec/shell forms.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

namespace kstack::nodesim::dockerfile {

// Variables known at a point of a stage (ARG defaults, ENV), for substitution.
using Vars = std::map<std::string, std::string>;

// One instruction after joining continuation lines and dropping comments.
struct Instruction {
  int line = 0;         // of its first physical line
  std::string keyword;  // upper case
  std::string args;     // the rest, trimmed
};

std::string trim(std::string_view s);

// The instructions of a Dockerfile; `file` names it in errors.
tl::expected<std::vector<Instruction>, std::string> instructions(std::string_view text,
                                                                 const std::string& file);

// $VAR, ${VAR}, ${VAR:-word} and ${VAR:+word} replaced (unset: empty); quotes are kept.
std::string expand_all(std::string_view text, const Vars& vars);

// Docker's word processing (ENV, COPY/ADD, WORKDIR, USER): whitespace separates words, quotes
// group them ('...' literally, "..." with expansion), a backslash escapes the next character.
tl::expected<std::vector<std::string>, std::string> words(std::string_view text, const Vars& vars);

// ENTRYPOINT, CMD, SHELL: a JSON array of strings (exec form), else `shell` + [args].
std::vector<std::string> exec_or_shell(const std::string& args,
                                       const std::vector<std::string>& shell);

}  // namespace kstack::nodesim::dockerfile
