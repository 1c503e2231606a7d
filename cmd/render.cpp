#include "cmd/render.h"

#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/defaults.h"
#include "catalog/parse.h"
#include "cmd/validate.h"
#include "cmd/yaml_out.h"
#include "reconciler/desired_state.h"
#include "validator/rules/offline.h"

namespace kstack::cmd {
namespace json = boost::json;
using validator::OfflineResult;

namespace {

std::string where(const OfflineResult& r) {
  std::string id = r.namespace_name.empty() ? r.name : r.namespace_name + "/" + r.name;
  return fmt::format("{}:doc{} {}", r.file, r.document, id);
}

// The one Stack to render (index into the results), or a message saying why there is none.
std::optional<std::size_t> the_stack(const std::vector<OfflineResult>& results, std::string& why) {
  std::vector<std::size_t> stacks;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].kind == catalog::kStackKind) stacks.push_back(i);
  }
  if (stacks.size() == 1) return stacks.front();
  if (stacks.empty()) {
    why = "no Stack in the input: render needs one Stack (and its AppType)";
    return std::nullopt;
  }
  std::string list;
  for (auto i : stacks) list += fmt::format("{}{}", list.empty() ? "" : ", ", where(results[i]));
  why = fmt::format("{} Stacks in the input ({}): render takes exactly one", stacks.size(), list);
  return std::nullopt;
}

// More than one AppType of the name the Stack asks for: which one would render is not obvious
// to whoever reads the command line, so none is picked.
bool ambiguous_app(const std::vector<OfflineResult>& results, const std::string& app,
                   std::string& why) {
  std::string list;
  int count = 0;
  for (const auto& r : results) {
    if (r.kind != catalog::kAppTypeKind || r.name != app) continue;
    list += fmt::format("{}{}", list.empty() ? "" : ", ", where(r));
    ++count;
  }
  if (count <= 1) return false;
  why = fmt::format("{} AppTypes named \"{}\" in the input ({}): render takes exactly one", count,
                    app, list);
  return true;
}

void print(const reconciler::DesiredState& desired, const std::string& format, std::ostream& out) {
  std::vector<const json::value*> objects{&desired.headless_service};
  for (const auto& r : desired.roles) objects.push_back(&r.stateful_set);
  for (const auto& s : desired.member_services) objects.push_back(&s);
  bool first = true;
  for (const auto* o : objects) {
    if (format == "json") {
      out << json::serialize(*o) << "\n";
    } else {
      out << (first ? "" : "---\n") << to_yaml(*o);
    }
    first = false;
  }
}

}  // namespace

int render(const RenderOptions& options) { return render(options, std::cout, std::cerr); }

int render(const RenderOptions& options, std::ostream& out, std::ostream& err) {
  if (options.output != "yaml" && options.output != "json") {
    err << fmt::format("kstack render: unknown output format \"{}\" (yaml or json)\n",
                       options.output);
    return 2;
  }
  if (options.files.empty()) {
    err << "kstack render: no input: give files or directories with -f\n";
    return 2;
  }
  std::vector<InputError> errors;
  auto docs = read_sources(options.files, options.max_file_bytes, errors);
  for (const auto& e : errors) err << "kstack render: " << e.path << ": " << e.message << "\n";
  if (!errors.empty()) return 2;

  validator::OfflineOptions vopts;
  vopts.operator_namespace = options.operator_namespace;
  vopts.default_namespace = options.default_namespace;
  auto run = validator::run_offline(docs, vopts);
  // Validate's own lines, each once: problems refuse the render, warnings do not.
  bool invalid = false, unreadable = false;
  for (const auto& r : run.results) {
    invalid = invalid || r.status == OfflineResult::Status::kInvalid;
    unreadable = unreadable || r.status == OfflineResult::Status::kUnreadable;
    auto lines = validator::format_text(r);
    // For an accepted object the first line is validate's "OK" (or "skipped"): not a problem.
    bool accepted =
        r.status == OfflineResult::Status::kOk || r.status == OfflineResult::Status::kSkipped;
    for (std::size_t i = accepted ? 1 : 0; i < lines.size(); ++i) err << lines[i] << "\n";
  }
  if (unreadable) return 2;
  if (invalid) return 1;

  std::string why;
  auto index = the_stack(run.results, why);
  if (!index) {
    err << "kstack render: " << why << "\n";
    return 1;
  }
  auto stack = catalog::parse_stack(run.objects[*index]);
  if (!stack) {  // validate accepted it, so this is a bug, not a user error
    err << "kstack render: " << stack.error().to_string() << "\n";
    return 1;
  }
  if (ambiguous_app(run.results, stack->spec.app, why)) {
    err << "kstack render: " << why << "\n";
    return 1;
  }
  const auto& catalog = run.memory->catalog();
  auto found = catalog.find_app(*stack);
  auto config = catalog.config();
  if (!found) {  // validate reported it already; kept so a rule change cannot crash render
    err << fmt::format("kstack render: spec.app: AppType \"{}\" not found\n", stack->spec.app);
    return 1;
  }
  if (stack->metadata.uid.empty()) {
    stack->metadata.uid = options.uid.empty() ? std::string(kPlaceholderUid) : options.uid;
    if (options.uid.empty() && catalog::effective_naming_scheme(
                                   *stack, config ? &*config : nullptr) == catalog::kNamingUID) {
      err << fmt::format(
          "kstack render: note: namingScheme UID derives the names from metadata.uid, which the "
          "Stack has not; rendered with uid {} (give --uid for the names a cluster would use)\n",
          kPlaceholderUid);
    }
  }
  auto desired = reconciler::desired_state(*stack, found->app, config ? &*config : nullptr);
  if (!desired) {
    err << "kstack render: " << desired.error().to_string() << "\n";
    return 1;
  }
  print(*desired, options.output, out);
  return 0;
}

}  // namespace kstack::cmd
