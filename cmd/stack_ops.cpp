// `kstack delete STACK` and `kstack scale STACK ROLE=N...`, each with --wait.
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

void print_error(const std::string& what, const kube::Error& error, std::ostream& err) {
  const auto report = explain(error);
  err << fmt::format("error: {}: {}\n", what, report.headline);
  for (const auto& f : report.fields) err << "  " << f << '\n';
}

int exit_code(const kube::Error& error) {
  return explain(error).denied ? kExitDenied : kExitFailed;
}

}  // namespace

int delete_stack(const DeleteOptions& options, std::ostream& out, std::ostream& err) {
  auto timeout = parse_duration(options.wait.timeout);
  if (!timeout) {
    err << "error: --timeout: " << timeout.error() << '\n';
    return kExitDenied;
  }
  auto conn = connect(options.client, err);
  if (!conn) return kExitFailed;
  auto removed = conn->client->remove(catalog::resources::kStacks, conn->ns, options.stack);
  if (!removed) {
    if (removed.error().is(kube::ErrorKind::kNotFound)) {
      err << fmt::format("error: stack {} not found in namespace {}\n", options.stack, conn->ns);
      return kExitFailed;
    }
    print_error("delete stack.kstack.io/" + options.stack, removed.error(), err);
    return exit_code(removed.error());
  }
  out << "stack.kstack.io/" << options.stack << " deleted\n";
  out.flush();
  if (!options.wait.wait) return kExitOk;
  return wait_for_stacks(*conn->client, {{conn->ns, options.stack}}, WaitGoal::kGone, *timeout,
                         detect_screen(), out, err);
}

int scale(const ScaleOptions& options, std::ostream& out, std::ostream& err) {
  auto timeout = parse_duration(options.wait.timeout);
  if (!timeout) {
    err << "error: --timeout: " << timeout.error() << '\n';
    return kExitDenied;
  }
  auto requests = parse_scale_requests(options.requests);
  if (!requests) {
    err << "error: " << requests.error() << '\n';
    return kExitDenied;
  }
  auto conn = connect(options.client, err);
  if (!conn) return kExitFailed;
  auto& client = *conn->client;
  auto stack = client.get(catalog::resources::kStacks, conn->ns, options.stack);
  if (!stack) {
    if (stack.error().is(kube::ErrorKind::kNotFound)) {
      err << fmt::format("error: stack {} not found in namespace {}\n", options.stack, conn->ns);
    } else {
      err << "error: " << stack.error().to_string() << '\n';
    }
    return kExitFailed;
  }
  auto patch = scale_patch(*stack, *requests);
  if (!patch) {
    err << fmt::format("error: stack {}: {}\n", options.stack, patch.error());
    return kExitDenied;
  }
  kube::PatchOptions patch_options;
  patch_options.field_manager = kFieldManager;
  auto patched = client.patch(catalog::resources::kStacks, conn->ns, options.stack,
                              kube::PatchType::kJson, json::serialize(*patch), patch_options);
  if (!patched) {
    print_error("scale stack.kstack.io/" + options.stack, patched.error(), err);
    return exit_code(patched.error());
  }
  std::string what;
  for (const auto& [role, n] : *requests)
    what += fmt::format("{}{}={}", what.empty() ? "" : " ", role, n);
  out << "stack.kstack.io/" << options.stack << " scaled (" << what << ")\n";
  out.flush();
  if (!options.wait.wait) return kExitOk;
  return wait_for_stacks(client, {{conn->ns, options.stack}}, WaitGoal::kReady, *timeout,
                         detect_screen(), out, err);
}

}  // namespace kstack::cmd
