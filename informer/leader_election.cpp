#include "informer/leader_election.h"

#include <cmath>
#include <cstdlib>
#include <random>

#include <boost/json.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "informer/backoff.h"

namespace kstack::informer {
namespace json = boost::json;

namespace {

// metav1.MicroTime: RFC 3339 with microseconds, UTC.
std::string micro_time_now() {
  const auto now = std::chrono::system_clock::now();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(us.count() / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z", tm, us.count() % 1'000'000);
}

std::string spec_string(const json::value& lease, std::string_view field) {
  const auto* o = lease.if_object();
  const auto* spec = o ? o->if_contains("spec") : nullptr;
  const auto* v = spec && spec->is_object() ? spec->get_object().if_contains(field) : nullptr;
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::int64_t spec_int(const json::value& lease, std::string_view field) {
  const auto* o = lease.if_object();
  const auto* spec = o ? o->if_contains("spec") : nullptr;
  const auto* v = spec && spec->is_object() ? spec->get_object().if_contains(field) : nullptr;
  return v && v->is_int64() ? v->get_int64() : 0;
}

}  // namespace

std::string default_identity() {
  std::string base;
  if (const char* pod = std::getenv("POD_NAME");
      pod != nullptr && *pod != '\0') {  // NOLINT(concurrency-mt-unsafe): read once at start-up
    base = pod;
  } else {
    char host[256] = {};
    base = ::gethostname(host, sizeof host - 1) == 0 ? host : "kstack";
  }
  std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}_{:08x}", base, static_cast<std::uint32_t>(rng()));
}

LeaderElector::LeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionOptions options,
                             LeaderCallbacks callbacks)
    : client_(std::move(client)), options_(std::move(options)), callbacks_(std::move(callbacks)) {
  if (options_.identity.empty()) options_.identity = default_identity();
  // A renewal that hangs must not keep us leading past renew_deadline: give the elector its
  // own client whose requests time out well within it.
  kube::Config config = client_->config();
  // Stepping down happens at most one attempt (a GET and a PUT) after renew_deadline; with a
  // quarter of the margin between renew_deadline and lease_duration per request, that is still
  // before the lease can expire for others.
  config.request_timeout = std::max<std::chrono::milliseconds>(
      std::chrono::milliseconds(100), (options_.lease_duration - options_.renew_deadline) / 4);
  if (auto own = kube::Client::create(std::move(config))) client_ = std::move(*own);
}

std::string LeaderElector::observed_holder() const {
  std::lock_guard lock(mu_);
  return observed_holder_;
}

void LeaderElector::observe(const json::value& lease) {
  std::string holder = spec_string(lease, "holderIdentity");
  std::string renew = spec_string(lease, "renewTime");
  bool new_leader = false;
  {
    std::lock_guard lock(mu_);
    if (holder != observed_holder_ || renew != observed_renew_ || observed_.is_null()) {
      new_leader = holder != observed_holder_ && !holder.empty();
      observed_holder_ = holder;
      observed_renew_ = std::move(renew);
      observed_at_ = std::chrono::steady_clock::now();
    }
    observed_ = lease;
  }
  if (new_leader && callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
}

LeaderElector::Attempt LeaderElector::try_acquire_or_renew() {
  const auto& leases = kube::resources::kLeases;
  const std::string now = micro_time_now();
  const auto duration_s = static_cast<std::int64_t>(
      std::ceil(std::chrono::duration<double>(options_.lease_duration).count()));

  auto current = client_->get(leases, options_.lease_namespace, options_.lease_name);
  if (!current) {
    if (!current.error().is(kube::ErrorKind::kNotFound)) {
      spdlog::warn("leader election: get lease {}/{}: {}", options_.lease_namespace,
                   options_.lease_name, current.error().to_string());
      return Attempt::kFailed;
    }
    json::value lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", options_.identity},
          {"leaseDurationSeconds", duration_s},
          {"acquireTime", now},
          {"renewTime", now},
          {"leaseTransitions", 0}}}};
    auto created = client_->create(leases, options_.lease_namespace, lease);
    if (!created) {
      // AlreadyExists: another candidate was faster; it holds the lease now.
      return created.error().is(kube::ErrorKind::kAlreadyExists) ? Attempt::kHeldByOther
                                                                 : Attempt::kFailed;
    }
    observe(*created);
    return Attempt::kAcquired;
  }

  if (!current->is_object()) {
    // A 200 that is no object (a broken proxy): nothing to renew; try again next period.
    spdlog::warn("leader election: get lease {}/{}: the answer is {}, not a Lease object",
                 options_.lease_namespace, options_.lease_name, json::to_string(current->kind()));
    return Attempt::kFailed;
  }
  observe(*current);
  const std::string holder = spec_string(*current, "holderIdentity");
  const bool mine = holder == options_.identity;
  if (!mine && !holder.empty()) {
    std::lock_guard lock(mu_);
    const auto held_for = std::chrono::seconds(spec_int(*current, "leaseDurationSeconds"));
    const auto expiry = observed_at_ + std::max<std::chrono::milliseconds>(held_for, {});
    if (std::chrono::steady_clock::now() < expiry) return Attempt::kHeldByOther;
  }

  json::value lease = *current;
  auto& spec = lease.get_object()["spec"];  // an object: checked above
  if (!spec.is_object()) spec = json::object{};
  auto& s = spec.get_object();
  if (!mine) {
    s["acquireTime"] = now;
    s["leaseTransitions"] = spec_int(*current, "leaseTransitions") + 1;
  }
  s["holderIdentity"] = options_.identity;
  s["leaseDurationSeconds"] = duration_s;
  s["renewTime"] = now;
  // A PUT with the resourceVersion we read: if anyone wrote in between we get a Conflict.
  auto updated = client_->update(leases, options_.lease_namespace, lease);
  if (!updated) {
    if (updated.error().is(kube::ErrorKind::kConflict)) return Attempt::kHeldByOther;
    spdlog::warn("leader election: update lease {}/{}: {}", options_.lease_namespace,
                 options_.lease_name, updated.error().to_string());
    return Attempt::kFailed;
  }
  observe(*updated);
  return Attempt::kAcquired;
}

