// The setup stage of a member (docs/spec.md §5): configmeta and env written into the container, the
// package delivered, `startscript --configure` started in the background and its result
// picked up by later passes; then --addnodes/--delnodes notifications for the others.
// Each pass does at most a few short execs per member and never waits for a script.
#include <algorithm>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "catalog/defaults.h"
#include "reconciler/configmeta.h"
#include "reconciler/pass.h"
#include "reconciler/reconciler.h"

namespace kstack::reconciler {
namespace json = boost::json;
using catalog::MemberStatus;

namespace {

std::string last_lines(std::string_view text, std::size_t max_bytes) {
  if (text.size() > max_bytes) text = text.substr(text.size() - max_bytes);
  return std::string(text);
}

std::string cmd_text(const std::vector<std::string>& args) {
  return fmt::format("startscript {}", fmt::join(args, " "));
}

// Standard base64 (RFC 4648) with padding, as ConfigMap binaryData is encoded. OpenSSL is
// already linked for TLS; EVP_DecodeBlock counts padding as zero bytes, removed here.
kube::Result<std::string> base64_decode(std::string_view text, std::string_view what) {
  std::string clean;
  clean.reserve(text.size());
  for (char c : text) {
    if (c != '\n' && c != '\r') clean += c;
  }
  if (clean.size() % 4 != 0) {
    return kube::make_error(kube::ErrorKind::kInvalid,
                            fmt::format("{}: not valid base64 (length {})", what, clean.size()));
  }
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) {
    return kube::make_error(kube::ErrorKind::kInvalid, fmt::format("{}: not valid base64", what));
  }
  std::size_t size = static_cast<std::size_t>(n);
  if (!clean.empty() && clean.back() == '=') --size;
  if (clean.size() >= 2 && clean[clean.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

// package_payload's errors: those it made itself (no HTTP answer, kInvalid) say the package
// reference is wrong; what the API server answered is classified as any setup step's is.
executor::SetupError payload_error(kube::Error e) {
  if (e.http_status == 0 && e.is(kube::ErrorKind::kInvalid)) {
    return {executor::SetupErrorKind::kConfig, std::move(e.message), std::nullopt};
  }
  return executor::classify(std::move(e));
}

}  // namespace

kube::Result<std::string> Reconciler::package_payload(const SetupContext& ctx,
                                                      const catalog::SetupPackage& package) {
  // configmap://<name>/<key>, read from the AppType's namespace.
  constexpr std::string_view kScheme = "configmap://";
  std::string_view rest = std::string_view(package.package_url).substr(kScheme.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= rest.size()) {
    return kube::make_error(
        kube::ErrorKind::kInvalid,
        fmt::format("packageURL {}: expected configmap://<name>/<key>", package.package_url));
  }
  const std::string name(rest.substr(0, slash));
  const std::string key(rest.substr(slash + 1));
  auto cm = executor_.client().get(kube::resources::kConfigMaps, ctx.app.namespace_name, name);
  if (!cm) {
    if (cm.error().kind == kube::ErrorKind::kNotFound) {
      return kube::make_error(kube::ErrorKind::kInvalid,
                              fmt::format("packageURL {}: ConfigMap {}/{} not found",
                                          package.package_url, ctx.app.namespace_name, name));
    }
    return tl::unexpected(cm.error());
  }
  const auto* obj = cm->if_object();
  const json::object* binary = nullptr;
  const json::object* data = nullptr;
  if (obj != nullptr) {
    if (const auto* b = obj->if_contains("binaryData"); b && b->is_object())
      binary = &b->as_object();
    if (const auto* d = obj->if_contains("data"); d && d->is_object()) data = &d->as_object();
  }
  if (binary != nullptr) {
    if (const auto* v = binary->if_contains(key); v && v->is_string()) {
      return base64_decode(v->as_string(), fmt::format("ConfigMap {} binaryData[{}]", name, key));
    }
  }
  if (data != nullptr) {
    if (const auto* v = data->if_contains(key); v && v->is_string()) {
      return std::string(v->as_string());
    }
  }
  return kube::make_error(kube::ErrorKind::kInvalid,
                          fmt::format("packageURL {}: ConfigMap {}/{} has no key \"{}\" in "
                                      "binaryData or data",
                                      package.package_url, ctx.app.namespace_name, name, key));
}

void Reconciler::member_setup(SetupContext& ctx, const RolePlan& plan, MemberStatus& m,
                              const PodView& pod) {
  const kube::LogScope log_scope(kube::with_member(plan.id, m.pod));
  Pass& pass = ctx.pass;
  auto& d = m.state_detail;
  if (!pod.exists || pod.unschedulable || !pod.scheduled) {
    m.state = std::string(catalog::kMemberCreatePending);
    return;
  }
  if (!plan.package) {
    m.state = std::string(pod.running_ready ? catalog::kMemberReady : catalog::kMemberCreating);
    return;
  }
  const std::string& cid = pod.container_id;
  if (pod.container_state != "running" || cid.empty() || pod.deleting) {
    // Nothing to exec into. A config_error stays until the container changes.
    if (m.state == catalog::kMemberConfigError && d.configuring_container == cid) return;
    m.state = std::string(catalog::kMemberCreating);
    return;
  }
  executor::MemberTarget target{pass.ns(), m.pod, cid};
  auto* runner = setup_.runner;
  const auto generation = pass.status.config_generation;
  auto write_config = [&]() -> executor::SetupResult<void> {
    if (d.last_config_data_generation == generation) return {};
    std::vector<ConfigMember> members;
    for (const auto& p : ctx.plans) {
      for (const auto& pm : p.status.members) {
        members.push_back(ConfigMember{p.id, pm.pod, ctx.desired.fqdn(pm.pod), pm.node_id});
      }
    }
    ConfigInput in{&pass.stack, &ctx.app.app, ctx.config, ctx.desired.headless_service_name,
                   members};
    const ConfigMember self{plan.id, m.pod, ctx.desired.fqdn(m.pod), m.node_id};
    auto written = runner->write_config(target, configmeta_text(in, self), env_file(in, self));
    if (!written) return written;
    d.last_config_data_generation = generation;
    return {};
  };

  if (m.state == catalog::kMemberReady && d.last_configured_container == cid) {
    // Configured: keep configmeta current (membership changed) before notifications go out.
    if (runner != nullptr) {
      if (auto w = write_config(); !w) {
        spdlog::info("stack {}/{}: refresh configmeta in {}: {}", pass.ns(),
                     pass.stack.metadata.name, m.pod, w.error().message);
        pass.waiting = true;
      }
    }
    return;
  }
  if (m.state == catalog::kMemberConfigError && d.configuring_container == cid) return;

  // Setting up this container.
  if (d.configuring_container != cid) {
    d.configuring_container = cid;
    d.last_config_data_generation.reset();
    d.config_error_detail.clear();
    d.start_script_stdout_message.clear();
    d.start_script_stderr_message.clear();
  }
  m.state = std::string(catalog::kMemberCreating);
  auto config_error = [&](std::string detail) {
    m.state = std::string(catalog::kMemberConfigError);
    d.config_error_detail = std::move(detail);
    spdlog::warn("stack {}/{}: member {} config_error: {}", pass.ns(), pass.stack.metadata.name,
                 m.pod, d.config_error_detail);
    executor_.event(*pass.object, "Warning", "ConfigError", "Setup",
                    fmt::format("member {}: {}", m.pod, d.config_error_detail));
  };
  // A wrong setup: config_error; anything else (a changed container, transport, timeout, an
  // API error such as a 422 from the server): try again on a later pass.
  auto failed = [&](const executor::SetupError& e, std::string_view step) {
    if (e.is(executor::SetupErrorKind::kConfig)) {
      config_error(fmt::format("{}: {}", step, e.message));
    } else {
      spdlog::info("stack {}/{}: member {}: {}: {}", pass.ns(), pass.stack.metadata.name, m.pod,
                   step, e.to_string());
      pass.waiting = true;
    }
  };
  if (runner == nullptr) {
    config_error("this kstack process has no setup runner; cannot run the role's setup package");
    return;
  }
  if (auto w = write_config(); !w) return failed(w.error(), "write /etc/kstack");

  const auto* app_role = catalog::find_role(ctx.app.app, plan.id);
  const bool run_configure =
      app_role != nullptr &&
      catalog::role_handles_event(ctx.app.app, *app_role, catalog::kEventConfigure);
  auto configured = [&](std::string_view how) {
    m.state = std::string(catalog::kMemberReady);
    d.last_configured_container = cid;
    executor_.event(*pass.object, "Normal", "Configured", "Setup",
                    fmt::format("member {} (container {}) {}", m.pod, cid, how));
  };

  auto status = runner->configure_status(target);
  if (!status) return failed(status.error(), "read configure.status");
  using State = executor::SetupRunner::ConfigureStatus::State;
  if (status->state == State::kDone && status->container_id == cid) {
    if (status->exit_code == 0) return configured("configured (startscript --configure exited 0)");
    d.start_script_stdout_message = last_lines(status->stdout_tail, 2048);
    d.start_script_stderr_message = last_lines(status->stderr_tail, 2048);
    return config_error(fmt::format("startscript --configure exited {}", status->exit_code));
  }
  if (status->state == State::kDone && status->exit_code == 0) {
    // An earlier container of this member finished configure and the setup directory
    // survived (persisted on the member's PVC): the app is configured; do not run it again.
    return configured(
        fmt::format("already configured by an earlier container ({}); "
                    "configure not rerun",
                    status->container_id));
  }
  if (status->state == State::kRunning && status->container_id == cid) {
    pass.waiting = true;  // picked up by a later pass
    return;
  }
  auto installed = runner->package_installed(target);
  if (!installed) return failed(installed.error(), "check the setup package");
  if (!*installed) {
    std::string payload;
    const bool from_configmap = plan.package->package_url.starts_with("configmap://");
    if (from_configmap) {
      auto p = package_payload(ctx, *plan.package);
      if (!p) return failed(payload_error(p.error()), "read the setup package");
      payload = std::move(*p);
    }
    auto done = runner->install_package(target, *plan.package, from_configmap ? &payload : nullptr);
    if (!done) return failed(done.error(), fmt::format("install {}", plan.package->package_url));
  }
  if (!run_configure) return configured("set up (configure is not in the role's eventList)");
  if (auto started = runner->start_configure(target); !started) {
    return failed(started.error(), "start startscript --configure");
  }
  pass.waiting = true;
}

void Reconciler::announce(SetupContext& ctx) {
  // Members that finished setup (ready, or config_error) and were never announced are told to
  // the members that were, in one --addnodes per role, once no member is still setting up —
  // so a scale-up of several members is one notification, not one per member.
  std::map<std::string, std::vector<std::string>> fresh;  // role -> FQDNs
  std::vector<MemberStatus*> fresh_members;
  for (auto& plan : ctx.plans) {
    for (auto& m : plan.status.members) {
      if (m.state == catalog::kMemberCreatePending || m.state == catalog::kMemberCreating) return;
      if (!m.state_detail.last_setup_generation) {
        fresh[plan.id].push_back(ctx.desired.fqdn(m.pod));
        fresh_members.push_back(&m);
      }
    }
  }
  if (fresh_members.empty()) return;
  const auto generation = ctx.pass.status.config_generation;
  for (auto& plan : ctx.plans) {
    const auto* app_role = catalog::find_role(ctx.app.app, plan.id);
    if (!plan.package || app_role == nullptr ||
        !catalog::role_handles_event(ctx.app.app, *app_role, catalog::kEventAddNodes)) {
      continue;
    }
    for (auto& m : plan.status.members) {
      if (!m.state_detail.last_setup_generation || m.state != catalog::kMemberReady) continue;
      for (const auto& [role_id, fqdns] : fresh) {
        m.state_detail.pending_notify_cmds.push_back(
            catalog::NotifyCmd{{"--addnodes", "--role", role_id, "--fqdns",
                                fmt::format("{}", fmt::join(fqdns, ","))}});
      }
    }
  }
  for (auto* m : fresh_members) m->state_detail.last_setup_generation = generation;
}

void Reconciler::deliver_notifications(SetupContext& ctx) {
  Pass& pass = ctx.pass;
  auto* notifier = setup_.notifier;
  const auto generation = pass.status.config_generation;
  const auto now = Notifier::Clock::now();
  for (auto& plan : ctx.plans) {
    for (auto& m : plan.status.members) {
      auto& d = m.state_detail;
      if (d.pending_notify_cmds.empty()) continue;
      // Also captured by the notifier for the lines its threads log about this command.
      const kube::LogScope log_scope(kube::with_member(plan.id, m.pod));
      // Only a configured, running member with the current configmeta is notified; the others
      // keep their queue (a dead member does not hold anyone else up).
      if (m.state != catalog::kMemberReady || d.last_configured_container.empty() ||
          d.last_config_data_generation != generation || notifier == nullptr) {
        continue;
      }
      const executor::MemberTarget target{pass.ns(), m.pod, d.last_configured_container};
      const auto& args = d.pending_notify_cmds.front().arguments;
      const auto outcome = notifier->outcome(target, args);
      using S = Notifier::Outcome::State;
      if (!outcome) {
        notifier->send(informer::object_key(pass.ns(), pass.stack.metadata.name), target, args);
        pass.waiting = true;
        continue;
      }
      if (outcome->state == S::kInFlight) {
        pass.waiting = true;
        continue;
      }
      if (outcome->state == S::kSucceeded) {
        executor_.event(*pass.object, "Normal", "Notified", "Notify",
                        fmt::format("member {}: {}", m.pod, cmd_text(args)));
        pass.delivered.emplace_back(target, args);
        d.pending_notify_cmds.erase(d.pending_notify_cmds.begin());
        d.last_notify_error.clear();
        if (!d.pending_notify_cmds.empty()) pass.waiting = true;
        continue;
      }
      // Failed.
      if (outcome->attempts >= notifier->options().max_attempts) {
        d.last_notify_error = fmt::format("{} failed {} times; last: {}", cmd_text(args),
                                          outcome->attempts, outcome->error);
        executor_.event(*pass.object, "Warning", "NotifyFailed", "Notify",
                        fmt::format("member {}: {}", m.pod, d.last_notify_error));
        pass.delivered.emplace_back(target, args);
        d.pending_notify_cmds.erase(d.pending_notify_cmds.begin());
        if (!d.pending_notify_cmds.empty()) pass.waiting = true;
        continue;
      }
      if (now >= outcome->retry_at) {
        notifier->send(informer::object_key(pass.ns(), pass.stack.metadata.name), target, args);
      }
      pass.waiting = true;
    }
  }
}

}  // namespace kstack::reconciler
