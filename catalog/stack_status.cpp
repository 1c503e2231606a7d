// Stack status (docs/spec.md §2.2): decoded when the operator reads a Stack back from its cache and
// encoded when it writes the status subresource. Empty/zero fields are omitted on output so
// that an unchanged status serialises identically (the operator compares before writing).
#include <boost/json.hpp>

#include "catalog/decode_detail.h"
#include "catalog/parse.h"

namespace kstack::catalog {
namespace json = boost::json;
using detail::Decoder;

namespace {

template <typename T, typename F>
std::vector<T> decode_items(const json::object& parent, std::string_view key, std::string_view path,
                            Decoder& d, F&& decode_item) {
  std::vector<T> out;
  const auto* a = d.array(parent, key, path);
  if (a == nullptr) return out;
  out.reserve(a->size());
  std::string base = child_path(path, key);
  for (std::size_t i = 0; i < a->size(); ++i) {
    std::string ip = index_path(base, i);
    const auto* item = (*a)[i].if_object();
    if (item == nullptr) {
      d.error(ip, "must be an object");
      continue;
    }
    out.push_back(decode_item(*item, ip, d));
  }
  return out;
}

Condition decode_condition(const json::object& o, const std::string& p, Decoder& d) {
  Condition c;
  c.type = d.string(o, "type", p).value_or("");
  c.status = d.string(o, "status", p).value_or("");
  c.reason = d.string(o, "reason", p).value_or("");
  c.message = d.string(o, "message", p).value_or("");
  c.last_transition_time = d.string(o, "lastTransitionTime", p).value_or("");
  c.observed_generation = d.integer(o, "observedGeneration", p).value_or(0);
  return c;
}

NotifyCmd decode_notify(const json::object& o, const std::string& p, Decoder& d) {
  return NotifyCmd{d.strings(o, "arguments", p).value_or(std::vector<std::string>{})};
}

MemberStatus decode_member(const json::object& o, const std::string& p, Decoder& d) {
  MemberStatus m;
  m.pod = d.string(o, "pod", p).value_or("");
  m.service = d.string(o, "service", p).value_or("");
  m.pvc = d.string(o, "pvc", p).value_or("");
  m.node_id = d.integer(o, "nodeID", p).value_or(0);
  m.state = d.string(o, "state", p).value_or("");
  m.template_revision = d.string(o, "templateRevision", p).value_or("");
  m.app = d.string(o, "app", p).value_or("");
  if (const auto* sd = d.object(o, "stateDetail", p)) {
    std::string sp = child_path(p, "stateDetail");
    auto& s = m.state_detail;
    s.config_error_detail = d.string(*sd, "configErrorDetail", sp).value_or("");
    s.last_config_data_generation = d.integer(*sd, "lastConfigDataGeneration", sp);
    s.last_setup_generation = d.integer(*sd, "lastSetupGeneration", sp);
    s.configuring_container = d.string(*sd, "configuringContainer", sp).value_or("");
    s.last_configured_container = d.string(*sd, "lastConfiguredContainer", sp).value_or("");
    s.last_known_container_state = d.string(*sd, "lastKnownContainerState", sp).value_or("");
    s.pending_notify_cmds = decode_items<NotifyCmd>(*sd, "pendingNotifyCmds", sp, d, decode_notify);
    s.start_script_stdout_message = d.string(*sd, "startScriptStdoutMessage", sp).value_or("");
    s.start_script_stderr_message = d.string(*sd, "startScriptStderrMessage", sp).value_or("");
    s.scheduling_error_message = d.string(*sd, "schedulingErrorMessage", sp).value_or("");
    s.last_notify_error = d.string(*sd, "lastNotifyError", sp).value_or("");
    s.last_configured_revision = d.string(*sd, "lastConfiguredRevision", sp).value_or("");
    s.last_configured_app = d.string(*sd, "lastConfiguredApp", sp).value_or("");
    s.last_configured_package = d.string(*sd, "lastConfiguredPackage", sp).value_or("");
    s.moved_at = d.string(*sd, "movedAt", sp).value_or("");
    s.recovery = d.string(*sd, "recovery", sp).value_or("");
    s.replacing = d.boolean(*sd, "replacing", sp).value_or(false);
    s.preupgrade_revision = d.string(*sd, "preupgradeRevision", sp).value_or("");
    s.preupgrade_container = d.string(*sd, "preupgradeContainer", sp).value_or("");
    s.preupgrade_succeeded = d.boolean(*sd, "preupgradeSucceeded", sp).value_or(false);
    s.upgrade_error = d.string(*sd, "upgradeError", sp).value_or("");
    s.preupgrade_stdout = d.string(*sd, "preupgradeStdout", sp).value_or("");
    s.preupgrade_stderr = d.string(*sd, "preupgradeStderr", sp).value_or("");
  }
  return m;
}

RoleStatus decode_role(const json::object& o, const std::string& p, Decoder& d) {
  RoleStatus r;
  r.id = d.string(o, "id", p).value_or("");
  r.stateful_set = d.string(o, "statefulSet", p).value_or("");
  r.members = decode_items<MemberStatus>(o, "members", p, d, decode_member);
  r.update_revision = d.string(o, "updateRevision", p).value_or("");
  r.updated_members = d.integer(o, "updatedMembers", p).value_or(0);
  r.partition = d.integer(o, "partition", p).value_or(0);
  return r;
}

void put(json::object& o, std::string_view key, const std::string& v) {
  if (!v.empty()) o[key] = v;
}
void put(json::object& o, std::string_view key, std::int64_t v) {
  if (v != 0) o[key] = v;
}
void put(json::object& o, std::string_view key, const std::optional<std::int64_t>& v) {
  if (v) o[key] = *v;
}
void put_true(json::object& o, std::string_view key, bool v) {
  if (v) o[key] = true;
}

json::object detail_json(const MemberStateDetail& s) {
  json::object o;
  put(o, "configErrorDetail", s.config_error_detail);
  put(o, "lastConfigDataGeneration", s.last_config_data_generation);
  put(o, "lastSetupGeneration", s.last_setup_generation);
  put(o, "configuringContainer", s.configuring_container);
  put(o, "lastConfiguredContainer", s.last_configured_container);
  put(o, "lastKnownContainerState", s.last_known_container_state);
  if (!s.pending_notify_cmds.empty()) {
    json::array cmds;
    for (const auto& c : s.pending_notify_cmds) {
      cmds.push_back(json::object{{"arguments", json::value_from(c.arguments)}});
    }
    o["pendingNotifyCmds"] = std::move(cmds);
  }
  put(o, "startScriptStdoutMessage", s.start_script_stdout_message);
  put(o, "startScriptStderrMessage", s.start_script_stderr_message);
  put(o, "schedulingErrorMessage", s.scheduling_error_message);
  put(o, "lastNotifyError", s.last_notify_error);
  put(o, "lastConfiguredRevision", s.last_configured_revision);
  put(o, "lastConfiguredApp", s.last_configured_app);
  put(o, "lastConfiguredPackage", s.last_configured_package);
  put(o, "movedAt", s.moved_at);
  put(o, "recovery", s.recovery);
  put_true(o, "replacing", s.replacing);
  put(o, "preupgradeRevision", s.preupgrade_revision);
  put(o, "preupgradeContainer", s.preupgrade_container);
  put_true(o, "preupgradeSucceeded", s.preupgrade_succeeded);
  put(o, "upgradeError", s.upgrade_error);
  put(o, "preupgradeStdout", s.preupgrade_stdout);
  put(o, "preupgradeStderr", s.preupgrade_stderr);
  return o;
}

}  // namespace

StackStatus decode_stack_status(const json::value& status, FieldErrors& errors,
                                std::string_view path) {
  StackStatus s;
  Decoder d(errors);
  const auto* o = status.if_object();
  if (o == nullptr) {
    if (!status.is_null()) d.error(std::string(path), "must be an object");
    return s;
  }
  s.observed_generation = d.integer(*o, "observedGeneration", path).value_or(0);
  s.state = d.string(*o, "state", path).value_or("");
  s.conditions = decode_items<Condition>(*o, "conditions", path, d, decode_condition);
  s.cluster_service = d.string(*o, "clusterService", path).value_or("");
  s.last_node_id = d.integer(*o, "lastNodeID", path).value_or(0);
  s.config_generation = d.integer(*o, "configGeneration", path).value_or(0);
  s.ready_members = d.integer(*o, "readyMembers", path).value_or(0);
  s.desired_members = d.integer(*o, "desiredMembers", path).value_or(0);
  s.member_summary = d.string(*o, "memberSummary", path).value_or("");
  s.updated_members = d.integer(*o, "updatedMembers", path).value_or(0);
  s.update_summary = d.string(*o, "updateSummary", path).value_or("");
  s.roles = decode_items<RoleStatus>(*o, "roles", path, d, decode_role);
  if (const auto* r = d.object(*o, "memberStateRollup", path)) {
    std::string rp = child_path(path, "memberStateRollup");
    auto& m = s.member_state_rollup;
    m.membership_changing = d.boolean(*r, "membershipChanging", rp).value_or(false);
    m.members_down = d.boolean(*r, "membersDown", rp).value_or(false);
    m.members_initializing = d.boolean(*r, "membersInitializing", rp).value_or(false);
    m.members_waiting = d.boolean(*r, "membersWaiting", rp).value_or(false);
    m.members_restarting = d.boolean(*r, "membersRestarting", rp).value_or(false);
    m.config_errors = d.boolean(*r, "configErrors", rp).value_or(false);
    m.members_not_scheduled = d.boolean(*r, "membersNotScheduled", rp).value_or(false);
  }
  return s;
}

json::value to_json(const StackStatus& s) {
  json::object o;
  put(o, "observedGeneration", s.observed_generation);
  put(o, "state", s.state);
  if (!s.conditions.empty()) {
    json::array conds;
    for (const auto& c : s.conditions) {
      json::object co{{"type", c.type}, {"status", c.status}};
      put(co, "reason", c.reason);
      put(co, "message", c.message);
      put(co, "lastTransitionTime", c.last_transition_time);
      put(co, "observedGeneration", c.observed_generation);
      conds.push_back(std::move(co));
    }
    o["conditions"] = std::move(conds);
  }
  put(o, "clusterService", s.cluster_service);
  put(o, "lastNodeID", s.last_node_id);
  put(o, "configGeneration", s.config_generation);
  o["readyMembers"] = s.ready_members;
  o["desiredMembers"] = s.desired_members;
  put(o, "memberSummary", s.member_summary);
  put(o, "updatedMembers", s.updated_members);
  put(o, "updateSummary", s.update_summary);
  if (!s.roles.empty()) {
    json::array roles;
    for (const auto& r : s.roles) {
      json::object ro{{"id", r.id}};
      put(ro, "statefulSet", r.stateful_set);
      json::array members;
      for (const auto& m : r.members) {
        json::object mo;
        put(mo, "pod", m.pod);
        put(mo, "service", m.service);
        put(mo, "pvc", m.pvc);
        mo["nodeID"] = m.node_id;
        put(mo, "state", m.state);
        put(mo, "templateRevision", m.template_revision);
        put(mo, "app", m.app);
        mo["stateDetail"] = detail_json(m.state_detail);
        members.push_back(std::move(mo));
      }
      ro["members"] = std::move(members);
      put(ro, "updateRevision", r.update_revision);
      put(ro, "updatedMembers", r.updated_members);
      put(ro, "partition", r.partition);
      roles.push_back(std::move(ro));
    }
    o["roles"] = std::move(roles);
  }
  const auto& m = s.member_state_rollup;
  o["memberStateRollup"] = json::object{
      {"membershipChanging", m.membership_changing},   {"membersDown", m.members_down},
      {"membersInitializing", m.members_initializing}, {"membersWaiting", m.members_waiting},
      {"membersRestarting", m.members_restarting},     {"configErrors", m.config_errors},
      {"membersNotScheduled", m.members_not_scheduled}};
  return o;
}

}  // namespace kstack::catalog
