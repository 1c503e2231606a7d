// plan(): the setup stage of a member (docs/spec.md §5) — configmeta and env written into the
// container, the package installed, `startscript --configure` started and its result picked up
// by later passes — then --addnodes/--delnodes notifications for the others. Each setup step
// is one exec the plan starts on the setup executor (Plan::setup_steps); a later pass finds its
// outcome in the snapshot and plans the next, so a pass never waits for a container.
#include <algorithm>

#include <fmt/format.h>

#include "catalog/defaults.h"
#include "reconciler/configmeta.h"
#include "reconciler/plan_internal.h"

namespace kstack::reconciler::detail {
using catalog::MemberStatus;
using executor::SetupOutcome;
using executor::SetupStep;
using executor::SetupStepKind;

std::string last_lines(std::string_view text, std::size_t max_bytes) {
  if (text.size() > max_bytes) text = text.substr(text.size() - max_bytes);
  std::size_t start = 0;
  while (start < text.size() && start < 3 &&
         (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
    ++start;
  }
  return std::string(text.substr(start));
}

namespace {

std::string cmd_text(const std::vector<std::string>& args) {
  return fmt::format("startscript {}", fmt::join(args, " "));
}

// One member's setup this pass.
struct MemberSetup {
  Planning& p;
  const RolePlan& role;
  MemberStatus& m;
  std::string cid;
  bool pod_ready = false;      // the pod is Running and Ready (its readiness probe passes)
  std::vector<SetupKey> used;  // outcomes this pass read for the member
  bool continues = false;      // a step was started or is in flight
  const PodView& pod;
  const catalog::SetupPackage& package;  // what this container is set up with
  executor::MemberTarget target() const { return {p.snap.ns(), m.pod, cid}; }

  // The member's last setup finished in another template revision than its pod runs: it moved
  // (an upgrade, or a rollback) and is set up again with `--configure --upgrade-from`, its
  // package installed anew even when a startscript is there.
  bool upgrading() const {
    const auto& d = m.state_detail;
    return !d.last_configured_revision.empty() && !pod.revision.empty() &&
           d.last_configured_revision != pod.revision;
  }
  // The AppType the pod's template was made from.
  std::string app_now() const { return pod.app.empty() ? p.stack().spec.app : pod.app; }
  // Moved to another AppType: --configure gets --upgrade-from and configmeta/env say from what.
  // Within the same AppType (resources, env, ... changed) it is set up as any new pod is, so a
  // package that knows no --upgrade-from is not broken by a change of the role's values.
  bool app_changed() const {
    return upgrading() && !m.state_detail.last_configured_app.empty() &&
           m.state_detail.last_configured_app != app_now();
  }

  // The outcome of `kind`, or nullptr while it runs (started now, or still in flight).
  const SetupOutcome* step(SetupStepKind kind) {
    const SetupKey key{m.pod, cid, kind, p.st().config_generation};
    if (auto it = p.snap.setup.find(key); it != p.snap.setup.end() && it->second.done) {
      used.push_back(key);
      return &it->second.outcome;
    }
    p.waiting = true;
    continues = true;
    // In flight: its completion wakes a later pass.
    if (p.snap.setup.contains(key)) return nullptr;
    SetupStep s;
    s.kind = kind;
    s.role = role.id;
    s.target = target();
    s.generation = key.generation;
    if (kind == SetupStepKind::kWriteConfig) fill_config(s);
    if (kind == SetupStepKind::kInstallPackage) {
      s.package = package;
      s.package_namespace = p.app->namespace_name;
    }
    if (kind == SetupStepKind::kStartConfigure && app_changed()) {
      s.arguments = {"--upgrade-from", m.state_detail.last_configured_app};
    }
    p.out.setup_steps.push_back(std::move(s));
    return nullptr;
  }
  // A member whose setup goes on needs the outcomes it read again next pass (the steps before
  // the running one are replayed from them); one that concluded lets them go.
  void finish() {
    if (continues) p.setup_kept.insert(used.begin(), used.end());
  }

  void fill_config(SetupStep& s) const {
    std::vector<ConfigMember> members;
    for (const auto& r : p.roles) {
      for (const auto& pm : r.status.members) {
        members.push_back(ConfigMember{r.id, pm.pod, p.desired->fqdn(pm.pod), pm.node_id});
      }
    }
    ConfigInput in{&p.stack(), &p.app->app, p.config, p.desired->headless_service_name, members};
    const ConfigMember self{role.id, m.pod, p.desired->fqdn(m.pod), m.node_id};
    const UpgradeFrom from{m.state_detail.last_configured_app,
                           m.state_detail.last_configured_revision};
    const UpgradeFrom* upgrade = app_changed() ? &from : nullptr;
    s.configmeta = configmeta_text(in, self, upgrade);
    s.env = env_file(in, self, upgrade);
  }

  // Configmeta current for this pass's members: true when written (now or before).
  bool config_written(const SetupOutcome*& failure) {
    failure = nullptr;
    auto& d = m.state_detail;
    if (d.last_config_data_generation == p.st().config_generation) return true;
    const auto* out = step(SetupStepKind::kWriteConfig);
    if (out == nullptr) return false;
    if (out->kind != SetupOutcome::Kind::kDone) {
      failure = out;
      return false;
    }
    d.last_config_data_generation = p.st().config_generation;
    return true;
  }

  void config_error(std::string detail) {
    m.state = std::string(catalog::kMemberConfigError);
    m.state_detail.config_error_detail = std::move(detail);
    p.event("Warning", "ConfigError", "Setup",
            fmt::format("member {}: {}", m.pod, m.state_detail.config_error_detail));
  }
  // A config error ends the setup; anything else is tried again on a later pass.
  void failed(const SetupOutcome& out) {
    if (out.kind == SetupOutcome::Kind::kConfigError) return config_error(out.message);
    p.waiting = true;
  }
  void configured(std::string_view how) {
    if (upgrading()) p.upgraded[role.id].push_back(p.desired->fqdn(m.pod));
    m.state_detail.last_configured_container = cid;
    record_revision();
    p.event("Normal", "Configured", "Setup",
            fmt::format("member {} (container {}) {}{}", m.pod, cid, how,
                        pod_ready ? "" : "; waiting for the pod to be Ready"));
    gate(/*was_ready=*/false);
  }
  // Set up for this container: ready while the pod is Ready (docs/api.md "Probes"), else
  // creating, without being set up again; the pass polls until the pod answers.
  void gate(bool was_ready) {
    m.state = std::string(pod_ready ? catalog::kMemberReady : catalog::kMemberCreating);
    if (pod_ready) return;
    p.waiting = true;
    if (was_ready) {
      p.event(
          "Warning", "NotReady", "Setup",
          fmt::format("member {} (container {}) is set up but its pod is not Ready", m.pod, cid));
    }
  }

  // What the member's setup finished in: its template revision and AppType.
  void record_revision() {
    auto& d = m.state_detail;
    d.last_configured_revision = pod.revision;
    d.last_configured_app = app_now();
    d.last_configured_package = package_annotation(package);
  }

  void refresh();
  void set_up();
  void after_status(const SetupOutcome& out);
  void install_and_configure();
};

// Configured: keep configmeta current (membership changed) before notifications go out.
void MemberSetup::refresh() {
  if (!p.snap.has_setup_runner) return;
  const SetupOutcome* failure = nullptr;
  if (!config_written(failure) && failure != nullptr) p.waiting = true;
}

void MemberSetup::set_up() {
  auto& d = m.state_detail;
  if (d.configuring_container != cid) {
    d.configuring_container = cid;
    d.last_config_data_generation.reset();
    d.config_error_detail.clear();
    d.start_script_stdout_message.clear();
    d.start_script_stderr_message.clear();
  }
  m.state = std::string(catalog::kMemberCreating);
  if (!p.snap.has_setup_runner) {
    return config_error(
        "this kstack process has no setup runner; cannot run the role's setup package");
  }
  const SetupOutcome* failure = nullptr;
  if (!config_written(failure)) {
    if (failure != nullptr) failed(*failure);
    return;
  }
  const auto* status = step(SetupStepKind::kReadConfigureStatus);
  if (status == nullptr) return;
  if (status->kind != SetupOutcome::Kind::kDone) return failed(*status);
  after_status(*status);
}

void MemberSetup::after_status(const SetupOutcome& out) {
  using State = executor::SetupRunner::ConfigureStatus::State;
  const auto& status = out.status;
  if (status.state == State::kDone && status.container_id == cid) {
    if (status.exit_code == 0) return configured("configured (startscript --configure exited 0)");
    m.state_detail.start_script_stdout_message = last_lines(status.stdout_tail, 2048);
    m.state_detail.start_script_stderr_message = last_lines(status.stderr_tail, 2048);
    return config_error(fmt::format("startscript --configure exited {}", status.exit_code));
  }
  if (status.state == State::kDone && status.exit_code == 0 && role.desired->setup_dir_persisted &&
      !upgrading()) {
    // An earlier container of this member finished configure and the setup directory is
    // persisted on the member's PVC: the app is configured; do not run it again. (Kept only
    // in kstack's emptyDir, it survived a container restart: configure runs again.)
    return configured(
        fmt::format("already configured by an earlier container ({}); configure not rerun",
                    status.container_id));
  }
  if (status.state == State::kRunning && status.container_id == cid) {
    p.waiting = true;  // picked up by a later pass
    return;
  }
  install_and_configure();
}

void MemberSetup::install_and_configure() {
  bool installed_already = false;
  if (!upgrading()) {
    const auto* installed = step(SetupStepKind::kCheckPackage);
    if (installed == nullptr) return;
    if (installed->kind != SetupOutcome::Kind::kDone) return failed(*installed);
    installed_already = installed->installed;
  }
  if (!installed_already) {
    const auto* done = step(SetupStepKind::kInstallPackage);
    if (done == nullptr) return;
    if (done->kind != SetupOutcome::Kind::kDone) return failed(*done);
  }
  const auto* app_role = catalog::find_role(p.app->app, role.id);
  const bool run_configure =
      app_role != nullptr &&
      catalog::role_handles_event(p.app->app, *app_role, catalog::kEventConfigure);
  if (!run_configure) return configured("set up (configure is not in the role's eventList)");
  const auto* started = step(SetupStepKind::kStartConfigure);
  if (started == nullptr) return;
  if (started->kind != SetupOutcome::Kind::kDone) return failed(*started);
  p.waiting = true;
}

}  // namespace

bool configured_member(const MemberStatus& m, std::string_view cid) {
  return !cid.empty() && m.state_detail.last_configured_container == cid &&
         m.state != catalog::kMemberConfigError;
}

bool configured_member(const MemberStatus& m) {
  if (m.state == catalog::kMemberReady) return true;
  return m.state == catalog::kMemberCreating &&
         configured_member(m, m.state_detail.configuring_container);
}

namespace {

// The package a member's container is set up with: the one its pod's template names. That is
// the role's, unless the pod still runs an older template (made again before its turn in a
// rollout): then the package its setup last ran, which the pod's annotation must name — an
// annotation on a pod is not trusted alone. `error` says why neither fits.
struct MemberPackage {
  std::optional<catalog::SetupPackage> package;
  std::string error;
};

MemberPackage member_package(const RolePlan& role, const MemberStatus& m, const PodView& pod) {
  if (pod.app.empty()) return {role.package, {}};  // a template from before the annotations
  const std::string current = role.package ? package_annotation(*role.package) : std::string();
  if (pod.package == current) return {role.package, {}};
  if (pod.package.empty()) return {std::nullopt, {}};  // that template had no package
  if (pod.package == m.state_detail.last_configured_package) {
    return {package_from_annotation(pod.package), {}};
  }
  return {std::nullopt,
          fmt::format("its pod runs an older template naming setup package {}, which is neither "
                      "the role's ({}) nor the one the member was set up with; it is set up when "
                      "it moves to the current template",
                      pod.package, current.empty() ? "none" : current)};
}

}  // namespace

void plan_member_setup(Planning& p, const RolePlan& role, MemberStatus& m, const PodView& pod) {
  if (!pod.exists || pod.unschedulable || !pod.scheduled) {
    m.state = std::string(catalog::kMemberCreatePending);
    return;
  }
  const auto package = member_package(role, m, pod);
  if (!package.package && package.error.empty()) {
    m.state = std::string(pod.running_ready ? catalog::kMemberReady : catalog::kMemberCreating);
    return;
  }
  const auto& d = m.state_detail;
  const std::string& cid = pod.container_id;
  if (pod.container_state != "running" || cid.empty() || pod.deleting) {
    // Nothing to exec into. A config_error stays until the container changes.
    if (m.state == catalog::kMemberConfigError && d.configuring_container == cid) return;
    m.state = std::string(catalog::kMemberCreating);
    return;
  }
  if (!package.package) {
    if (m.state == catalog::kMemberConfigError && d.configuring_container == cid) return;
    m.state_detail.configuring_container = cid;
    m.state = std::string(catalog::kMemberConfigError);
    m.state_detail.config_error_detail = package.error;
    p.event("Warning", "ConfigError", "Setup", fmt::format("member {}: {}", m.pod, package.error));
    return;
  }
  if (!configured_member(m, cid) && replacement_held(p, m)) {
    m.state = std::string(catalog::kMemberCreating);
    p.waiting = true;  // set up once the others were told the member it replaces is gone
    return;
  }
  MemberSetup setup{p, role, m, cid, pod.running_ready, {}, false, pod, *package.package};
  if (configured_member(m, cid)) {
    const bool was_ready = m.state == catalog::kMemberReady;
    // Set up before kstack recorded revisions: what it runs now is what it was set up in.
    if (d.last_configured_revision.empty() || d.last_configured_package.empty()) {
      setup.record_revision();
    }
    setup.refresh();
    setup.gate(was_ready);
  } else if (m.state != catalog::kMemberConfigError || d.configuring_container != cid) {
    setup.set_up();
  }
  setup.finish();
}

void plan_announce(Planning& p) {
  // Members that finished setup (ready, or config_error) and were never announced are told to
  // the members that were, in one --addnodes per role, once no member is still setting up —
  // so a scale-up of several members is one notification, not one per member.
  std::map<std::string, std::vector<std::string>> fresh;  // role -> FQDNs
  std::vector<MemberStatus*> fresh_members;
  for (auto& role : p.roles) {
    for (auto& m : role.status.members) {
      if (m.state == catalog::kMemberCreatePending || m.state == catalog::kMemberCreating) return;
      if (!m.state_detail.last_setup_generation) {
        fresh[role.id].push_back(p.desired->fqdn(m.pod));
        fresh_members.push_back(&m);
      }
    }
  }
  if (fresh_members.empty()) return;
  for (auto& role : p.roles) {
    const auto* app_role = catalog::find_role(p.app->app, role.id);
    if (!role.package || app_role == nullptr ||
        !catalog::role_handles_event(p.app->app, *app_role, catalog::kEventAddNodes)) {
      continue;
    }
    for (auto& m : role.status.members) {
      if (!m.state_detail.last_setup_generation || m.state != catalog::kMemberReady) continue;
      for (const auto& [role_id, fqdns] : fresh) {
        m.state_detail.pending_notify_cmds.push_back(
            catalog::NotifyCmd{{"--addnodes", "--role", role_id, "--fqdns",
                                fmt::format("{}", fmt::join(fqdns, ","))}});
      }
    }
  }
  for (auto* m : fresh_members) {
    m->state_detail.last_setup_generation = p.st().config_generation;
    if (m->state_detail.replacing) {
      // Made again empty after a lost node, set up, and now announced: recovered.
      m->state_detail.replacing = false;
      m->state_detail.recovery.clear();
    }
  }
}

namespace {

// The front command of one member's queue: sent, waited for, consumed or given up on.
void plan_notification(Planning& p, const RolePlan& role, MemberStatus& m) {
  auto& d = m.state_detail;
  const executor::MemberTarget target{p.snap.ns(), m.pod, d.last_configured_container};
  const auto& args = d.pending_notify_cmds.front().arguments;
  const Notification n{role.id, target, args};
  auto it = p.snap.notify.find(notify_id(target, args));
  using S = NotifyOutcome::State;
  if (it == p.snap.notify.end()) {
    p.out.sends.push_back(n);
    p.waiting = true;
    return;
  }
  const auto& outcome = it->second;
  if (outcome.state == S::kInFlight) {
    p.waiting = true;
    return;
  }
  if (outcome.state == S::kSucceeded) {
    p.event("Normal", "Notified", "Notify", fmt::format("member {}: {}", m.pod, cmd_text(args)));
    d.last_notify_error.clear();
  } else if (outcome.attempts >= p.snap.notify_max_attempts) {
    d.last_notify_error = fmt::format("{} failed {} times; last: {}", cmd_text(args),
                                      outcome.attempts, outcome.error);
    p.event("Warning", "NotifyFailed", "Notify",
            fmt::format("member {}: {}", m.pod, d.last_notify_error));
  } else {
    if (p.snap.clock >= outcome.retry_at) p.out.sends.push_back(n);
    p.waiting = true;
    return;
  }
  p.out.delivered.push_back(n);
  d.pending_notify_cmds.erase(d.pending_notify_cmds.begin());
  if (!d.pending_notify_cmds.empty()) p.waiting = true;
}

}  // namespace

void plan_notifications(Planning& p) {
  const auto generation = p.st().config_generation;
  for (auto& role : p.roles) {
    for (auto& m : role.status.members) {
      const auto& d = m.state_detail;
      if (d.pending_notify_cmds.empty()) continue;
      // Only a configured, running member with the current configmeta is notified; the others
      // keep their queue (a dead member does not hold anyone else up).
      if (m.state != catalog::kMemberReady || d.last_configured_container.empty() ||
          d.last_config_data_generation != generation || !p.snap.has_notifier) {
        continue;
      }
      plan_notification(p, role, m);
    }
  }
}

}  // namespace kstack::reconciler::detail
