#include "catalog/yaml.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace kstack::catalog {
namespace json = boost::json;

namespace {

// 128-bit arithmetic for exact int64/uint64 range checks; __extension__ for -Wpedantic.
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

struct Chunk {
  std::string_view text;
  std::size_t line = 1;
};

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// Splits on separator lines (`---`, trailing blanks tolerated), remembering where each starts.
std::vector<Chunk> split_documents(std::string_view text) {
  std::vector<Chunk> chunks;
  std::size_t chunk_start = 0, chunk_line = 1, pos = 0, line = 1;
  while (true) {
    std::size_t end = text.find('\n', pos);
    std::size_t stop = end == std::string_view::npos ? text.size() : end;
    if (trim_right(text.substr(pos, stop - pos)) == "---") {
      chunks.push_back(Chunk{text.substr(chunk_start, pos - chunk_start), chunk_line});
      chunk_start = end == std::string_view::npos ? text.size() : end + 1;
      chunk_line = line + 1;
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
    ++line;
  }
  chunks.push_back(Chunk{text.substr(chunk_start), chunk_line});
  return chunks;
}

// Only blank lines, comments, directives or end markers: not a document.
bool is_blank(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? end : end - pos);
    std::size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line[first] != '#' && line[first] != '%' &&
        trim_right(line.substr(first)) != "...") {
      return false;
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return true;
}

// strconv.ParseInt/ParseUint(s, 0, 64) as go-yaml v2 uses them: sign, 0x/0o/0b prefixes,
// a leading 0 meaning octal. nullopt when it is not such an integer or does not fit.
std::optional<json::value> parse_int(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
    base = 8;
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
  }
  if (base != 10) {
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  UInt128 magnitude = 0;
  for (char c : s) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : 99;
    if (digit >= base) return std::nullopt;
    magnitude = magnitude * static_cast<unsigned>(base) + static_cast<unsigned>(digit);
    if (magnitude > UINT64_MAX) return std::nullopt;
  }
  if (negative) {
    if (magnitude > static_cast<UInt128>(INT64_MAX) + 1) return std::nullopt;
    return json::value(static_cast<std::int64_t>(-static_cast<Int128>(magnitude)));
  }
  if (magnitude <= static_cast<UInt128>(INT64_MAX)) {
    return json::value(static_cast<std::int64_t>(magnitude));
  }
  return json::value(static_cast<std::uint64_t>(magnitude));
}

// go-yaml v2's float pattern: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool looks_like_float(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - from;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

json::value resolve_plain(const std::string& s) {
  static constexpr std::string_view kTrue[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                               "True", "TRUE", "on",  "On",  "ON"};
  static constexpr std::string_view kFalse[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                                "False", "FALSE", "off", "Off", "OFF"};
  for (auto t : kTrue)
    if (s == t) return true;
  for (auto f : kFalse)
    if (s == f) return false;
  if (s == "~" || s == "null" || s == "Null" || s == "NULL" || s.empty()) return nullptr;
  if (s.empty() || std::string_view("+-.0123456789").find(s[0]) == std::string_view::npos) {
    return json::string(s);
  }
  std::string plain;
  for (char c : s)
    if (c != '_') plain.push_back(c);
  if (auto i = parse_int(plain)) return *i;
  if (looks_like_float(plain)) {
    double d = std::strtod(plain.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  // .inf and .nan have no JSON form: kept as text rather than failing the document.
  return json::string(s);
}

class Converter {
 public:
  explicit Converter(const YamlLimits& limits) : limits_(limits) {}

  bool convert(const YAML::Node& node, json::value& out, std::size_t depth) {
    if (++nodes_ > limits_.max_nodes) {
      return fail(fmt::format("more than {} values (alias expansion?)", limits_.max_nodes));
    }
    if (depth > limits_.max_depth) {
      return fail(fmt::format("nested deeper than {} levels", limits_.max_depth));
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out = nullptr;
        return true;
      case YAML::NodeType::Scalar:
        out = scalar(node);
        return true;
      case YAML::NodeType::Sequence: {
        json::array a;
        for (const auto& item : node) {
          if (!convert(item, a.emplace_back(nullptr), depth + 1)) return false;
        }
        out = std::move(a);
        return true;
      }
      case YAML::NodeType::Map: {
        json::object o;
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) {
            return fail(
                fmt::format("line {}: mapping keys must be scalars", kv.first.Mark().line + 1));
          }
          if (!convert(kv.second, o[kv.first.Scalar()], depth + 1)) return false;
        }
        out = std::move(o);
        return true;
      }
    }
    return fail("unknown YAML node type");
  }

  std::string error;

 private:
  // Quoted and block scalars carry the non-specific tag "!", plain ones "?": only plain
  // scalars are resolved to numbers, booleans and null.
  static json::value scalar(const YAML::Node& node) {
    const std::string& tag = node.Tag();
    if (tag == "?") return resolve_plain(node.Scalar());
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
        tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
      return resolve_plain(node.Scalar());
    }
    return json::string(node.Scalar());
  }

  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }

  const YamlLimits& limits_;
  std::size_t nodes_ = 0;
};

tl::unexpected<kube::Error> too_large(std::size_t size, std::size_t max) {
  return kube::make_error(kube::ErrorKind::kPayloadTooLarge,
                          fmt::format("input is {} bytes, more than the limit of {}", size, max));
}

