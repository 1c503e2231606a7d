// One pass over a Stack: observe → plan → act (reconciler/plan.h, reconciler/act.h), and the
// mapping from watch events on other kinds to the Stacks they concern.
#include "reconciler/reconciler.h"

#include <random>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/defaults.h"
#include "catalog/names.h"
#include "catalog/parse.h"
#include "reconciler/act.h"
#include "reconciler/status.h"

namespace kstack::reconciler {
namespace json = boost::json;
using informer::WorkResult;

namespace {

// A plan asks for at most one claim round; past this, a plan that keeps asking is a bug, and the
// pass acts on it.
constexpr int kMaxFindingRounds = 8;

std::string str_at(const informer::PackedValue& v, std::string_view pointer) {
  std::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_string() ? std::string(p->as_string()) : std::string();
}

}  // namespace

Reconciler::Reconciler(Caches caches, executor::Executor& executor, ReconcilerOptions options,
                       SetupHooks setup)
    : caches_(caches),
      executor_(executor),
      options_(std::move(options)),
      catalog_(catalog::CatalogStores{caches.apptypes, caches.stacks, caches.configs,
                                      caches.storage_classes},
               catalog::CatalogOptions{options_.operator_namespace}),
      observer_(caches.owned),
      setup_(setup),
      pacer_(options_.status_progress_interval) {}

std::vector<std::string> Reconciler::stacks_for_owned(const informer::PackedValue& object) {
  const auto ns = str_at(object, "/metadata/namespace");
  std::error_code ec;
  if (const auto* refs = object.find_pointer("/metadata/ownerReferences", ec);
      refs && refs->is_array()) {
    for (const auto& r : refs->as_array()) {
      if (r.is_object() && str_at(r, "/kind") == catalog::kStackKind &&
          str_at(r, "/apiVersion").starts_with(catalog::kGroup)) {
        return {informer::object_key(ns, str_at(r, "/name"))};
      }
    }
  }
  const auto label = str_at(object, "/metadata/labels/kstack.io~1stack");
  if (!label.empty()) return {informer::object_key(ns, label)};
  return {};
}

std::vector<std::string> Reconciler::stacks_for_apptype(
    const informer::PackedValue& apptype) const {
  std::vector<std::string> keys;
  for (const auto& s : catalog_.stacks_using(str_at(apptype, "/metadata/namespace"),
                                             str_at(apptype, "/metadata/name"))) {
    keys.push_back(informer::object_key(*s));
  }
  return keys;
}

std::vector<std::string> Reconciler::all_stacks() const { return caches_.stacks->keys(); }

kube::LogFields Reconciler::pass_log_fields(std::string_view key) {
  // 64 random bits: unique enough to grep one pass out of days of logs, cheap to make.
  thread_local std::mt19937_64 engine{std::random_device{}()};
  kube::LogFields fields;
  const auto slash = key.find('/');
  fields.ns =
      std::string(slash == std::string_view::npos ? std::string_view{} : key.substr(0, slash));
  fields.stack = std::string(slash == std::string_view::npos ? key : key.substr(slash + 1));
  fields.reconcile_id = fmt::format("{:016x}", engine());
  return fields;
}

std::optional<Snapshot> Reconciler::observe(const std::string& key) const {
  Snapshot s;
  s.key = key;
  s.object = caches_.stacks->get(key);
  if (!s.object) return std::nullopt;  // gone: the garbage collector has the rest
  catalog::FieldErrors ignored;
  s.stack = catalog::decode_stack(s.object->to_value(), ignored);
  // Decoding is already the canonical form this pass writes: to_json(StackStatus) is lossless,
  // so a round trip through it would give the same value (status_test pins that). Moved, not
  // copied: plan() reads the status from old_status only.
  if (s.stack.status) {
    s.old_status = std::move(*s.stack.status);
    s.stack.status.reset();
  }
  if (!s.stack.metadata.deleting) {
    s.app = catalog_.find_app(s.stack);
    s.config = catalog_.config();
  }
  s.owned = observer_.observe(s.ns(), s.name());
  s.has_setup_runner = setup_.steps != nullptr;
  if (setup_.steps != nullptr) s.setup = setup_.steps->outcomes_of(key);
  if (setup_.notifier != nullptr) {
    s.has_notifier = true;
    s.notify_max_attempts = setup_.notifier->options().max_attempts;
    s.notify = setup_.notifier->outcomes_in(s.ns());
  }
  s.now = rfc3339_now();
  s.clock = NotifyOutcome::Clock::now();
  s.poll_interval = options_.poll_interval;
  s.pdb_type = options_.pdb_type ? &*options_.pdb_type : nullptr;
  return s;
}

void Reconciler::observe_claims(const Snapshot& snapshot, const std::vector<std::string>& names,
                                Findings& findings) const {
  for (const auto& name : names) {
    // The one live read of a pass: a member's pod exists but its claim is not in the cache
    // (deleted, or kstack's labels taken off it), and only the server can say which.
    auto got =
        executor_.client().get(kube::resources::kPersistentVolumeClaims, snapshot.ns(), name);
    findings.claims[name] = got ? informer::pack(*got) : informer::ObjectPtr{};
  }
}

WorkResult Reconciler::reconcile(const std::string& key) {
  std::optional<kube::LogScope> log_scope;
  if (const auto& current = kube::log_fields();
      current.reconcile_id.empty() || informer::object_key(current.ns, current.stack) != key) {
    log_scope.emplace(pass_log_fields(key));
  }
  const auto snapshot = observe(key);
  if (!snapshot) {
    terminating_.forget(key);
    if (setup_.steps != nullptr) setup_.steps->forget_stack(key);
    return WorkResult::success();
  }
  Findings findings;
  auto planned = plan(*snapshot, findings);
  for (int round = 0; !planned.is_final() && round < kMaxFindingRounds; ++round) {
    observe_claims(*snapshot, planned.claims_to_read, findings);
    planned = plan(*snapshot, findings);
  }
  if (!planned.is_final()) {
    spdlog::error("stack {}: the plan still asks for {} claims after {} rounds", key,
                  planned.claims_to_read.size(), kMaxFindingRounds);
  }
  Actuators actuators{executor_,
                      executor_,
                      setup_.notifier,
                      caches_.stacks,
                      caches_.owned,
                      setup_.steps,
                      options_.status_progress_interval.count() > 0 ? &pacer_ : nullptr,
                      &terminating_};
  return act(*snapshot, planned, actuators);
}

}  // namespace kstack::reconciler
