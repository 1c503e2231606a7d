#include "bench/owned_objects.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "bench/reconciler/live_objects.h"
#include "catalog/parse.h"
#include "reconciler/desired_state.h"

namespace kstack::bench {
namespace json = boost::json;

namespace {

OwnedObject for_create(const kube::ResourceType& type, json::value live) {
  auto& o = live.as_object();
  auto& md = o["metadata"].as_object();
  for (const char* f : {"uid", "resourceVersion", "creationTimestamp", "generation"}) md.erase(f);
  json::value status;
  if (auto* s = o.if_contains("status")) status = std::move(*s);
  o.erase("status");
  if (type.plural == kube::resources::kServices.plural) {
    auto& spec = o["spec"].as_object();
    // The API server allocates the ClusterIPs; "None" (headless) stays.
    if (spec.contains("clusterIP") && spec.at("clusterIP") != "None") spec.erase("clusterIP");
    if (!spec.contains("clusterIP")) spec.erase("clusterIPs");
    status = nullptr;  // {loadBalancer: {}}: what the server sets anyway
  }
  if (type.plural == kube::resources::kPods.plural) {
    // No controller-manager makes the token Secret that admission would mount; the pod
    // already lists its token volume as the real one does.
    o["spec"].as_object()["automountServiceAccountToken"] = false;
  }
  return {type, std::move(live), std::move(status)};
}

}  // namespace

tl::expected<std::vector<OwnedObject>, std::string> owned_objects(const json::value& stored_stack,
                                                                  const catalog::AppType& app,
                                                                  std::uint64_t& serial) {
  catalog::FieldErrors errors;
  const auto stack = catalog::decode_stack(stored_stack, errors);
  auto desired = reconciler::desired_state(stack, app, nullptr);
  if (!desired) return tl::unexpected("desired_state: " + desired.error().to_string());
  auto live = live_objects(stack, app, *desired, serial);
  std::vector<OwnedObject> out;
  for (auto& o : live.stateful_sets) {
    out.push_back(for_create(kube::resources::kStatefulSets, std::move(o)));
  }
  for (auto& o : live.services) out.push_back(for_create(kube::resources::kServices, std::move(o)));
  for (auto& o : live.pvcs) {
    out.push_back(for_create(kube::resources::kPersistentVolumeClaims, std::move(o)));
  }
  for (auto& o : live.pods) {
    // live_objects lists the claim and token volumes only: add the template's (the
    // StatefulSet controller copies them), which the containers mount.
    const auto& owner = o.at("metadata").at("ownerReferences").at(0).at("name");
    for (const auto& sts : live.stateful_sets) {
      if (sts.at("metadata").at("name") != owner) continue;
      const auto* tv = sts.at("spec").at("template").at("spec").as_object().if_contains("volumes");
      if (tv == nullptr) break;
      auto& volumes = o.at("spec").as_object()["volumes"].as_array();
      for (const auto& v : tv->as_array()) {
        const bool present = std::any_of(volumes.begin(), volumes.end(), [&](const auto& x) {
          return x.at("name") == v.at("name");
        });
        if (!present) volumes.push_back(v);
      }
    }
    out.push_back(for_create(kube::resources::kPods, std::move(o)));
  }
  return out;
}

tl::expected<void, std::string> create_owned(kube::Client& client,
                                             const std::vector<OwnedObject>& objects, int threads) {
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::string first_error;
  auto fail = [&](const OwnedObject& c, const char* what, const kube::Error& e) {
    std::lock_guard lock(mu);
    if (first_error.empty()) {
      first_error = fmt::format("{} {} {}: {}", what, c.type.kind,
                                c.object.at("metadata").at("name").as_string(), e.to_string());
    }
  };
  auto work = [&] {
    for (std::size_t i = next++; i < objects.size(); i = next++) {
      const auto& c = objects[i];
      const auto ns = c.object.at("metadata").at("namespace").as_string();
      auto r = client.create(c.type, ns, c.object);
      if (!r) return fail(c, "create", r.error());
      if (c.status.is_null()) continue;
      r->as_object()["status"] = c.status;
      if (auto s = client.update_status(c.type, ns, *r); !s) return fail(c, "status", s.error());
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  if (!first_error.empty()) return tl::unexpected(first_error);
  return {};
}

tl::expected<void, std::string> create_default_service_account(kube::Client& client,
                                                               const std::string& ns) {
  json::value sa = {{"apiVersion", "v1"},
                    {"kind", "ServiceAccount"},
                    {"metadata", {{"name", "default"}, {"namespace", ns}}}};
  auto r = client.create(kube::resources::kServiceAccounts, ns, sa);
  if (!r && !r.error().is(kube::ErrorKind::kAlreadyExists)) {
    return tl::unexpected("create ServiceAccount: " + r.error().to_string());
  }
  return {};
}

}  // namespace kstack::bench
