#include "validator/rules/handler.h"

#include <exception>
#include <optional>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/model.h"
#include "catalog/parse.h"
#include "kube/json_equal.h"
#include "kube/json_member.h"
#include "validator/rules/apptype_rules.h"
#include "validator/rules/config_rules.h"
#include "validator/rules/defaulting.h"
#include "validator/rules/stack_rules.h"
#include "validator/rules/warnings.h"

namespace kstack::validator {
namespace json = boost::json;

namespace {

const json::value* spec_of(const json::value& object) {
  const auto* o = object.if_object();
  return o ? kube::member(*o, "spec") : nullptr;
}

bool spec_unchanged(const AdmissionRequest& r) {
  const auto* a = spec_of(r.old_object);
  const auto* b = spec_of(r.object);
  if (a == nullptr || b == nullptr) return a == b;
  return kube::json_equal(*a, *b);
}

// metadata.<key> of the stored object (DELETE) or the new one.
std::string_view metadata_string(const AdmissionRequest& r, std::string_view key) {
  for (const json::value* object : {&r.old_object, &r.object}) {
    const auto* o = object->if_object();
    const auto* md = o ? kube::member(*o, "metadata") : nullptr;
    const auto* mo = md ? md->if_object() : nullptr;
    const auto* v = mo ? kube::member(*mo, key) : nullptr;
    if (v && v->is_string() && !v->get_string().empty()) return v->get_string();
  }
  return {};
}

// The name the request is about. A collection DELETE (DELETE .../namespaces/NS/apptypes) sends
// one review per item with request.name EMPTY and the item only in oldObject: a rule keyed on
// request.name alone would look up "" and let every item through.
std::string_view request_name(const AdmissionRequest& r) {
  return r.name.empty() ? metadata_string(r, "name") : std::string_view(r.name);
}

std::string_view request_namespace(const AdmissionRequest& r) {
  return r.namespace_name.empty() ? metadata_string(r, "namespace")
                                  : std::string_view(r.namespace_name);
}

void append(Violations& to, Violations from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

AdmissionResponse internal_error(std::string_view what) {
  return AdmissionResponse::deny(500, "InternalError",
                                 fmt::format("kstack admission failed unexpectedly: {}", what));
}

}  // namespace

RulesHandler::RulesHandler(const catalog::Catalog& catalog, RulesOptions options)
    : catalog_(catalog), options_(std::move(options)) {}

AdmissionResponse RulesHandler::validate(const AdmissionRequest& request) {
  try {
    return do_validate(request);
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
}

AdmissionResponse RulesHandler::mutate(const AdmissionRequest& request) {
  try {
    return do_mutate(request);
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
}

Violations RulesHandler::validate_apptype_request(const AdmissionRequest& r) const {
  Violations out;
  if (r.operation == "CREATE") return validate_apptype_object(r.object);
  if (r.operation == "UPDATE" && spec_unchanged(r)) return out;
  if (r.operation == "UPDATE") out = validate_apptype_object(r.object);
  std::vector<std::string> users;
  for (const auto& s : catalog_.stacks_using(request_namespace(r), request_name(r))) {
    users.push_back(informer::object_key(*s));
  }
  append(out, validate_apptype_in_use(r.old_object, r.operation == "UPDATE" ? &r.object : nullptr,
                                      users));
  return out;
}

Violations RulesHandler::validate_stack_request(const AdmissionRequest& r,
                                                const catalog::Stack& stack,
                                                const Violations& decode_errors) const {
  if (r.operation != "CREATE" && spec_unchanged(r)) return {};
  Violations out = decode_errors;
  append(out, validate_stack(stack, catalog_));
  if (r.operation == "CREATE") return out;
  // The namespace a hand-made review names only on the request, which evaluate() copied into
  // the new object alone, is the old one's too.
  append(out, validate_stack_update(r.old_object, stack, catalog_));
  return out;
}

Verdict RulesHandler::evaluate(const AdmissionRequest& request) const {
  Verdict v;
  if (!request.group.empty() && request.group != catalog::kGroup) return v;
  bool apptype = request.kind == catalog::kAppTypeKind;
  bool stack = request.kind == catalog::kStackKind;
  bool config = request.kind == catalog::kKStackConfigKind;
  const auto& op = request.operation;
  if (!(apptype || stack || config) || (op != "CREATE" && op != "UPDATE" && op != "DELETE")) {
    return v;
  }
  // The API server fills metadata.namespace before admission; a hand-made request (tests,
  // kstack validate) may not, and the rules need it to resolve `local`.
  // Copied only then: requests from the API server are used as they are.
  std::optional<AdmissionRequest> filled;
  const auto* md =
      request.object.is_object() ? request.object.get_object().if_contains("metadata") : nullptr;
  if (md && md->is_object() && !md->get_object().contains("namespace") &&
      !request.namespace_name.empty()) {
    filled = request;
    filled->object.get_object()["metadata"].get_object()["namespace"] = request.namespace_name;
  }
  const AdmissionRequest& r = filled ? *filled : request;

  v.forbidden =
      check_owned_fields(OwnedFieldsInput{r.operation, r.sub_resource, r.username,
                                          options_.operator_username, &r.old_object, &r.object});
  if (r.sub_resource.empty()) {  // /status writes carry no spec: only ownership matters
    // A Stack is decoded once, for the rules and the warnings.
    Violations decode_errors;
    std::optional<catalog::Stack> decoded;
    if (stack && op != "DELETE") {
      decoded = catalog::decode_stack(r.object, decode_errors, catalog::DecodeSource::kBorrow);
    }
    if (apptype) {
      v.invalid = validate_apptype_request(r);
    } else if (decoded) {
      v.invalid = validate_stack_request(r, *decoded, decode_errors);
    } else if (config && op != "DELETE" && !(op == "UPDATE" && spec_unchanged(r))) {
      v.invalid = validate_kstack_config_object(r.object, catalog_);
    }
    if (op != "DELETE") v.warnings = field_warnings(r.kind, r.object);
    if (decoded) {  // shape problems are in v.invalid already
      auto more = stack_warnings(*decoded, catalog_);
      v.warnings.insert(v.warnings.end(), more.begin(), more.end());
    }
  }
  return v;
}

AdmissionResponse RulesHandler::do_validate(const AdmissionRequest& request) const {
  Verdict v = evaluate(request);
  AdmissionResponse response;
  if (!v.forbidden.empty()) {
    append(v.forbidden, std::move(v.invalid));
    response = AdmissionResponse::deny(403, "Forbidden", catalog::join(v.forbidden));
  } else if (!v.invalid.empty()) {
    // 422 without the reason "Invalid": kubectl prints a Status with that reason and no
    // details as a bare "The request is invalid", hiding the field paths in the message.
    response = AdmissionResponse::deny(422, "", catalog::join(v.invalid));
  }
  response.warnings = std::move(v.warnings);
  return response;
}

AdmissionResponse RulesHandler::do_mutate(const AdmissionRequest& r) const {
  AdmissionResponse response;
  if ((!r.group.empty() && r.group != catalog::kGroup) || r.kind != catalog::kStackKind ||
      !r.sub_resource.empty() || (r.operation != "CREATE" && r.operation != "UPDATE")) {
    return response;
  }
  Violations ignored;  // shape problems are reported by validate(), which runs afterwards
  auto stack = catalog::decode_stack(r.object, ignored, catalog::DecodeSource::kBorrow);
  if (stack.metadata.deleting) return response;  // no new defaults on the way out
  if (stack.metadata.namespace_name.empty()) stack.metadata.namespace_name = r.namespace_name;
  std::optional<catalog::Stack> old_stack;
  if (r.operation == "UPDATE") {
    // What default_stack reads of the stored Stack (its appCatalog, namingScheme and roles'
    // members and storage) and no more.
    old_stack = catalog::decode_stack_outline(r.old_object, ignored);
  }
  const bool finalize = options_.finalizer_namespace.empty() ||
                        options_.finalizer_namespace == stack.metadata.namespace_name;
  auto patch = default_stack(stack, old_stack ? &*old_stack : nullptr, catalog_, finalize);
  if (!patch.empty()) response.patch = std::move(patch);
  return response;
}

}  // namespace kstack::validator
