#include "validator/rules/offline.h"

#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/memory_catalog.h"
#include "catalog/model.h"
#include "validator/rules/handler.h"

namespace kstack::validator {
namespace json = boost::json;

namespace {

std::string_view string_field(const json::object* o, std::string_view key) {
  const auto* v = o ? o->if_contains(key) : nullptr;
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

const json::object* metadata(const json::value& v) {
  const auto* o = v.if_object();
  const auto* md = o ? o->if_contains("metadata") : nullptr;
  return md ? md->if_object() : nullptr;
}

bool is_kstack_kind(std::string_view kind) {
  return kind == catalog::kAppTypeKind || kind == catalog::kStackKind ||
         kind == catalog::kKStackConfigKind;
}

// The object as the API server would see it: namespace filled in, as kubectl does.
json::value with_namespace(const json::value& v, const std::string& ns) {
  json::value out = v;
  auto& o = out.get_object();
  auto& md = o["metadata"];
  if (!md.is_object()) return out;  // reported by the decoder
  auto& mo = md.get_object();
  if (!mo.contains("namespace") || mo["namespace"].is_null()) mo["namespace"] = ns;
  return out;
}

json::value with_namespace_forced(const json::value& v, const std::string& ns) {
  json::value out = v;
  if (auto* md = out.get_object()["metadata"].if_object()) (*md)["namespace"] = ns;
  return out;
}

std::vector<OfflineResult> evaluate(const std::vector<SourceDocument>& documents,
                                    const std::vector<json::value>& objects,
                                    const catalog::Catalog& catalog) {
  RulesHandler handler(catalog);
  std::vector<OfflineResult> results;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const auto& src = documents[i];
    OfflineResult r;
    r.file = src.file;
    r.document = src.document.index;
    r.line = src.document.line;
    if (!src.document.error.empty() || !objects[i].is_object()) {
      r.status = OfflineResult::Status::kUnreadable;
      r.problems.push_back(src.document.error.empty() ? "not an object" : src.document.error);
      results.push_back(std::move(r));
      continue;
    }
    const auto& object = objects[i];
    const auto* md = metadata(object);
    std::string api_version(string_field(object.if_object(), "apiVersion"));
    r.kind = std::string(string_field(object.if_object(), "kind"));
    r.namespace_name = std::string(string_field(md, "namespace"));
    r.name = std::string(string_field(md, "name"));
    std::string group = api_version.substr(0, api_version.find('/'));
    if (group != catalog::kGroup && !(api_version.empty() && is_kstack_kind(r.kind))) {
      r.status = OfflineResult::Status::kSkipped;
      results.push_back(std::move(r));
      continue;
    }
    if (api_version != catalog::kApiVersion) {
      r.problems.push_back(fmt::format("apiVersion: must be {}", catalog::kApiVersion));
    }
    if (!is_kstack_kind(r.kind)) {
      r.problems.push_back(
          fmt::format("kind: unknown kind \"{}\" (kstack.io has AppType, Stack "
                      "and KStackConfig)",
                      r.kind));
    } else {
      AdmissionRequest req;
      req.group = std::string(catalog::kGroup);
      req.version = std::string(catalog::kVersion);
      req.kind = r.kind;
      req.operation = "CREATE";
      req.name = r.name;
      req.namespace_name = r.namespace_name;
      req.object = object;
      Verdict v = handler.evaluate(req);
      for (const auto& p : v.forbidden) r.problems.push_back(p.to_string());
      for (const auto& p : v.invalid) r.problems.push_back(p.to_string());
      r.warnings = std::move(v.warnings);
    }
    r.status = r.problems.empty() ? OfflineResult::Status::kOk : OfflineResult::Status::kInvalid;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

std::string_view to_string(OfflineResult::Status status) {
  switch (status) {
    case OfflineResult::Status::kOk:
      return "ok";
    case OfflineResult::Status::kInvalid:
      return "invalid";
    case OfflineResult::Status::kUnreadable:
      return "unreadable";
    case OfflineResult::Status::kSkipped:
      return "skipped";
  }
  return "unknown";
}

OfflineRun::OfflineRun(const OfflineOptions& options)
    : memory(std::make_unique<catalog::MemoryCatalog>(
          catalog::CatalogOptions{options.operator_namespace},
          /*know_storage_classes=*/false)) {}

OfflineRun run_offline(const std::vector<SourceDocument>& documents,
                       const OfflineOptions& options) {
  OfflineRun run(options);
  auto& memory = *run.memory;

  // Objects as they would be stored, and the catalog they form (AppTypes, KStackConfig).
  auto& objects = run.objects;
  objects.assign(documents.size(), json::value());
  std::vector<std::size_t> unplaced_apptypes;  // AppTypes that name no namespace
  std::set<std::string> stack_namespaces;
  std::set<std::string> placed;  // "namespace/name" of the AppTypes that name theirs
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const auto& doc = documents[i].document;
    if (!doc.error.empty() || !doc.value.is_object()) continue;
    std::string_view kind = string_field(doc.value.if_object(), "kind");
    if (!is_kstack_kind(kind)) {
      objects[i] = doc.value;
      continue;
    }
    const bool named = !string_field(metadata(doc.value), "namespace").empty();
    // The KStackConfig is read only in the operator's namespace: that is where it belongs.
    objects[i] =
        with_namespace(doc.value, kind == catalog::kKStackConfigKind ? options.operator_namespace
                                                                     : options.default_namespace);
    std::string ns(string_field(metadata(objects[i]), "namespace"));
    if (kind == catalog::kStackKind) stack_namespaces.insert(ns);
    if (kind == catalog::kAppTypeKind && !named) {
      unplaced_apptypes.push_back(i);
    } else if (kind == catalog::kAppTypeKind || kind == catalog::kKStackConfigKind) {
      placed.insert(ns + "/" + std::string(string_field(metadata(objects[i]), "name")));
      memory.add(objects[i]);
    }
  }
  // An AppType that names no namespace is found by every Stack of the input, as if applied
  // to each Stack's namespace (unless that namespace has its own AppType of the name).
  for (std::size_t i : unplaced_apptypes) {
    std::string name(string_field(metadata(objects[i]), "name"));
    if (!placed.contains(options.default_namespace + "/" + name)) memory.add(objects[i]);
    for (const auto& ns : stack_namespaces) {
      if (placed.contains(ns + "/" + name)) continue;
      memory.add(with_namespace_forced(objects[i], ns));
    }
  }
  run.results = evaluate(documents, objects, memory.catalog());
  return run;
}

std::vector<OfflineResult> validate_offline(const std::vector<SourceDocument>& documents,
                                            const OfflineOptions& options) {
  return run_offline(documents, options).results;
}

std::vector<std::string> format_text(const OfflineResult& r) {
  std::string where = fmt::format("{}:doc{}", r.file, r.document);
  if (r.status == OfflineResult::Status::kUnreadable) {
    std::vector<std::string> out;
    for (const auto& p : r.problems) out.push_back(fmt::format("{}: error: {}", where, p));
    return out;
  }
  std::string what = fmt::format("{} {}", where, r.kind.empty() ? "<no kind>" : r.kind);
  std::string id = r.namespace_name.empty() ? r.name : r.namespace_name + "/" + r.name;
  if (!id.empty()) what += " " + id;
  std::vector<std::string> out;
  switch (r.status) {
    case OfflineResult::Status::kOk:
      out.push_back(what + ": OK");
      break;
    case OfflineResult::Status::kSkipped:
      out.push_back(what + ": skipped (not a kstack.io kind)");
      break;
    default:
      for (const auto& p : r.problems) out.push_back(fmt::format("{}: {}", what, p));
  }
  for (const auto& w : r.warnings) out.push_back(fmt::format("{}: warning: {}", what, w));
  return out;
}

json::value to_json(const OfflineResult& r) {
  json::object o{{"file", r.file},
                 {"document", r.document},
                 {"line", r.line},
                 {"kind", r.kind},
                 {"namespace", r.namespace_name},
                 {"name", r.name},
                 {"status", to_string(r.status)}};
  o["problems"] = json::value_from(r.problems);
  o["warnings"] = json::value_from(r.warnings);
  return o;
}

}  // namespace kstack::validator