// The first byte that is NUL or not part of well-formed UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF); npos when there is none.
std::size_t first_bad_byte(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == 0) return i;
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = b >= 0xC2 && b <= 0xDF   ? 2
                      : b >= 0xE0 && b <= 0xEF ? 3
                      : b >= 0xF0 && b <= 0xF4 ? 4
                                               : 0;
    if (len == 0 || i + len > text.size()) return i;
    const auto b1 = static_cast<unsigned char>(text[i + 1]);
    // The second byte's range depends on the first (excludes overlongs and surrogates).
    const unsigned char lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
    if (b1 < lo || b1 > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      const auto bk = static_cast<unsigned char>(text[i + k]);
      if (bk < 0x80 || bk > 0xBF) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

// Manifests are UTF-8 text (YAML 1.2 and JSON both say so); a NUL or a malformed sequence
// means the input is not what it claims, and passing it on (or silently replacing it) would
// hand the API server something other than what the user wrote.
std::optional<tl::unexpected<kube::Error>> not_text(std::string_view text) {
  const std::size_t at = first_bad_byte(text);
  if (at == std::string_view::npos) return std::nullopt;
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  return kube::make_error(kube::ErrorKind::kInvalidArgument,
                          fmt::format("line {}, byte {}: {} (manifests must be UTF-8 text)", line,
                                      at + 1, text[at] == '\0' ? "NUL byte" : "invalid UTF-8"));
}

YamlDocument load_one(const Chunk& chunk, std::size_t index, const YamlLimits& limits) {
  YamlDocument doc;
  doc.index = index;
  doc.line = chunk.line;
  try {
    YAML::Node node = YAML::Load(std::string(chunk.text));
    Converter c(limits);
    if (!c.convert(node, doc.value, 0)) {
      doc.value = nullptr;
      doc.error = c.error;
    } else if (!doc.value.is_object()) {
      // yaml-cpp reads some malformed text (",") as null instead of failing.
      doc.value = nullptr;
      doc.error = "a manifest must be a YAML mapping";
    }
  } catch (const YAML::Exception& e) {
    doc.value = nullptr;
    doc.error =
        fmt::format("line {}, column {}: {}", chunk.line + e.mark.line, e.mark.column + 1, e.msg);
  } catch (const std::exception& e) {
    doc.value = nullptr;
    doc.error = e.what();
  }
  return doc;
}

// A `kind: List` document (kubectl get -o yaml) stands for its items.
void expand_lists(std::vector<YamlDocument>& docs) {
  std::vector<YamlDocument> out;
  for (auto& d : docs) {
    const auto* o = d.value.if_object();
    const auto* kind = o ? o->if_contains("kind") : nullptr;
    const auto* items = o ? o->if_contains("items") : nullptr;
    if (kind && kind->is_string() && kind->get_string() == "List" && items && items->is_array()) {
      for (const auto& item : items->get_array()) {
        out.push_back(YamlDocument{d.index, d.line, item, {}});
      }
      continue;
    }
    out.push_back(std::move(d));
  }
  docs = std::move(out);
}

}  // namespace

kube::Result<std::vector<YamlDocument>> parse_yaml_documents(std::string_view text,
                                                             const YamlLimits& limits) {
  if (text.size() > limits.max_bytes) return too_large(text.size(), limits.max_bytes);
  if (auto bad = not_text(text)) return *bad;
  std::vector<YamlDocument> docs;
  for (const auto& chunk : split_documents(text)) {
    if (is_blank(chunk.text)) continue;
    docs.push_back(load_one(chunk, docs.size() + 1, limits));
  }
  return docs;
}

kube::Result<json::value> parse_yaml(std::string_view text, const YamlLimits& limits) {
  auto docs = parse_yaml_documents(text, limits);
  if (!docs) return tl::unexpected(docs.error());
  if (docs->size() != 1) {
    return kube::make_error(kube::ErrorKind::kInvalidArgument,
                            fmt::format("expected one YAML document, found {}", docs->size()));
  }
  auto& doc = docs->front();
  if (!doc.error.empty()) return kube::make_error(kube::ErrorKind::kInvalidArgument, doc.error);
  return std::move(doc.value);
}

kube::Result<std::vector<YamlDocument>> parse_manifests(std::string_view text,
                                                        const YamlLimits& limits) {
  if (text.size() > limits.max_bytes) return too_large(text.size(), limits.max_bytes);
  if (auto bad = not_text(text)) return *bad;
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    json::parse_options opts;
    opts.max_depth = limits.max_depth;
    boost::system::error_code ec;
    json::value v = json::parse(text, ec, {}, opts);
    if (!ec) {
      std::vector<YamlDocument> docs;
      auto newlines =
          std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(first), '\n');
      std::size_t line = 1 + static_cast<std::size_t>(newlines);
      auto add = [&](json::value item) {
        YamlDocument d{docs.size() + 1, line, std::move(item), {}};
        if (!d.value.is_object()) {
          d.value = nullptr;
          d.error = "a manifest must be a JSON object";
        }
        docs.push_back(std::move(d));
      };
      if (v.is_array()) {
        for (auto& item : v.get_array()) add(std::move(item));
      } else {
        add(std::move(v));
      }
      expand_lists(docs);
      return docs;
    }
    // Not JSON after all: YAML flow style (`{a: b}`) also starts this way.
  }
  auto docs = parse_yaml_documents(text, limits);
  if (docs) expand_lists(*docs);
  return docs;
}

}  // namespace kstack::catalog
