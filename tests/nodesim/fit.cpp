// Scheduling predicates (see fit.h), a small subset of kube-scheduler's filter plugins:
// NodeSelector/NodeAffinity, NodeUnschedulable, TaintToleration, NodeResourcesFit,
// VolumeBinding for already-bound claims.
#include "tests/nodesim/fit.h"

#include <algorithm>

#include <fmt/format.h>

#include "tests/nodesim/json_util.h"
#include "tests/nodesim/quantity.h"

namespace kstack::nodesim {

namespace json = boost::json;

namespace {

Resources container_requests(const json::value& container) {
  Resources r;
  if (auto cpu = str(container, "/resources/requests/cpu"); !cpu.empty()) {
    r.milli_cpu = parse_quantity_milli(cpu).value_or(0);
  }
  if (auto mem = str(container, "/resources/requests/memory"); !mem.empty()) {
    r.memory = parse_quantity(mem).value_or(0);
  }
  return r;
}

bool match_expression(const json::value& expr, const std::string* value) {
  std::string op = str(expr, "/operator");
  std::vector<std::string> values;
  if (const auto* vs = arr(expr, "/values")) {
    for (const auto& v : *vs) {
      if (v.is_string()) values.emplace_back(v.get_string());
    }
  }
  auto in = [&] {
    return value != nullptr && std::find(values.begin(), values.end(), *value) != values.end();
  };
  if (op == "In") return in();
  if (op == "NotIn") return !in();
  if (op == "Exists") return value != nullptr;
  if (op == "DoesNotExist") return value == nullptr;
  if ((op == "Gt" || op == "Lt") && value != nullptr && values.size() == 1) {
    auto have = parse_quantity(*value);
    auto want = parse_quantity(values[0]);
    if (!have || !want) return false;
    return op == "Gt" ? *have > *want : *have < *want;
  }
  return false;
}

bool match_term(const json::value& term, const std::string& node_name, const Labels& labels) {
  const auto* exprs = arr(term, "/matchExpressions");
  const auto* fields = arr(term, "/matchFields");
  if ((exprs == nullptr || exprs->empty()) && (fields == nullptr || fields->empty())) return false;
  if (exprs != nullptr) {
    for (const auto& e : *exprs) {
      auto it = labels.find(str(e, "/key"));
      if (!match_expression(e, it == labels.end() ? nullptr : &it->second)) return false;
    }
  }
  if (fields != nullptr) {
    for (const auto& f : *fields) {
      if (str(f, "/key") != "metadata.name") return false;
      if (!match_expression(f, &node_name)) return false;
    }
  }
  return true;
}

}  // namespace

Resources pod_requests(const json::value& pod) {
  Resources sum;
  if (const auto* cs = arr(pod, "/spec/containers")) {
    for (const auto& c : *cs) sum += container_requests(c);
  }
  if (const auto* ics = arr(pod, "/spec/initContainers")) {
    for (const auto& c : *ics) {
      Resources r = container_requests(c);
      sum.milli_cpu = std::max(sum.milli_cpu, r.milli_cpu);
      sum.memory = std::max(sum.memory, r.memory);
    }
  }
  if (auto cpu = str(pod, "/spec/overhead/cpu"); !cpu.empty()) {
    sum.milli_cpu += parse_quantity_milli(cpu).value_or(0);
  }
  if (auto mem = str(pod, "/spec/overhead/memory"); !mem.empty()) {
    sum.memory += parse_quantity(mem).value_or(0);
  }
  return sum;
}

bool match_node_selector_terms(const json::value& terms, const std::string& node_name,
                               const Labels& labels) {
  const auto* list = terms.if_array();
  if (list == nullptr) return false;
  return std::any_of(list->begin(), list->end(),
                     [&](const json::value& t) { return match_term(t, node_name, labels); });
}

std::vector<std::string> claim_names(const json::value& pod) {
  std::vector<std::string> out;
  if (const auto* vols = arr(pod, "/spec/volumes")) {
    for (const auto& v : *vols) {
      if (auto claim = str(v, "/persistentVolumeClaim/claimName"); !claim.empty()) {
        out.push_back(std::move(claim));
      }
    }
  }
  return out;
}

bool pv_allows_node(const json::value& pv, const std::string& node_name, const Labels& labels) {
  const auto* terms = find(pv, "/spec/nodeAffinity/required/nodeSelectorTerms");
  if (terms == nullptr) return true;
  return match_node_selector_terms(*terms, node_name, labels);
}

bool pv_allows_node(const json::value& pv, const NodeInfo& node) {
  return pv_allows_node(pv, node.name, node.labels);
}

bool pod_terminated(const json::value& pod) {
  auto phase = str(pod, "/status/phase");
  return phase == "Succeeded" || phase == "Failed";
}

std::vector<Taint> node_taints(const json::value& node) {
  std::vector<Taint> out;
  if (const auto* taints = arr(node, "/spec/taints")) {
    for (const auto& t : *taints) {
      out.push_back({str(t, "/key"), str(t, "/value"), str(t, "/effect")});
    }
  }
  return out;
}

bool tolerates(const json::value& pod, const Taint& taint) {
  const auto* tolerations = arr(pod, "/spec/tolerations");
  if (tolerations == nullptr) return false;
  return std::any_of(tolerations->begin(), tolerations->end(), [&](const json::value& t) {
    auto effect = str(t, "/effect");
    if (!effect.empty() && effect != taint.effect) return false;
    auto key = str(t, "/key");
    if (!key.empty() && key != taint.key) return false;
    auto op = str(t, "/operator");
    if (op.empty() || op == "Equal") return str(t, "/value") == taint.value;
    return op == "Exists";
  });
}

FitResult check_fit(const json::value& pod, const FitInput& in) {
  using Kind = FitResult::Kind;
  // The Node's labels as they are now (kubectl label node), else those it registered with.
  const Labels labels =
      in.node_object ? string_map(*in.node_object, "/metadata/labels") : in.node.labels;
  if (in.node_object) {
    // NodeUnschedulable: a cordoned node takes only pods that tolerate its taint.
    if (flag(*in.node_object, "/spec/unschedulable") &&
        !tolerates(pod, {kTaintUnschedulable, "", "NoSchedule"})) {
      return {Kind::kDoesNotFit, "node is unschedulable (cordoned)"};
    }
    // TaintToleration: every NoSchedule and NoExecute taint must be tolerated
    // (PreferNoSchedule only weighs in scoring).
    for (const auto& taint : node_taints(*in.node_object)) {
      if ((taint.effect == "NoSchedule" || taint.effect == "NoExecute") && !tolerates(pod, taint)) {
        return {Kind::kDoesNotFit, fmt::format("node has taint {{{}: {}}} ({}) that the pod "
                                               "does not tolerate",
                                               taint.key, taint.value, taint.effect)};
      }
    }
  }
  for (const auto& [k, v] : string_map(pod, "/spec/nodeSelector")) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) {
      return {Kind::kDoesNotFit, fmt::format("node does not match nodeSelector {}={}", k, v)};
    }
  }
  if (const auto* terms =
          find(pod,
               "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
               "nodeSelectorTerms")) {
    if (!match_node_selector_terms(*terms, in.node.name, labels)) {
      return {Kind::kDoesNotFit, "node does not match the pod's required node affinity"};
    }
  }
  if (in.pods_used + 1 > in.node.max_pods) {
    return {Kind::kDoesNotFit, fmt::format("too many pods ({} allowed)", in.node.max_pods)};
  }
  Resources want = pod_requests(pod);
  if (in.used.milli_cpu + want.milli_cpu > in.node.allocatable.milli_cpu) {
    return {Kind::kDoesNotFit,
            fmt::format("insufficient cpu: {}m requested, {}m of {}m in use", want.milli_cpu,
                        in.used.milli_cpu, in.node.allocatable.milli_cpu)};
  }
  if (in.used.memory + want.memory > in.node.allocatable.memory) {
    return {Kind::kDoesNotFit,
            fmt::format("insufficient memory: {} requested, {} of {} in use", want.memory,
                        in.used.memory, in.node.allocatable.memory)};
  }
  std::string ns = str(pod, "/metadata/namespace");
  for (const auto& claim : claim_names(pod)) {
    auto pvc = in.pvc ? in.pvc(informer::object_key(ns, claim)) : nullptr;
    if (!pvc) {
      return {Kind::kWaitForVolumes, fmt::format("persistentvolumeclaim \"{}\" not found", claim)};
    }
    if (find(*pvc, "/metadata/deletionTimestamp") != nullptr) {
      return {Kind::kWaitForVolumes,
              fmt::format("persistentvolumeclaim \"{}\" is being deleted", claim)};
    }
    std::string volume = str(*pvc, "/spec/volumeName");
    if (volume.empty() || str(*pvc, "/status/phase") != "Bound") {
      return {Kind::kWaitForVolumes,
              fmt::format("pod has unbound immediate PersistentVolumeClaims (\"{}\")", claim)};
    }
    auto pv = in.pv ? in.pv(volume) : nullptr;
    if (!pv) {
      return {Kind::kWaitForVolumes, fmt::format("persistentvolume \"{}\" not found", volume)};
    }
    if (!pv_allows_node(*pv, in.node.name, labels)) {
      return {Kind::kDoesNotFit,
              fmt::format("volume {} of claim \"{}\" has a node affinity conflict", volume, claim)};
    }
  }
  return {};
}

}  // namespace kstack::nodesim
