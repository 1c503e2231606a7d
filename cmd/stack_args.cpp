// The pure parts of cmd/stack_commands.h: durations, `scale` arguments and its patch, the kinds
// `apply` takes.
#include <cctype>
#include <charconv>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "cmd/stack_commands.h"

namespace kstack::cmd {
namespace json = boost::json;

tl::expected<std::chrono::milliseconds, std::string> parse_duration(const std::string& text) {
  auto bad = [&] {
    return tl::unexpected(fmt::format(
        "invalid duration \"{}\": use a number with a unit, e.g. 90s, 10m, 1h30m, 500ms", text));
  };
  if (text == "0") return std::chrono::milliseconds(0);
  if (text.empty()) return bad();
  std::chrono::milliseconds total{0};
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) ++i;
    if (i == start) return bad();
    long long n = 0;
    auto [ptr, ec] = std::from_chars(text.data() + start, text.data() + i, n);
    if (ec != std::errc() || n > 1'000'000'000) return bad();
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])) != 0) ++i;
    const std::string unit = text.substr(unit_start, i - unit_start);
    if (unit == "ms") {
      total += std::chrono::milliseconds(n);
    } else if (unit == "s") {
      total += std::chrono::seconds(n);
    } else if (unit == "m") {
      total += std::chrono::minutes(n);
    } else if (unit == "h") {
      total += std::chrono::hours(n);
    } else {
      return bad();
    }
  }
  return total;
}

tl::expected<std::vector<std::pair<std::string, int>>, std::string> parse_scale_requests(
    const std::vector<std::string>& args) {
  if (args.empty()) return tl::unexpected(std::string("give at least one ROLE=N"));
  std::vector<std::pair<std::string, int>> out;
  std::set<std::string> seen;
  for (const auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size()) {
      return tl::unexpected(fmt::format("\"{}\": expected ROLE=N, e.g. member=5", a));
    }
    const std::string role = a.substr(0, eq), count = a.substr(eq + 1);
    int n = -1;
    auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (ec != std::errc() || ptr != count.data() + count.size() || n < 0) {
      return tl::unexpected(fmt::format("\"{}\": the member count must be a whole number >= 0", a));
    }
    if (!seen.insert(role).second) {
      return tl::unexpected(fmt::format("\"{}\": role {} is named twice", a, role));
    }
    out.emplace_back(role, n);
  }
  return out;
}

tl::expected<json::value, std::string> scale_patch(
    const json::value& stack, const std::vector<std::pair<std::string, int>>& requests) {
  boost::system::error_code ec;
  const auto* roles = stack.find_pointer("/spec/roles", ec);
  std::vector<std::string> ids;
  if (roles != nullptr && roles->is_array()) {
    for (const auto& r : roles->get_array()) {
      const auto* id = r.is_object() ? r.get_object().if_contains("id") : nullptr;
      ids.push_back(id != nullptr && id->is_string() ? std::string(id->get_string()) : "");
    }
  }
  json::array patch;
  for (const auto& [role, n] : requests) {
    std::size_t index = ids.size();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] == role) index = i;
    }
    if (index == ids.size()) {
      std::string known;
      for (const auto& id : ids) known += (known.empty() ? "" : ", ") + id;
      return tl::unexpected(fmt::format("the Stack has no role \"{}\" in spec.roles (it has: {})",
                                        role, known.empty() ? "none" : known));
    }
    const std::string base = fmt::format("/spec/roles/{}", index);
    patch.push_back(json::object{{"op", "test"}, {"path", base + "/id"}, {"value", role}});
    patch.push_back(json::object{{"op", "add"}, {"path", base + "/members"}, {"value", n}});
  }
  return json::value(std::move(patch));
}

std::string refuse_kind(const json::value& object) {
  if (!object.is_object()) return "not an object";
  auto field = [&](std::string_view name) {
    const auto* v = object.get_object().if_contains(name);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  const std::string api = field("apiVersion"), kind = field("kind");
  const bool kstack_kind = kind == "AppType" || kind == "Stack" || kind == "KStackConfig";
  if (kstack_kind && api == "kstack.io/v1beta1") return {};
  if (kind == "ConfigMap" && api == "v1") return {};
  if (kind.empty()) return "no kind";
  if (kstack_kind) {
    return fmt::format("kind {} of apiVersion \"{}\" (expected kstack.io/v1beta1)", kind, api);
  }
  return fmt::format(
      "kind {} (apiVersion \"{}\") is not one kstack applies: AppType, Stack, KStackConfig "
      "(kstack.io/v1beta1) and ConfigMap (v1) only; use kubectl for the rest",
      kind, api);
}

}  // namespace kstack::cmd
