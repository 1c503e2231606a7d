#include "executor/drift.h"

#include <array>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/quantity.h"

namespace kstack::executor {
namespace json = boost::json;

namespace {

// Keys under which strings are Kubernetes quantities (container resources, PVC storage,
// volumeClaimTemplates' requests).
bool quantity_context(std::string_view key) {
  return key == "requests" || key == "limits" || key == "storage" || key == "capacity";
}

// Keys whose maps are label selectors: compared exactly, since a key another manager adds
// narrows what the selector matches (a Service that selects no pod, pods that fit no node).
// Server-side apply cannot drop such a key, so the executor replaces the map whole.
bool exact_context(std::string_view key) {
  return key == "selector" || key == "matchLabels" || key == "nodeSelector";
}

// The first key of `live` that `desired` lacks, for an exact map.
template <class LiveObject>
std::optional<std::string_view> extra_key(const LiveObject& live, const json::object& desired) {
  for (const auto& entry : live) {
    if (!desired.contains(entry.key())) return std::string_view(entry.key());
  }
  return std::nullopt;
}

template <class L>
bool scalar_equal(const L& live, const json::value& desired, bool quantities) {
  if (quantities && live.is_string() && desired.is_string()) {
    // The same text is the same quantity (and the common case: no parsing needed).
    if (std::string_view(live.get_string()) == std::string_view(desired.get_string())) return true;
    auto a = catalog::Quantity::parse(std::string_view(live.get_string()));
    auto b = catalog::Quantity::parse(std::string_view(desired.get_string()));
    if (a && b) return *a == *b;
  }
  // Integers may come back as int64 or uint64; compare numerically.
  if (live.is_number() && desired.is_number() && !live.is_double() && !desired.is_double()) {
    std::error_code e1, e2;
    const auto x = live.template to_number<std::int64_t>(e1);
    const auto y = desired.to_number<std::int64_t>(e2);
    if (!e1 && !e2) return x == y;
  }
  return live == desired;
}

// An empty desired map/list is the same as an absent one after defaulting.
bool empty_container(const json::value& v) {
  return (v.is_object() && v.get_object().empty()) || (v.is_array() && v.get_array().empty());
}

// What diff() below decides, without building paths: a pass checks every owned object, and
// nearly all of them are covered, so this is the hot path (no allocation at all).
template <class L>
bool covered(const L& live, const json::value& desired, bool quantities, bool exact = false) {
  if (desired.is_object()) {
    const auto* l = live.if_object();
    if (l == nullptr) return false;
    const auto& d = desired.get_object();
    if (exact && extra_key(*l, d)) return false;
    for (const auto& [k, v] : d) {
      const auto* lv = l->if_contains(k);
      if (lv == nullptr) {
        if (empty_container(v)) continue;
        return false;
      }
      if (!covered(*lv, v, quantities || quantity_context(k), exact_context(k))) return false;
    }
    return true;
  }
  if (desired.is_array()) {
    const auto* l = live.if_array();
    const auto& d = desired.get_array();
    if (l == nullptr || l->size() != d.size()) return false;
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (!covered((*l)[i], d[i], quantities)) return false;
    }
    return true;
  }
  return scalar_equal(live, desired, quantities);
}

// covered() with overrides (drift.h): `active` are the overrides whose first `depth` keys led
// here; `applied` counts those whose value took part, so that a path missing from `desired`
// can be told apart.
constexpr std::size_t kMaxOverrides = 8;

template <class L>
bool covered_with(const L& live, const json::value& desired, bool quantities, bool exact,
                  std::span<const Override* const> active, std::size_t depth,
                  std::size_t& applied) {
  const auto* d = desired.if_object();
  if (d == nullptr) return covered(live, desired, quantities, exact);
  const auto* l = live.if_object();
  if (l == nullptr) return false;
  if (exact && extra_key(*l, *d)) return false;
  for (const auto& [k, v] : *d) {
    std::array<const Override*, kMaxOverrides> below{};
    std::size_t n = 0;
    const json::value* replaced = nullptr;
    for (const auto* o : active) {
      if (o->path[depth] != k) continue;
      if (o->path.size() == depth + 1) {
        replaced = o->value;
        ++applied;
      } else {
        below[n++] = o;
      }
    }
    const auto& want = replaced != nullptr ? *replaced : v;
    const auto* lv = l->if_contains(k);
    if (lv == nullptr) {
      if (empty_container(want)) continue;
      return false;
    }
    const bool q = quantities || quantity_context(k);
    const bool ok =
        n == 0 || replaced != nullptr
            ? covered(*lv, want, q, exact_context(k))
            : covered_with(*lv, want, q, exact_context(k),
                           std::span<const Override* const>(below.data(), n), depth + 1, applied);
    if (!ok) return false;
  }
  return true;
}

// Returns the first differing path, or nullopt when `live` covers `desired`. `exact`: `live`
// may not have keys `desired` lacks (a selector map).
template <class L>
std::optional<std::string> diff(const L& live, const json::value& desired, const std::string& path,
                                bool quantities, bool exact = false) {
  if (desired.is_object()) {
    if (!live.is_object()) return path.empty() ? "/" : path;
    if (exact) {
      if (const auto k = extra_key(live.get_object(), desired.get_object())) {
        return path + "/" + std::string(*k);
      }
    }
    for (const auto& [k, v] : desired.get_object()) {
      const auto* l = live.get_object().if_contains(k);
      std::string child = path + "/" + std::string(k);
      if (l == nullptr) {
        // An empty desired map/list is the same as an absent one after defaulting.
        if ((v.is_object() && v.get_object().empty()) || (v.is_array() && v.get_array().empty())) {
          continue;
        }
        return child;
      }
      if (auto d = diff(*l, v, child, quantities || quantity_context(k), exact_context(k))) {
        return d;
      }
    }
    return std::nullopt;
  }
  if (desired.is_array()) {
    if (!live.is_array() || live.get_array().size() != desired.get_array().size()) return path;
    for (std::size_t i = 0; i < desired.get_array().size(); ++i) {
      if (auto d = diff(live.get_array()[i], desired.get_array()[i], fmt::format("{}/{}", path, i),
                        quantities)) {
        return d;
      }
    }
    return std::nullopt;
  }
  if (!scalar_equal(live, desired, quantities)) return path;
  return std::nullopt;
}

// RFC 6901 escaping of one reference token.
std::string escape_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// Like diff(), but returns the (escaped) pointer of the innermost list or exact map that holds
// the first difference: "" when the first difference is inside neither, nullopt when covered.
template <class L>
std::optional<std::string> diff_list(const L& live, const json::value& desired,
                                     const std::string& pointer, std::string list, bool quantities,
                                     bool exact = false) {
  if (desired.is_object()) {
    if (!live.is_object()) return list;
    if (exact) {
      list = pointer;  // the map is replaced whole
      if (extra_key(live.get_object(), desired.get_object())) return list;
    }
    for (const auto& [k, v] : desired.get_object()) {
      const auto* l = live.get_object().if_contains(k);
      if (l == nullptr) {
        if ((v.is_object() && v.get_object().empty()) || (v.is_array() && v.get_array().empty())) {
          continue;
        }
        return list;
      }
      if (auto d = diff_list(*l, v, pointer + "/" + escape_token(k), list,
                             quantities || quantity_context(k), exact_context(k))) {
        return d;
      }
    }
    return std::nullopt;
  }
  if (desired.is_array()) {
    if (!live.is_array() || live.get_array().size() != desired.get_array().size()) return pointer;
    for (std::size_t i = 0; i < desired.get_array().size(); ++i) {
      if (auto d = diff_list(live.get_array()[i], desired.get_array()[i],
                             fmt::format("{}/{}", pointer, i), pointer, quantities)) {
        return d;
      }
    }
    return std::nullopt;
  }
  if (!scalar_equal(live, desired, quantities)) return list;
  return std::nullopt;
}

}  // namespace

