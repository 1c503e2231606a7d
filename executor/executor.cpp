// The executor's writes: server-side apply of owned objects (skipped when the cache already
// covers them), deletes with UID preconditions, status and finalizer updates, and Events.
#include "executor/executor.h"

#include <ctime>
#include <random>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "executor/drift.h"

namespace kstack::executor {
namespace json = boost::json;

const kube::ResourceType kCoreEvents{"", "v1", "events", "Event", true};

namespace {

// Past this many remembered events, expired ones are dropped on the next post.
constexpr std::size_t kDedupPruneThreshold = 4096;

template <class Value>
std::string_view string_at(const Value& object, std::string_view pointer) {
  std::error_code ec;
  const auto* v = object.find_pointer(pointer, ec);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "kstack";
  return host;
}

std::string random_hex16() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return fmt::format("{:016x}", engine());
}

// The same instant as metav1.MicroTime (RFC 3339 in UTC with microseconds, e.g.
// 2024-05-01T12:00:00.123456Z) and as metav1.Time (seconds only, 2024-05-01T12:00:00Z).
struct EventTimes {
  std::string micro;
  std::string seconds;
};
EventTimes event_times_now() {
  const auto now = std::chrono::system_clock::now();
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  auto base = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1,
                          tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return {fmt::format("{}.{:06}Z", base, micros % 1'000'000), base + "Z"};
}

// The longest prefix of `text` of at most `max_bytes` that does not split a UTF-8 sequence.
std::string_view truncate_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  // A continuation byte (10xxxxxx) at the cut means a sequence straddles it: back off to its
  // lead byte, which then starts the dropped part.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

}  // namespace

std::string_view to_string(Change change) {
  switch (change) {
    case Change::kNone:
      return "none";
    case Change::kCreated:
      return "created";
    case Change::kUpdated:
      return "updated";
    case Change::kDeleted:
      return "deleted";
  }
  return "unknown";
}

Executor::Executor(std::shared_ptr<kube::Client> client, ExecutorOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  if (options_.reporting_instance.empty()) options_.reporting_instance = host_name();
}

kube::Result<Change> Executor::apply(const kube::ResourceType& type, const json::value& desired,
                                     const informer::PackedValue* live, json::value* result) {
  if (live != nullptr && covers(*live, desired)) return Change::kNone;
  if (live != nullptr) {
    spdlog::debug("executor: {} {}/{} drifted at {}", type.kind,
                  string_at(desired, "/metadata/namespace"), string_at(desired, "/metadata/name"),
                  first_difference(*live, desired));
  }
  auto applied = force_apply(type, desired);
  if (!applied && applied.error().kind == kube::ErrorKind::kInvalid && live != nullptr) {
    // E.g. a port kubectl edited clashes by name with the one kstack applies back: replace
    // the list first, then apply again.
    if (auto replaced = replace_lists(type, live->to_value(), desired); replaced) {
      applied = force_apply(type, desired);
    }
  }
  if (!applied) return tl::unexpected(std::move(applied.error()));
  if (!covers(*applied, desired)) {
    // Apply kept list entries other managers own (an env var added by kubectl edit).
    auto replaced = replace_lists(type, *applied, desired);
    if (!replaced) return tl::unexpected(std::move(replaced.error()));
    applied = std::move(replaced);
  }
  if (result != nullptr) *result = std::move(*applied);
  return live == nullptr ? Change::kCreated : Change::kUpdated;
}

