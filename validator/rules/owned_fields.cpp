#include "validator/rules/owned_fields.h"

#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/model.h"
#include "kube/json_equal.h"
#include "kube/json_member.h"

namespace kstack::validator {
namespace json = boost::json;

namespace {

const json::value* field(const json::value* object, std::string_view a, std::string_view b = {}) {
  const auto* o = object ? object->if_object() : nullptr;
  const auto* v = o ? kube::member(*o, a) : nullptr;
  if (v == nullptr || b.empty()) return v;
  const auto* vo = v->if_object();
  return vo ? kube::member(*vo, b) : nullptr;
}

bool has_finalizer(const json::value* object) {
  const auto* f = field(object, "metadata", "finalizers");
  if (f == nullptr || !f->is_array()) return false;
  for (const auto& v : f->get_array()) {
    if (v.is_string() && v.get_string() == catalog::kCleanupFinalizer) return true;
  }
  return false;
}

void check_owned_keys(const json::value* old_object, const json::value* new_object,
                      std::string_view map, const std::string& operator_name, Violations& out) {
  const auto* before = field(old_object, "metadata", map);
  const auto* after = field(new_object, "metadata", map);
  const auto* bo = before ? before->if_object() : nullptr;
  const auto* ao = after ? after->if_object() : nullptr;
  std::set<std::string> keys;
  for (const auto* o : {bo, ao}) {
    if (o == nullptr) continue;
    for (const auto& kv : *o) {
      if (kv.key().starts_with(catalog::kOwnedPrefix)) keys.emplace(kv.key());
    }
  }
  for (const auto& k : keys) {
    const auto* a = bo ? kube::member(*bo, k) : nullptr;
    const auto* b = ao ? kube::member(*ao, k) : nullptr;
    if (a && b && kube::json_equal(*a, *b)) continue;
    std::string_view verb = a == nullptr ? "added" : (b == nullptr ? "removed" : "changed");
    out.push_back({fmt::format("metadata.{}[{}]", map, k),
                   fmt::format("may only be {} by the operator ({})", verb, operator_name)});
  }
}

}  // namespace

Violations check_owned_fields(const OwnedFieldsInput& in) {
  Violations out;
  if (in.username == in.operator_username) return out;
  std::string op(in.operator_username);
  const json::value* old_object =
      in.old_object && !in.old_object->is_null() ? in.old_object : nullptr;
  const json::value* new_object =
      in.new_object && !in.new_object->is_null() ? in.new_object : nullptr;
  if (in.operation == "DELETE" || new_object == nullptr) return out;

  if (in.sub_resource == "status") {
    out.push_back({"status", fmt::format("may only be written by the operator ({})", op)});
    return out;  // the API server ignores metadata changes made through /status
  }
  if (in.operation == "UPDATE") {
    const auto* before = field(old_object, "status");
    const auto* after = field(new_object, "status");
    bool same = (before == nullptr || before->is_null())
                    ? (after == nullptr || after->is_null())
                    : (after != nullptr && kube::json_equal(*before, *after));
    if (!same)
      out.push_back({"status", fmt::format("may only be written by the operator ({})", op)});
  }
  // On CREATE the mutating webhook adds the finalizer (defaulting.h), and the validating one
  // sees the mutated object: a new Stack may carry it, whoever creates it (the operator cleans
  // up every Stack anyway). Afterwards only the operator adds or removes it.
  bool had = has_finalizer(old_object), has = has_finalizer(new_object);
  if (had != has && in.operation != "CREATE") {
    out.push_back({"metadata.finalizers",
                   fmt::format("the finalizer {} may only be {} by the operator ({})",
                               catalog::kCleanupFinalizer, has ? "added" : "removed", op)});
  }
  check_owned_keys(old_object, new_object, "labels", op, out);
  check_owned_keys(old_object, new_object, "annotations", op, out);
  return out;
}

}  // namespace kstack::validator