template <class L>
std::optional<std::string> differing_list_t(const L& live, const json::value& desired) {
  if (covered(live, desired, false)) return std::nullopt;
  return diff_list(live, desired, "", "", false);
}

template <class L>
bool covers_t(const L& live, const json::value& desired) {
  return covered(live, desired, false);
}

template <class L>
bool covers_t(const L& live, const json::value& desired, std::span<const Override> overrides) {
  std::array<const Override*, kMaxOverrides> active{};
  std::size_t n = 0;
  for (const auto& o : overrides) {
    // More than fit, or an empty path: not what this is for; let the caller compare whole.
    if (n == kMaxOverrides || o.path.empty() || o.value == nullptr) return false;
    active[n++] = &o;
  }
  std::size_t applied = 0;
  return covered_with(live, desired, false, false,
                      std::span<const Override* const>(active.data(), n), 0, applied) &&
         applied == n;
}

template <class L>
std::string first_difference_t(const L& live, const json::value& desired) {
  if (covered(live, desired, false)) return "";
  return diff(live, desired, "", false).value_or("");
}

// The DOM and the packed (cached) live object take the same code.
bool covers(const json::value& live, const json::value& desired) { return covers_t(live, desired); }
bool covers(const informer::PackedValue& live, const json::value& desired) {
  return covers_t(live, desired);
}
bool covers(const json::value& live, const json::value& desired,
            std::span<const Override> overrides) {
  return covers_t(live, desired, overrides);
}
bool covers(const informer::PackedValue& live, const json::value& desired,
            std::span<const Override> overrides) {
  return covers_t(live, desired, overrides);
}
std::string first_difference(const json::value& live, const json::value& desired) {
  return first_difference_t(live, desired);
}
std::string first_difference(const informer::PackedValue& live, const json::value& desired) {
  return first_difference_t(live, desired);
}
std::optional<std::string> differing_list(const json::value& live, const json::value& desired) {
  return differing_list_t(live, desired);
}
std::optional<std::string> differing_list(const informer::PackedValue& live,
                                          const json::value& desired) {
  return differing_list_t(live, desired);
}

}  // namespace kstack::executor
