// Dockerfile syntax (see dockerfile_syntax.h).
#include "tests/nodesim/dockerfile_syntax.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <boost/json/parse.hpp>
#include <fmt/format.h>

namespace kstack::nodesim::dockerfile {

namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Docker's expansion of $VAR, ${VAR}, ${VAR:-word} and ${VAR:+word} at text[i] == '$';
// advances i past the reference.
std::string expand_reference(std::string_view text, std::size_t& i, const Vars& vars);

// RUN <<EOF heredocs: the delimiter, or "" when the line has none.
std::string heredoc_delimiter(const std::string& args, bool& strip_tabs) {
  const auto at = args.find("<<");
  if (at == std::string::npos) return {};
  std::size_t i = at + 2;
  strip_tabs = i < args.size() && args[i] == '-';
  if (strip_tabs) ++i;
  if (i < args.size() && (args[i] == '"' || args[i] == '\'')) ++i;
  std::size_t end = i;
  while (end < args.size() && name_char(args[end])) ++end;
  return args.substr(i, end - i);
}

}  // namespace

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::string expand_all(std::string_view text, const Vars& vars) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$') {
      out += expand_reference(text, i, vars);
    } else {
      out += text[i];
    }
  }
  return out;
}

namespace {

std::string expand_reference(std::string_view text, std::size_t& i, const Vars& vars) {
  auto value_of = [&](const std::string& name) {
    auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  };
  if (i + 1 < text.size() && text[i + 1] == '{') {
    const auto close = text.find('}', i + 2);
    if (close == std::string_view::npos) return std::string(text.substr(i++, 1));
    const std::string inner(text.substr(i + 2, close - i - 2));
    i = close;
    const auto op = inner.find(':');
    const std::string name = inner.substr(0, op);
    if (op == std::string::npos || op + 1 >= inner.size()) return value_of(name);
    const bool set = vars.count(name) != 0 && !value_of(name).empty();
    const std::string word = expand_all(inner.substr(op + 2), vars);
    if (inner[op + 1] == '-') return set ? value_of(name) : word;
    if (inner[op + 1] == '+') return set ? word : std::string();
    return value_of(name);
  }
  std::size_t end = i + 1;
  while (end < text.size() && name_char(text[end])) ++end;
  if (end == i + 1) return "$";
  const std::string name(text.substr(i + 1, end - i - 1));
  i = end - 1;
  return value_of(name);
}

}  // namespace

// Docker's word processing (ENV, COPY/ADD, WORKDIR, USER): whitespace separates words, quotes
// group them ('...' literally, "..." with expansion), a backslash escapes the next character.
tl::expected<std::vector<std::string>, std::string> words(std::string_view text, const Vars& vars) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const auto close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return tl::unexpected(std::string("unmatched '"));
      word += text.substr(i + 1, close - i - 1);
      i = close;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size()) {
          word += text[++j];
        } else if (text[j] == '$') {
          word += expand_reference(text, j, vars);
        } else {
          word += text[j];
        }
      }
      if (j >= text.size()) return tl::unexpected(std::string("unmatched \""));
      i = j;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
    } else if (c == '$') {
      word += expand_reference(text, i, vars);
    } else {
      word += c;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

tl::expected<std::vector<Instruction>, std::string> instructions(std::string_view text,
                                                                 const std::string& file) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(text)};
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::vector<Instruction> out;
  bool directives = true;  // parser directives only come first
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::string line = trim(lines[n]);
    if (line.empty()) {
      directives = false;
      continue;
    }
    if (line[0] == '#') {
      const auto eq = line.find('=');
      if (directives && eq != std::string::npos &&
          upper(trim(line.substr(1, eq - 1))) == "ESCAPE" && trim(line.substr(eq + 1)) != "\\") {
        return tl::unexpected(
            fmt::format("{}:{}: only the default escape character \\ is supported", file, n + 1));
      }
      continue;
    }
    directives = false;
    Instruction ins;
    ins.line = static_cast<int>(n + 1);
    std::string joined;
    while (true) {
      if (!line.empty() && line.back() == '\\') {
        joined += line.substr(0, line.size() - 1) + " ";
        // The next non-comment, non-empty line continues this one.
        do {
          ++n;
        } while (n < lines.size() && (trim(lines[n]).empty() || trim(lines[n])[0] == '#'));
        if (n >= lines.size()) break;
        line = trim(lines[n]);
        continue;
      }
      joined += line;
      break;
    }
    const auto space = joined.find_first_of(" \t");
    ins.keyword = upper(joined.substr(0, space));
    ins.args = space == std::string::npos ? std::string() : trim(joined.substr(space));
    bool strip_tabs = false;
    if (const auto delim = heredoc_delimiter(ins.args, strip_tabs); !delim.empty()) {
      if (ins.keyword != "RUN") {
        return tl::unexpected(fmt::format("{}:{}: {}: heredocs are only supported in RUN", file,
                                          ins.line, ins.keyword));
      }
      while (++n < lines.size()) {
        std::string body = lines[n];
        if (strip_tabs) body.erase(0, body.find_first_not_of('\t'));
        if (body == delim) break;
      }
    }
    out.push_back(std::move(ins));
  }
  return out;
}

// ENTRYPOINT, CMD, SHELL: a JSON array of strings (exec form), else a shell form.
std::vector<std::string> exec_or_shell(const std::string& args,
                                       const std::vector<std::string>& shell) {
  if (!args.empty() && args[0] == '[') {
    boost::system::error_code ec;
    auto v = boost::json::parse(args, ec);
    if (!ec && v.is_array() &&
        std::all_of(v.as_array().begin(), v.as_array().end(),
                    [](const auto& e) { return e.is_string(); })) {
      std::vector<std::string> out;
      for (const auto& e : v.as_array()) out.emplace_back(e.get_string());
      return out;
    }
  }
  std::vector<std::string> out = shell;
  out.push_back(args);
  return out;
}

}  // namespace kstack::nodesim::dockerfile