kube::Result<json::value> Executor::replace_lists(const kube::ResourceType& type,
                                                  const json::value& base,
                                                  const json::value& desired) {
  // One JSON patch, guarded by the resourceVersion it was computed from, that replaces every
  // list (up to a bound) holding a difference with kstack's version of it.
  json::value current = base;
  json::array ops;
  ops.push_back(json::object{{"op", "test"},
                             {"path", "/metadata/resourceVersion"},
                             {"value", string_at(base, "/metadata/resourceVersion")}});
  for (int i = 0; i < 16; ++i) {
    const auto list = differing_list(current, desired);
    if (!list || list->empty()) break;
    boost::system::error_code ec;
    const auto* want = desired.find_pointer(*list, ec);
    auto* have = current.find_pointer(*list, ec);
    if (want == nullptr || have == nullptr) break;
    ops.push_back(json::object{{"op", "replace"}, {"path", *list}, {"value", *want}});
    *have = *want;
  }
  const auto ns = string_at(desired, "/metadata/namespace");
  const auto name = string_at(desired, "/metadata/name");
  if (ops.size() == 1) {
    return kube::make_error(kube::ErrorKind::kInvalid,
                            fmt::format("{} {}/{}: cannot restore {} with server-side apply",
                                        type.kind, ns, name, first_difference(base, desired)));
  }
  kube::PatchOptions options;
  options.field_manager = options_.field_manager;
  {
    std::lock_guard lock(mu_);
    ++applies_;
  }
  spdlog::debug("executor: {} {}/{}: replacing {} list(s) other managers changed", type.kind, ns,
                name, ops.size() - 1);
  return client_->patch(type, ns, name, kube::PatchType::kJson, json::serialize(ops), options);
}

kube::Result<json::value> Executor::force_apply(const kube::ResourceType& type,
                                                const json::value& desired) {
  const auto ns = string_at(desired, "/metadata/namespace");
  const auto name = string_at(desired, "/metadata/name");
  if (name.empty()) {
    return kube::make_error(kube::ErrorKind::kInvalidArgument,
                            fmt::format("apply {}: the object has no metadata.name", type.kind));
  }
  kube::PatchOptions options;
  options.field_manager = options_.field_manager;
  options.force = true;
  auto applied =
      client_->patch(type, ns, name, kube::PatchType::kApply, json::serialize(desired), options);
  {
    std::lock_guard lock(mu_);
    ++applies_;
  }
  if (!applied) {
    spdlog::debug("executor: apply {} {}/{} failed: {}", type.kind, ns, name,
                  applied.error().to_string());
  }
  return applied;
}

kube::Result<Change> Executor::remove(const kube::ResourceType& type, std::string_view ns,
                                      std::string_view name, std::string_view uid,
                                      std::string_view propagation_policy,
                                      std::optional<std::int64_t> grace_period_seconds) {
  kube::DeleteOptions options;
  options.propagation_policy = std::string(propagation_policy);
  options.grace_period_seconds = grace_period_seconds;
  if (!uid.empty()) options.precondition_uid = std::string(uid);
  auto removed = client_->remove(type, ns, name, options);
  if (!removed) {
    if (removed.error().is(kube::ErrorKind::kNotFound)) return Change::kNone;
    return tl::unexpected(std::move(removed.error()));
  }
  return Change::kDeleted;
}

kube::Result<json::value> Executor::update_status(const kube::ResourceType& type,
                                                  const json::value& object) {
  return client_->update_status(type, string_at(object, "/metadata/namespace"), object);
}

kube::Result<json::value> Executor::set_finalizers(const kube::ResourceType& type,
                                                   std::string_view ns, std::string_view name,
                                                   std::string_view resource_version,
                                                   const std::vector<std::string>& finalizers) {
  json::array list;
  for (const auto& f : finalizers) list.emplace_back(f);
  // A merge patch replaces arrays whole: `[]` clears the list. The resourceVersion makes the
  // server refuse the patch (409) when the object changed since it was read.
  const json::value body = {
      {"metadata", {{"resourceVersion", resource_version}, {"finalizers", std::move(list)}}}};
  kube::PatchOptions options;
  options.field_manager = options_.field_manager;
  return client_->patch(type, ns, name, kube::PatchType::kMerge, json::serialize(body), options);
}

