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

boost::system::error_code& ec_ignored() {
  thread_local boost::system::error_code ec;
  return ec;
}

std::string str_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

OwnedObject for_create(const kube::ResourceType& type, json::value live) {
  auto* op = live.if_object();
  if (op == nullptr) throw std::runtime_error(fmt::format("{}: not an object", type.kind));
  auto& o = *op;
  auto* mdp = o["metadata"].if_object();
  if (mdp == nullptr) {
    throw std::runtime_error(fmt::format("{}: metadata is {}", type.kind, json::serialize(live)));
  }
  auto& md = *mdp;
  for (const char* f : {"uid", "resourceVersion", "creationTimestamp", "generation"}) md.erase(f);
  json::value status;
  if (auto* s = o.if_contains("status")) status = std::move(*s);
  o.erase("status");
  if (type.plural == kube::resources::kServices.plural) {
    auto& spec = o["spec"].as_object();  // a Service always has one
    // The API server allocates the ClusterIPs; "None" (headless) stays.
    if (spec.contains("clusterIP") && spec.at("clusterIP") != "None") spec.erase("clusterIP");
    if (!spec.contains("clusterIP")) spec.erase("clusterIPs");
    status = nullptr;  // {loadBalancer: {}}: what the server sets anyway
  }
  if (type.plural == kube::resources::kPods.plural) {
    // No controller-manager makes the token Secret that admission would mount; the pod
    // already lists its token volume as the real one does.
    if (auto* spec = o["spec"].if_object()) (*spec)["automountServiceAccountToken"] = false;
  }
  return {type, std::move(live), std::move(status)};
}

}  // namespace

tl::expected<std::vector<OwnedObject>, std::string> owned_objects(const json::value& stored_stack,
                                                                  const catalog::AppType& app,
                                                                  std::uint64_t& serial) try {
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
    const auto owner = str_at(o, "/metadata/ownerReferences/0/name");
    auto* volumes = o.find_pointer("/spec/volumes", ec_ignored());
    for (const auto& sts : live.stateful_sets) {
      if (str_at(sts, "/metadata/name") != owner || volumes == nullptr) continue;
      const auto* tv = sts.find_pointer("/spec/template/spec/volumes", ec_ignored());
      if (tv == nullptr || !tv->is_array() || !volumes->is_array()) break;
      for (const auto& v : tv->get_array()) {
        const auto name = str_at(v, "/name");
        bool present = false;
        for (const auto& x : volumes->get_array()) present = present || str_at(x, "/name") == name;
        if (!present) volumes->get_array().push_back(v);
      }
    }
    // A mount still without a volume (kstack's own volumes): an emptyDir, which the pod's
    // validation needs and which does not change the cached size much.
    auto* containers = o.find_pointer("/spec/containers", ec_ignored());
    if (volumes != nullptr && volumes->is_array() && containers != nullptr &&
        containers->is_array()) {
      for (const auto& c : containers->get_array()) {
        const auto* mounts = c.find_pointer("/volumeMounts", ec_ignored());
        if (mounts == nullptr || !mounts->is_array()) continue;
        for (const auto& m : mounts->get_array()) {
          const auto name = str_at(m, "/name");
          bool present = false;
          for (const auto& x : volumes->get_array())
            present = present || str_at(x, "/name") == name;
          if (!present) {
            volumes->get_array().push_back(
                json::object{{"name", name}, {"emptyDir", json::object{}}});
          }
        }
      }
    }
    out.push_back(for_create(kube::resources::kPods, std::move(o)));
  }
  return out;
} catch (const std::exception& e) {
  return tl::unexpected(std::string("owned objects: ") + e.what());
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
