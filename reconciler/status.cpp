#include "reconciler/status.h"

#include <charconv>
#include <chrono>
#include <ctime>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/parse.h"
#include "reconciler/desired_state.h"

namespace kstack::reconciler {
namespace json = boost::json;

namespace {

const json::value* at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  return v.find_pointer(pointer, ec);
}

std::string str(const json::value* v) {
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

PodView view_pod(const json::value* pod) {
  PodView view;
  if (pod == nullptr || !pod->is_object()) {
    view.container_state = "absent";
    return view;
  }
  view.exists = true;
  view.uid = str(at(*pod, "/metadata/uid"));
  if (const auto* l = at(*pod, "/metadata/labels"); l != nullptr && l->is_object()) {
    view.revision = str(l->as_object().if_contains(kLabelRevision));
  }
  if (const auto* a = at(*pod, "/metadata/annotations"); a != nullptr && a->is_object()) {
    view.app = str(a->as_object().if_contains(kAnnotationApp));
    view.package = str(a->as_object().if_contains(kAnnotationSetupPackage));
  }
  view.deleting = at(*pod, "/metadata/deletionTimestamp") != nullptr &&
                  !at(*pod, "/metadata/deletionTimestamp")->is_null();
  bool ready = false;
  if (const auto* conds = at(*pod, "/status/conditions"); conds != nullptr && conds->is_array()) {
    for (const auto& c : conds->as_array()) {
      if (!c.is_object()) continue;
      const auto type = str(c.as_object().if_contains("type"));
      const auto status = str(c.as_object().if_contains("status"));
      if (type == "PodScheduled") {
        view.scheduled = status == "True";
        if (status == "False") {
          view.unschedulable = true;
          view.scheduling_message = str(c.as_object().if_contains("message"));
        }
      } else if (type == "Ready") {
        ready = status == "True";
      }
    }
  }
  if (!str(at(*pod, "/spec/nodeName")).empty()) view.scheduled = true;
  view.running_ready = ready && str(at(*pod, "/status/phase")) == "Running" && !view.deleting;
  view.container_state = "waiting";
  if (const auto* cs = at(*pod, "/status/containerStatuses"); cs != nullptr && cs->is_array()) {
    for (const auto& c : cs->as_array()) {
      if (!c.is_object() || str(c.as_object().if_contains("name")) != kContainerName) continue;
      view.container_id = str(c.as_object().if_contains("containerID"));
      if (const auto* rc = c.as_object().if_contains("restartCount"); rc && rc->is_int64()) {
        view.restart_count = rc->as_int64();
      }
      if (const auto* st = c.as_object().if_contains("state"); st && st->is_object()) {
        for (std::string_view s : {"running", "waiting", "terminated"}) {
          if (st->as_object().contains(s)) view.container_state = std::string(s);
        }
      }
    }
  }
  return view;
}

std::string_view member_state(const PodView& pod) {
  if (!pod.exists || pod.unschedulable || !pod.scheduled) return catalog::kMemberCreatePending;
  if (pod.running_ready) return catalog::kMemberReady;
  return catalog::kMemberCreating;
}

std::optional<std::int64_t> ordinal_of(std::string_view member_name) {
  const auto dash = member_name.rfind('-');
  if (dash == std::string_view::npos || dash + 1 >= member_name.size()) return std::nullopt;
  const auto digits = member_name.substr(dash + 1);
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value < 0) return std::nullopt;
  return value;
}

const catalog::Condition* find_condition(const std::vector<catalog::Condition>& conditions,
                                         std::string_view type) {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

void set_condition(std::vector<catalog::Condition>& conditions, std::string_view type,
                   std::string_view status, std::string_view reason, std::string_view message,
                   std::int64_t observed_generation, std::string_view now) {
  for (auto& c : conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = std::string(now);
    c.status = std::string(status);
    c.reason = std::string(reason);
    c.message = std::string(message);
    c.observed_generation = observed_generation;
    return;
  }
  catalog::Condition c;
  c.type = std::string(type);
  c.status = std::string(status);
  c.reason = std::string(reason);
  c.message = std::string(message);
  c.observed_generation = observed_generation;
  c.last_transition_time = std::string(now);
  conditions.push_back(std::move(c));
}

std::string rfc3339_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

bool same_status(const catalog::StackStatus& a, const catalog::StackStatus& b) {
  return catalog::to_json(a) == catalog::to_json(b);
}

}  // namespace kstack::reconciler