void Executor::event(const informer::PackedValue& regarding, std::string_view type,
                     std::string_view reason, std::string_view action, std::string_view note) {
  const auto uid = string_at(regarding, "/metadata/uid");
  const auto name = string_at(regarding, "/metadata/name");
  auto ns = string_at(regarding, "/metadata/namespace");
  if (ns.empty()) ns = "default";  // events about cluster-scoped objects live in "default"

  const std::string key = fmt::format("{}|{}|{}", uid, reason, note);
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    if (!uid.empty() && terminating_uids_.contains(std::string(uid))) return;
    if (recent_events_.size() > kDedupPruneThreshold) {
      std::erase_if(recent_events_, [&](const auto& entry) {
        return now - entry.second >= options_.event_dedup_window;
      });
    }
    auto [it, inserted] = recent_events_.try_emplace(key, now);
    if (!inserted) {
      if (now - it->second < options_.event_dedup_window) return;
      it->second = now;
    }
  }

  json::object ref{{"apiVersion", string_at(regarding, "/apiVersion")},
                   {"kind", string_at(regarding, "/kind")},
                   {"name", name}};
  if (const auto rns = string_at(regarding, "/metadata/namespace"); !rns.empty()) {
    ref["namespace"] = rns;
  }
  if (!uid.empty()) ref["uid"] = uid;
  if (const auto rv = string_at(regarding, "/metadata/resourceVersion"); !rv.empty()) {
    ref["resourceVersion"] = rv;
  }
  // Posted through core/v1, not events.k8s.io/v1: the latter refuses deprecatedFirstTimestamp,
  // deprecatedLastTimestamp and deprecatedCount on create ("needs to be unset"), and without
  // them core/v1 readers such as `kubectl describe` (1.20 sorts by lastTimestamp) list kstack's
  // Events undated and out of order. core/v1 takes both the new fields (eventTime, action,
  // reportingComponent/Instance) and the old ones; events.k8s.io/v1 readers see the same Event
  // with note = message and regarding = involvedObject. Each post is a new Event (duplicates
  // are dropped above, never counted up), so count is 1 and first = last = now.
  const auto times = event_times_now();
  const json::value body = {
      {"apiVersion", kCoreEvents.api_version()},
      {"kind", kCoreEvents.kind},
      {"metadata", {{"name", fmt::format("{}.{}", name, random_hex16())}, {"namespace", ns}}},
      {"eventTime", times.micro},
      {"firstTimestamp", times.seconds},
      {"lastTimestamp", times.seconds},
      {"count", 1},
      {"reportingComponent", kReportingController},
      {"reportingInstance", options_.reporting_instance},
      {"source", {{"component", kReportingController}, {"host", options_.reporting_instance}}},
      {"action", action},
      {"reason", reason},
      {"type", type},
      {"message", truncate_utf8(note, options_.max_note_bytes)},
      {"involvedObject", std::move(ref)}};

  auto posted = client_->create(kCoreEvents, ns, body);
  std::lock_guard lock(mu_);
  if (!posted && posted.error().namespace_terminating()) {
    // Its namespace is being deleted: no Event about this object can be posted any more.
    recent_events_.erase(key);
    if (terminating_uids_.size() >= kDedupPruneThreshold) terminating_uids_.clear();
    if (!uid.empty()) terminating_uids_.insert(std::string(uid));
    spdlog::info("executor: namespace {} is being deleted: no more Events about {} {}", ns,
                 string_at(regarding, "/kind"), name);
    return;
  }
  if (!posted) {
    // Forget it so that the next identical event is tried again.
    recent_events_.erase(key);
    spdlog::warn("executor: event {} on {} {}/{} not posted: {}", reason,
                 string_at(regarding, "/kind"), ns, name, posted.error().to_string());
    return;
  }
  ++events_posted_;
}

std::uint64_t Executor::applies() const {
  std::lock_guard lock(mu_);
  return applies_;
}

void Executor::events(const informer::PackedValue& regarding, std::string_view type,
                      std::string_view reason, std::string_view action,
                      const std::vector<std::string>& notes) {
  std::string joined;
  for (const auto& note : notes) {
    if (!joined.empty() && joined.size() + 2 + note.size() > options_.max_note_bytes) {
      event(regarding, type, reason, action, joined);
      joined.clear();
    }
    if (!joined.empty()) joined += "; ";
    joined += note;
  }
  if (!joined.empty()) event(regarding, type, reason, action, joined);
}

std::uint64_t Executor::events_posted() const {
  std::lock_guard lock(mu_);
  return events_posted_;
}

}  // namespace kstack::executor
