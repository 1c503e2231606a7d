#include "catalog/decode_detail.h"

#include <cmath>
#include <limits>
#include <memory>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "kube/json_member.h"

namespace kstack::catalog::detail {
namespace json = boost::json;

namespace {

std::string_view kind_name(json::kind k) {
  switch (k) {
    case json::kind::object:
      return "an object";
    case json::kind::array:
      return "an array";
    case json::kind::string:
      return "a string";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::null:
      return "null";
    default:
      return "a number";
  }
}

}  // namespace

const json::value* present(const json::object& parent, std::string_view key) {
  const auto* v = kube::member(parent, key);
  if (v == nullptr || v->is_null()) return nullptr;
  return v;
}

std::string number_text(const json::value& v) {
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_double()) return fmt::format("{}", v.get_double());
  return {};
}

void Decoder::error(std::string field, std::string reason) {
  errors_.push_back(FieldError{std::move(field), std::move(reason)});
}

const json::object* Decoder::object(const json::object& parent, std::string_view key,
                                    std::string_view path, bool required) {
  const auto* v = present(parent, key);
  if (v == nullptr) {
    if (required) error(child_path(path, key), "is required");
    return nullptr;
  }
  if (!v->is_object()) {
    error(child_path(path, key), fmt::format("must be an object, not {}", kind_name(v->kind())));
    return nullptr;
  }
  return &v->get_object();
}

const json::array* Decoder::array(const json::object& parent, std::string_view key,
                                  std::string_view path, bool required) {
  const auto* v = present(parent, key);
  if (v == nullptr) {
    if (required) error(child_path(path, key), "is required");
    return nullptr;
  }
  if (!v->is_array()) {
    error(child_path(path, key), fmt::format("must be an array, not {}", kind_name(v->kind())));
    return nullptr;
  }
  return &v->get_array();
}

std::optional<std::string> Decoder::string(const json::object& parent, std::string_view key,
                                           std::string_view path, bool required) {
  const auto* v = present(parent, key);
  if (v == nullptr) {
    if (required) error(child_path(path, key), "is required");
    return std::nullopt;
  }
  if (!v->is_string()) {
    error(child_path(path, key), fmt::format("must be a string, not {}", kind_name(v->kind())));
    return std::nullopt;
  }
  if (required && v->get_string().empty()) {
    error(child_path(path, key), "is required (must not be empty)");
  }
  return std::string(v->get_string());
}

std::optional<std::int64_t> Decoder::integer(const json::object& parent, std::string_view key,
                                             std::string_view path, bool required) {
  const auto* v = present(parent, key);
  if (v == nullptr) {
    if (required) error(child_path(path, key), "is required");
    return std::nullopt;
  }
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) {
    error(child_path(path, key), "is out of range");
    return std::nullopt;
  }
  if (v->is_double()) {
    double d = v->get_double();
    // 2^63 is exactly representable; anything at or beyond it does not fit.
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2233720368547758e18) {
      return static_cast<std::int64_t>(d);
    }
    error(child_path(path, key), "must be an integer");
    return std::nullopt;
  }
  error(child_path(path, key), fmt::format("must be an integer, not {}", kind_name(v->kind())));
  return std::nullopt;
}

void Decoder::place(json::value& member, json::value&& v) {
  std::destroy_at(&member);
  std::construct_at(&member, std::move(v));  // a move takes `v`'s storage along
}

void Decoder::int_or_string(json::value& into, const json::object& parent, std::string_view key,
                            std::string_view path) {
  const auto* v = present(parent, key);
  if (v == nullptr) return place(into, json::value(nullptr, storage_));
  if (v->is_string()) return place(into, json::value(v->get_string(), storage_));
  if (v->is_number()) {
    const auto i = integer(parent, key, path);
    return place(into, i ? json::value(*i, storage_) : json::value(nullptr, storage_));
  }
  error(child_path(path, key),
        fmt::format("must be an integer or a string, not {}", kind_name(v->kind())));
  place(into, json::value(nullptr, storage_));
}

std::optional<bool> Decoder::boolean(const json::object& parent, std::string_view key,
                                     std::string_view path) {
  const auto* v = present(parent, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_bool()) {
    error(child_path(path, key), fmt::format("must be a boolean, not {}", kind_name(v->kind())));
    return std::nullopt;
  }
  return v->get_bool();
}

