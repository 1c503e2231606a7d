// Pod status computation (see pod_status.h), after the kubelet's generateAPIPodStatus and
// status manager: conditions in the kubelet's order, lastTransitionTime kept while a
// condition's status does not change.
#include "tests/nodesim/pod_status.h"

#include <algorithm>
#include <array>

#include "tests/nodesim/json_util.h"

namespace kstack::nodesim {

namespace json = boost::json;

namespace {

constexpr std::array<std::string_view, 4> kKubeletConditions = {"Initialized", "Ready",
                                                                "ContainersReady", "PodScheduled"};

bool kubelet_owned(std::string_view type) {
  return std::find(kKubeletConditions.begin(), kKubeletConditions.end(), type) !=
         kKubeletConditions.end();
}

const json::value* current_condition(const json::value& pod, std::string_view type) {
  if (const auto* conds = arr(pod, "/status/conditions")) {
    for (const auto& c : *conds) {
      if (str(c, "/type") == type) return &c;
    }
  }
  return nullptr;
}

json::object condition(const json::value& pod, std::string_view type, bool status,
                       std::string_view reason, std::string_view message, std::string_view now) {
  std::string value = status ? "True" : "False";
  json::object c{{"type", type}, {"status", value}};
  std::string since(now);
  if (const auto* cur = current_condition(pod, type);
      cur != nullptr && str(*cur, "/status") == value) {
    if (auto t = str(*cur, "/lastTransitionTime"); !t.empty()) since = t;
  }
  c["lastTransitionTime"] = since;
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  return c;
}

json::object termination_json(const Termination& t) {
  json::object o{{"exitCode", t.exit_code}};
  if (!t.reason.empty()) o["reason"] = t.reason;
  if (!t.started_at.empty()) o["startedAt"] = t.started_at;
  if (!t.finished_at.empty()) o["finishedAt"] = t.finished_at;
  if (!t.container_id.empty()) o["containerID"] = t.container_id;
  return o;
}

json::object container_status(const ContainerState& c) {
  json::object s{{"name", c.name},
                 {"image", c.image},
                 {"imageID", std::string(kContainerIdPrefix) + c.image},
                 {"containerID", c.id},
                 {"restartCount", c.restart_count}};
  bool running = c.running();
  if (running) {
    s["state"] = json::object{{"running", json::object{{"startedAt", c.started_at}}}};
  } else if (!c.waiting_reason.empty()) {
    s["state"] = json::object{
        {"waiting", json::object{{"reason", c.waiting_reason}, {"message", c.waiting_message}}}};
  } else {
    s["state"] = json::object{{"terminated", termination_json(*c.terminated)}};
  }
  if (c.last_termination) {
    s["lastState"] = json::object{{"terminated", termination_json(*c.last_termination)}};
  }
  s["ready"] = running && c.started.value_or(true) && c.readiness.value_or(true);
  s["started"] = running && c.started.value_or(true);
  return s;
}

std::string unready_message(const json::value& pod) {
  std::string names;
  if (const auto* cs = arr(pod, "/spec/containers")) {
    for (const auto& c : *cs) {
      if (!names.empty()) names += ' ';
      names += str(c, "/name");
    }
  }
  return "containers with unready status: [" + names + "]";
}

// Readiness gates (spec.readinessGates) must be True conditions for the pod to be Ready.
std::string unmet_readiness_gate(const json::value& pod) {
  if (const auto* gates = arr(pod, "/spec/readinessGates")) {
    for (const auto& g : *gates) {
      auto type = str(g, "/conditionType");
      const auto* cur = current_condition(pod, type);
      if (cur == nullptr || str(*cur, "/status") != "True") return type;
    }
  }
  return {};
}

json::array conditions(const json::value& pod, std::array<json::object, 4> owned) {
  json::array out;
  for (auto& c : owned) out.emplace_back(std::move(c));
  if (const auto* conds = arr(pod, "/status/conditions")) {
    for (const auto& c : *conds) {
      if (!kubelet_owned(str(c, "/type"))) out.push_back(c);
    }
  }
  return out;
}

// `desired` is contained in `current`: every field it sets (recursively; arrays element-wise
// with equal length) has the same value. Nulls in `current` count as absent.
bool contained(const json::value& desired, const json::value* current) {
  if (current == nullptr || current->is_null()) return desired.is_null();
  if (desired.is_object()) {
    if (!current->is_object()) return false;
    for (const auto& [k, v] : desired.get_object()) {
      const json::value* c = current->get_object().if_contains(k);
      if (!contained(v, c)) return false;
    }
    return true;
  }
  if (desired.is_array()) {
    if (!current->is_array() || current->get_array().size() != desired.get_array().size()) {
      return false;
    }
    for (std::size_t i = 0; i < desired.get_array().size(); ++i) {
      if (!contained(desired.get_array()[i], &current->get_array()[i])) return false;
    }
    return true;
  }
  return desired == *current;
}

}  // namespace

std::string_view phase(const PodState& state) {
  if (state.failed) return "Failed";
  // Every container terminated for good (restartPolicy Never or OnFailure): the pod is done.
  const auto& cs = state.containers;
  if (cs.empty() || !std::all_of(cs.begin(), cs.end(), [](const ContainerState& c) {
        return c.terminated.has_value();
      })) {
    return "Running";
  }
  const bool succeeded = std::all_of(
      cs.begin(), cs.end(), [](const ContainerState& c) { return c.terminated->exit_code == 0; });
  return succeeded ? "Succeeded" : "Failed";
}

json::object running_status(const json::value& pod, const PodState& state, std::string_view now) {
  json::object status;
  const auto pod_phase = phase(state);
  bool failed = pod_phase != "Running";  // completed: not ready, reason PodCompleted
  bool all_ready =
      !state.containers.empty() &&
      std::all_of(state.containers.begin(), state.containers.end(), [](const ContainerState& c) {
        return c.running() && c.started.value_or(true) && c.readiness.value_or(true);
      });
  std::string gate = unmet_readiness_gate(pod);
  bool containers_ready = all_ready && !failed;
  bool ready = containers_ready && gate.empty();
  std::string reason = failed ? "PodCompleted" : (containers_ready ? "" : "ContainersNotReady");
  std::string message = containers_ready || failed ? "" : unready_message(pod);
  std::string ready_reason = reason;
  std::string ready_message = message;
  if (containers_ready && !gate.empty()) {
    ready_reason = "ReadinessGatesNotReady";
    ready_message =
        "corresponding condition of pod readiness gate \"" + gate + "\" does not exist.";
  }
  status["phase"] = pod_phase;
  status["conditions"] =
      conditions(pod, {condition(pod, "Initialized", true, failed ? "PodCompleted" : "", "", now),
                       condition(pod, "Ready", ready, ready_reason, ready_message, now),
                       condition(pod, "ContainersReady", containers_ready, reason, message, now),
                       condition(pod, "PodScheduled", true, "", "", now)});
  status["hostIP"] = state.host_ip;
  status["podIP"] = state.pod_ip;
  status["podIPs"] = json::array{json::object{{"ip", state.pod_ip}}};
  status["startTime"] = state.start_time;
  json::array containers;
  for (const auto& c : state.containers) containers.emplace_back(container_status(c));
  status["containerStatuses"] = std::move(containers);
  if (!state.init_containers.empty()) {
    json::array inits;
    for (const auto& c : state.init_containers) {
      json::object s = container_status(c);
      s["ready"] = true;
      inits.emplace_back(std::move(s));
    }
    status["initContainerStatuses"] = std::move(inits);
  }
  return status;
}

json::object pending_status(const json::value& pod, std::string_view reason,
                            std::string_view message, std::string_view now) {
  json::object status;
  std::string unready = unready_message(pod);
  status["phase"] = "Pending";
  status["conditions"] =
      conditions(pod, {condition(pod, "Initialized", true, "", "", now),
                       condition(pod, "Ready", false, "ContainersNotReady", unready, now),
                       condition(pod, "ContainersReady", false, "ContainersNotReady", unready, now),
                       condition(pod, "PodScheduled", true, "", "", now)});
  status["hostIP"] = "127.0.0.1";
  json::array containers;
  if (const auto* cs = arr(pod, "/spec/containers")) {
    for (const auto& c : *cs) {
      json::object waiting{{"reason", reason}};
      if (!message.empty()) waiting["message"] = message;
      containers.emplace_back(json::object{{"name", str(c, "/name")},
                                           {"image", str(c, "/image")},
                                           {"imageID", ""},
                                           {"state", json::object{{"waiting", waiting}}},
                                           {"ready", false},
                                           {"started", false},
                                           {"restartCount", 0}});
    }
  }
  status["containerStatuses"] = std::move(containers);
  return status;
}

bool status_needs_update(const json::value& pod, const json::object& desired) {
  const json::value* current = find(pod, "/status");
  for (const auto& [k, v] : desired) {
    if (v.is_string() && v.get_string().empty()) continue;  // omitted by the API server
    const json::value* c =
        current != nullptr && current->is_object() ? current->get_object().if_contains(k) : nullptr;
    if (!contained(v, c)) return true;
  }
  return false;
}

}  // namespace kstack::nodesim
