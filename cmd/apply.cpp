// `kstack apply`: server-side apply of the manifests' AppTypes, Stacks, KStackConfigs and
// ConfigMaps, then with --wait the live view of the applied Stacks (cmd/stack_watch.h).
#include <algorithm>
#include <cctype>
#include <ostream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/model.h"
#include "cmd/api_errors.h"
#include "cmd/stack_commands.h"
#include "cmd/stack_watch.h"
#include "kube/client.h"

namespace kstack::cmd {
namespace json = boost::json;

namespace {

struct Manifest {
  std::string where;  // "<file>:doc<N>"
  const kube::ResourceType* type = nullptr;
  std::string ns, name;
  json::value object;
};

const kube::ResourceType* type_of(std::string_view kind) {
  if (kind == "AppType") return &catalog::resources::kAppTypes;
  if (kind == "Stack") return &catalog::resources::kStacks;
  if (kind == "KStackConfig") return &catalog::resources::kKStackConfigs;
  return &kube::resources::kConfigMaps;
}

std::string str_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

// "stack.kstack.io/etcd", as kubectl names what it applied.
std::string display_name(const Manifest& m) {
  std::string kind = m.type->kind;
  for (auto& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return m.type->group.empty() ? kind + "/" + m.name
                               : fmt::format("{}.{}/{}", kind, m.type->group, m.name);
}

// Whether an apply changed what the object says. Not the resourceVersion alone: re-applying
// the same manifest moves it when only metadata.managedFields changed (the admission webhook's
// defaults are owned by the first apply and given up by the next), and the operator writes
// status at any time.
bool same_content(const json::value& before, const json::value& after) {
  auto strip = [](json::value v) {
    if (!v.is_object()) return v;
    v.as_object().erase("status");
    if (auto* md = v.as_object().if_contains("metadata"); md != nullptr && md->is_object()) {
      md->as_object().erase("managedFields");
      md->as_object().erase("resourceVersion");
    }
    return v;
  };
  return strip(before) == strip(after);
}

void print_refusal(const std::string& what, const kube::Error& error, std::ostream& err) {
  const auto report = explain(error);
  err << fmt::format("error: {}: {}\n", what, report.headline);
  for (const auto& f : report.fields) err << "  " << f << '\n';
  if (error.is(kube::ErrorKind::kConflict) && !error.causes.empty()) {
    err << "  (fields owned by another manager: apply with --force-conflicts to take them over)\n";
  }
}

}  // namespace

int apply(const ApplyOptions& options, std::ostream& out, std::ostream& err) {
  auto timeout = parse_duration(options.wait.timeout);
  if (!timeout) {
    err << "error: --timeout: " << timeout.error() << '\n';
    return kExitDenied;
  }
  std::vector<InputError> input_errors;
  auto docs = read_documents(options.files, options.max_file_bytes, input_errors);
  for (const auto& e : input_errors) err << fmt::format("error: {}: {}\n", e.path, e.message);
  std::vector<Manifest> manifests;
  bool refused = !input_errors.empty();
  for (auto& d : docs) {
    const std::string where = fmt::format("{}:doc{}", d.file, d.document.index);
    if (!d.document.error.empty()) {
      err << fmt::format("error: {}: {}\n", where, d.document.error);
      refused = true;
      continue;
    }
    if (auto why = refuse_kind(d.document.value); !why.empty()) {
      err << fmt::format("error: {}: {}\n", where, why);
      refused = true;
      continue;
    }
    Manifest m;
    m.where = where;
    m.type = type_of(str_at(d.document.value, "/kind"));
    m.name = str_at(d.document.value, "/metadata/name");
    m.ns = str_at(d.document.value, "/metadata/namespace");
    m.object = std::move(d.document.value);
    if (m.name.empty()) {
      err << fmt::format("error: {}: {} without metadata.name\n", where, m.type->kind);
      refused = true;
      continue;
    }
    manifests.push_back(std::move(m));
  }
  if (refused) {
    err << "error: nothing applied\n";
    return kExitDenied;
  }
  if (manifests.empty()) {
    err << "error: no objects in the input\n";
    return kExitDenied;
  }
  auto conn = connect(options.client, err);
  if (!conn) return kExitFailed;
  auto& client = *conn->client;

  // ConfigMaps and AppTypes first, so that a Stack finds its AppType (and the AppType its
  // package) at admission; then the rest in input order.
  std::stable_sort(manifests.begin(), manifests.end(), [](const Manifest& a, const Manifest& b) {
    auto rank = [](const Manifest& m) {
      if (m.type == &kube::resources::kConfigMaps) return 0;
      if (m.type == &catalog::resources::kAppTypes) return 1;
      if (m.type == &catalog::resources::kKStackConfigs) return 2;
      return 3;
    };
    return rank(a) < rank(b);
  });

  kube::PatchOptions patch;
  patch.field_manager = kFieldManager;
  patch.force = options.force_conflicts;
  std::vector<StackRef> applied_stacks;
  int result = kExitOk;
  for (auto& m : manifests) {
    if (m.ns.empty()) m.ns = conn->ns;
    m.object.as_object()["metadata"].as_object()["namespace"] = m.ns;
    auto before = client.get(*m.type, m.ns, m.name);
    if (!before && !before.error().is(kube::ErrorKind::kNotFound)) {
      print_refusal(fmt::format("{} ({})", display_name(m), m.where), before.error(), err);
      return kExitFailed;
    }
    auto applied = client.patch(*m.type, m.ns, m.name, kube::PatchType::kApply,
                                json::serialize(m.object), patch);
    if (!applied) {
      print_refusal(fmt::format("{} ({})", display_name(m), m.where), applied.error(), err);
      // As kubectl: the other objects are still applied; a denial (the manifest must change)
      // decides the exit code over other failures.
      if (explain(applied.error()).denied) {
        result = kExitDenied;
      } else if (result == kExitOk) {
        result = kExitFailed;
      }
      continue;
    }
    std::string verb = "created";
    if (before) verb = same_content(*before, *applied) ? "unchanged" : "configured";
    out << display_name(m) << ' ' << verb << '\n';
    if (m.type == &catalog::resources::kStacks) applied_stacks.push_back({m.ns, m.name});
  }
  out.flush();
  if (result != kExitOk) return result;
  if (!options.wait.wait || applied_stacks.empty()) return kExitOk;
  return wait_for_stacks(client, applied_stacks, WaitGoal::kReady, *timeout, detect_screen(), out,
                         err);
}

}  // namespace kstack::cmd