std::optional<std::vector<std::string>> Decoder::strings(const json::object& parent,
                                                         std::string_view key,
                                                         std::string_view path) {
  const auto* a = array(parent, key, path);
  if (a == nullptr) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(a->size());
  for (std::size_t i = 0; i < a->size(); ++i) {
    const auto& item = (*a)[i];
    if (!item.is_string()) {  // paths are built for a message only
      error(index_path(child_path(path, key), i),
            fmt::format("must be a string, not {}", kind_name(item.kind())));
      continue;
    }
    out.emplace_back(item.get_string());
  }
  return out;
}

StringMap Decoder::string_map(const json::object& parent, std::string_view key,
                              std::string_view path) {
  StringMap out;
  const auto* o = object(parent, key, path);
  if (o == nullptr) return out;
  out.reserve(o->size());
  for (const auto& [k, v] : *o) {
    if (!v.is_string()) {
      error(key_path(child_path(path, key), k),
            fmt::format("must be a string, not {}", kind_name(v.kind())));
      continue;
    }
    out.emplace(std::string(k), std::string(v.get_string()));
  }
  return out;
}

StringMap Decoder::quantity_map(const json::object& parent, std::string_view key,
                                std::string_view path) {
  StringMap out;
  const auto* o = object(parent, key, path);
  if (o == nullptr) return out;
  out.reserve(o->size());
  for (const auto& [k, v] : *o) {
    if (v.is_string()) {
      out.emplace(std::string(k), std::string(v.get_string()));
    } else if (v.is_number()) {
      out.emplace(std::string(k), number_text(v));
    } else {
      error(key_path(child_path(path, key), k),
            fmt::format("must be a quantity (string or number), not {}", kind_name(v.kind())));
    }
  }
  return out;
}

void Decoder::opaque(JsonMember& into, const json::object& parent, std::string_view key,
                     std::string_view path, json::kind expected) {
  const auto* v = present(parent, key);
  if (v != nullptr && v->kind() != expected) {
    error(child_path(path, key),
          fmt::format("must be {}, not {}", kind_name(expected), kind_name(v->kind())));
    v = nullptr;
  }
  if (v == nullptr) {
    into = JsonMember();
  } else if (borrow_) {
    into = JsonMember::view(*v);
  } else {
    into = json::value(*v, storage_);  // the default storage: the copy outlives the object
  }
}

void check_kind(const json::object& object, std::string_view kind, Decoder& d) {
  const auto* k = present(object, "kind");
  if (k != nullptr && !(k->is_string() && k->get_string() == kind)) {
    d.error("kind", fmt::format("must be {}", kind));
  }
}

ObjectMeta decode_name(const json::value& object, Decoder& d) {
  ObjectMeta m;
  const auto* o = object.if_object();
  const auto* md = o ? d.object(*o, "metadata", "", /*required=*/true) : nullptr;
  if (md == nullptr) return m;
  m.name = d.string(*md, "name", "metadata").value_or("");
  m.namespace_name = d.string(*md, "namespace", "metadata").value_or("");
  return m;
}

ObjectMeta decode_metadata(const json::value& object, Decoder& d) {
  ObjectMeta m;
  const auto* o = object.if_object();
  if (o == nullptr) return m;
  const auto* md = d.object(*o, "metadata", "", /*required=*/true);
  if (md == nullptr) return m;
  m.name = d.string(*md, "name", "metadata").value_or("");
  m.namespace_name = d.string(*md, "namespace", "metadata").value_or("");
  m.uid = d.string(*md, "uid", "metadata").value_or("");
  m.resource_version = d.string(*md, "resourceVersion", "metadata").value_or("");
  m.generation = d.integer(*md, "generation", "metadata").value_or(0);
  m.labels = d.string_map(*md, "labels", "metadata");
  m.annotations = d.string_map(*md, "annotations", "metadata");
  m.finalizers = d.strings(*md, "finalizers", "metadata").value_or(std::vector<std::string>{});
  m.deleting = present(*md, "deletionTimestamp") != nullptr;
  return m;
}

}  // namespace kstack::catalog::detail