void LeaderElector::wait_for_change(std::chrono::milliseconds max_wait,
                                    const kube::CancelToken& cancel) {
  // Watch the Lease for at most max_wait: a release or a lost holder wakes us at once.
  std::string rv;
  {
    std::lock_guard lock(mu_);
    if (const auto* o = observed_.if_object()) {
      if (const auto* md = o->if_contains("metadata"); md && md->is_object()) {
        if (const auto* v = md->get_object().if_contains("resourceVersion"); v && v->is_string()) {
          rv = std::string(v->get_string());
        }
      }
    }
  }
  if (rv.empty()) {
    sleep_for(max_wait, cancel);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  kube::WatchOptions wo;
  wo.field_selector = "metadata.name=" + options_.lease_name;
  wo.resource_version = rv;
  wo.allow_bookmarks = false;
  wo.timeout_seconds =
      std::max(1, static_cast<int>(std::ceil(std::chrono::duration<double>(max_wait).count())));
  auto r = client_->watch(
      kube::resources::kLeases, options_.lease_namespace, wo,
      [&](kube::WatchEvent&& ev) {
        if (ev.type == kube::WatchEvent::Type::kDeleted) return false;
        observe(ev.object);
        return spec_string(ev.object, "holderIdentity") != "" &&
               spec_string(ev.object, "holderIdentity") != options_.identity;
      },
      cancel);
  if (!r && !cancel.cancelled()) {
    // Watch refused (e.g. Gone): fall back to waiting out the remainder.
    const auto spent = std::chrono::steady_clock::now() - start;
    if (spent < max_wait) {
      sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(max_wait - spent), cancel);
    }
  }
}

void LeaderElector::lead(const kube::CancelToken& cancel) {
  leader_ = true;
  spdlog::info("leader election: {} leads {}/{}", options_.identity, options_.lease_namespace,
               options_.lease_name);
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();
  auto last_renew = std::chrono::steady_clock::now();
  while (!cancel.cancelled()) {
    // Not renewed within renew_deadline: step down before the lease (renew_deadline <
    // lease_duration) can be taken by another candidate.
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        last_renew + options_.renew_deadline - std::chrono::steady_clock::now());
    if (remaining <= std::chrono::milliseconds::zero()) {
      spdlog::warn("leader election: {} could not renew {}/{} within {} ms; stepping down",
                   options_.identity, options_.lease_namespace, options_.lease_name,
                   options_.renew_deadline.count());
      break;
    }
    if (!sleep_for(std::min(options_.retry_period, remaining), cancel)) break;
    const auto started = std::chrono::steady_clock::now();
    const auto attempt = try_acquire_or_renew();
    if (attempt == Attempt::kAcquired) {
      last_renew = started;  // the renewTime written is no later than this
      continue;
    }
    if (attempt == Attempt::kHeldByOther) {
      spdlog::warn("leader election: {} lost {}/{} to {}", options_.identity,
                   options_.lease_namespace, options_.lease_name, observed_holder());
      break;
    }
  }
  leader_ = false;
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

void LeaderElector::release() {
  json::value lease;
  {
    std::lock_guard lock(mu_);
    lease = observed_;
  }
  if (spec_string(lease, "holderIdentity") != options_.identity) return;
  // spec_string found spec.holderIdentity: the lease and its spec are objects.
  auto& s = lease.get_object()["spec"].get_object();
  s["holderIdentity"] = "";
  s["leaseDurationSeconds"] = 1;
  s["renewTime"] = micro_time_now();
  auto r = client_->update(kube::resources::kLeases, options_.lease_namespace, lease);
  if (!r) {
    spdlog::warn("leader election: release {}/{}: {}", options_.lease_namespace,
                 options_.lease_name, r.error().to_string());
  }
}

void LeaderElector::run(const kube::CancelToken& cancel) {
  while (!cancel.cancelled()) {
    const auto attempt = try_acquire_or_renew();
    if (attempt == Attempt::kAcquired) {
      lead(cancel);
      if (cancel.cancelled()) {
        if (options_.release_on_cancel) release();
        return;
      }
      continue;
    }
    wait_for_change(options_.retry_period, cancel);
  }
}

}  // namespace kstack::informer
