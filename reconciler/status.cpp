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

// Pods are read as the cache holds them (informer/packed.h).
using informer::PackedObject;
using informer::PackedValue;

const PackedObject* object_of(const PackedValue* v) {
  return v != nullptr ? v->if_object() : nullptr;
}

const PackedValue* field(const PackedObject* o, std::string_view key) {
  return o != nullptr ? o->if_contains(key) : nullptr;
}

std::string_view view_of(const PackedValue* v) {
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

std::string str(const PackedValue* v) { return std::string(view_of(v)); }

}  // namespace

PodView view_pod(const informer::PackedValue* pod) {
  PodView view;
  const auto* p = object_of(pod);
  if (p == nullptr) {
    view.container_state = "absent";
    return view;
  }
  view.exists = true;
  // Direct lookups rather than JSON pointers: this runs for every member in every pass.
  const auto* md = object_of(field(p, "metadata"));
  const auto* spec = object_of(field(p, "spec"));
  const auto* status = object_of(field(p, "status"));
  view.uid = str(field(md, "uid"));
  if (const auto* l = object_of(field(md, "labels"))) view.revision = str(field(l, kLabelRevision));
  if (const auto* a = object_of(field(md, "annotations"))) {
    view.app = str(field(a, kAnnotationApp));
    view.package = str(field(a, kAnnotationSetupPackage));
  }
  const auto* deletion = field(md, "deletionTimestamp");
  view.deleting = deletion != nullptr && !deletion->is_null();
  bool ready = false;
  if (const auto* conds = field(status, "conditions"); conds != nullptr && conds->is_array()) {
    for (const auto& c : conds->get_array()) {
      const auto* co = c.if_object();
      if (co == nullptr) continue;
      const auto type = view_of(field(co, "type"));
      const auto st = view_of(field(co, "status"));
      if (type == "PodScheduled") {
        view.scheduled = st == "True";
        if (st == "False") {
          view.unschedulable = true;
          view.scheduling_message = str(field(co, "message"));
        }
      } else if (type == "Ready") {
        ready = st == "True";
      }
    }
  }
  if (!view_of(field(spec, "nodeName")).empty()) view.scheduled = true;
  view.running_ready = ready && view_of(field(status, "phase")) == "Running" && !view.deleting;
  view.container_state = "waiting";
  if (const auto* cs = field(status, "containerStatuses"); cs != nullptr && cs->is_array()) {
    for (const auto& c : cs->get_array()) {
      const auto* co = c.if_object();
      if (co == nullptr || view_of(field(co, "name")) != kContainerName) continue;
      view.container_id = str(field(co, "containerID"));
      if (const auto* rc = field(co, "restartCount"); rc && rc->is_int64()) {
        view.restart_count = rc->get_int64();
      }
      if (const auto* st = object_of(field(co, "state"))) {
        for (std::string_view s : {"running", "waiting", "terminated"}) {
          if (st->contains(s)) view.container_state = std::string(s);
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
  // Field by field rather than serialising both: to_json is lossless, so the two agree (and
  // status_test pins that they do), and this runs once or twice in every pass.
  return a == b;
}

}  // namespace kstack::reconciler
