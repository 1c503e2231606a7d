// The storage role (see provisioner.h). Queue keys: "pvc:<namespace>/<name>", "pv:<name>".
#include "tests/nodesim/provisioner.h"

#include <algorithm>
#include <filesystem>

#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tests/nodesim/dom.h"
#include "tests/nodesim/json_util.h"
#include "tests/nodesim/sandbox.h"

namespace kstack::nodesim {

namespace json = boost::json;
namespace fs = std::filesystem;
using ObjectPtr = DomPtr;
using informer::WorkResult;

namespace {

constexpr std::string_view kClaimPrefix = "pvc:";
constexpr std::string_view kVolumePrefix = "pv:";

std::string claim_class(const json::value& pvc) {
  if (const auto* c = find(pvc, "/spec/storageClassName"); c != nullptr && c->is_string()) {
    return std::string(c->get_string());
  }
  return str(pvc, "/metadata/annotations/volume.beta.kubernetes.io~1storage-class");
}

}  // namespace

Provisioner::Provisioner(Context& ctx) : ctx_(ctx), queue_(queue_options("provisioner")) {}

Provisioner::~Provisioner() { stop(); }

kube::Result<void> Provisioner::ensure_storage_class() {
  const std::string& name = ctx_.options.storage_class;
  if (name.empty()) return {};
  auto existing = ctx_.client->get(resources::kStorageClasses, "", name);
  if (existing) {
    if (str(*existing, "/provisioner") != kProvisionerName) {
      spdlog::warn("StorageClass {} exists with provisioner {}; claims of it are not served", name,
                   str(*existing, "/provisioner"));
    }
    return {};
  }
  if (!existing.error().is(kube::ErrorKind::kNotFound)) return tl::unexpected(existing.error());
  json::value sc = {
      {"apiVersion", "storage.k8s.io/v1"},
      {"kind", "StorageClass"},
      {"metadata", {{"name", name}, {"annotations", {{kDefaultClassAnnotation, "true"}}}}},
      {"provisioner", kProvisionerName},
      {"reclaimPolicy", "Delete"},
      {"volumeBindingMode", "Immediate"}};
  auto created = ctx_.client->create(resources::kStorageClasses, "", sc);
  if (!created && !created.error().is(kube::ErrorKind::kAlreadyExists)) {
    return tl::unexpected(created.error());
  }
  spdlog::info("StorageClass {} (default, provisioner {}) ready", name, kProvisionerName);
  return {};
}

informer::EventHandler Provisioner::claim_handler() {
  auto add = [this](const ObjectPtr& o) {
    queue_.add(std::string(kClaimPrefix) + informer::object_key(*o));
  };
  DomEventHandler h;
  h.on_add = add;
  h.on_update = [add](const ObjectPtr&, const ObjectPtr& o) { add(o); };
  h.on_resync = add;
  return packed_handler(std::move(h));
}

informer::EventHandler Provisioner::volume_handler() {
  auto add = [this](const ObjectPtr& o) {
    queue_.add(std::string(kVolumePrefix) + informer::object_key(*o));
  };
  DomEventHandler h;
  h.on_add = add;
  h.on_update = [add](const ObjectPtr&, const ObjectPtr& o) { add(o); };
  h.on_resync = add;
  h.on_delete = [this](const ObjectPtr& o, bool) {
    {
      std::lock_guard lock(mu_);
      deleted_[informer::object_key(*o)] = o;
    }
    queue_.add(std::string(kVolumePrefix) + informer::object_key(*o));
  };
  return packed_handler(std::move(h));
}

informer::EventHandler Provisioner::pod_handler() {
  auto add = [this](const ObjectPtr& o) {
    if (str(*o, "/spec/nodeName") != ctx_.node.name) return;
    auto ns = str(*o, "/metadata/namespace");
    for (const auto& claim : claim_names(*o)) {
      queue_.add(std::string(kClaimPrefix) + informer::object_key(ns, claim));
    }
  };
  DomEventHandler h;
  h.on_add = add;
  h.on_update = [add](const ObjectPtr&, const ObjectPtr& o) { add(o); };
  return packed_handler(std::move(h));
}

informer::EventHandler Provisioner::node_handler() {
  auto all_claims = [this] {
    for (const auto& pvc : doms_of(ctx_.claims->store().list())) {
      if (claim_pending(*pvc)) queue_.add(std::string(kClaimPrefix) + informer::object_key(*pvc));
    }
  };
  DomEventHandler h;
  h.on_add = [all_claims](const ObjectPtr&) { all_claims(); };
  h.on_update = [all_claims](const ObjectPtr& old_node, const ObjectPtr& node) {
    if (node_ready(*old_node) != node_ready(*node)) all_claims();
  };
  h.on_delete = [all_claims](const ObjectPtr&, bool) { all_claims(); };
  return packed_handler(std::move(h));
}

void Provisioner::enqueue_all() {
  for (const auto& pvc : doms_of(ctx_.claims->store().list())) {
    queue_.add(std::string(kClaimPrefix) + informer::object_key(*pvc));
  }
  for (const auto& pv : doms_of(ctx_.volumes->store().list())) {
    queue_.add(std::string(kVolumePrefix) + informer::object_key(*pv));
  }
}

void Provisioner::start() {
  workers_ = std::make_unique<informer::Workers>(
      queue_, 1, [this](const std::string& key) { return reconcile(key); });
  enqueue_all();
}

void Provisioner::stop() {
  if (workers_) workers_->stop();
}

WorkResult Provisioner::reconcile(const std::string& key) {
  if (key.rfind(kClaimPrefix, 0) == 0) return reconcile_claim(key.substr(kClaimPrefix.size()));
  if (key.rfind(kVolumePrefix, 0) == 0) return reconcile_volume(key.substr(kVolumePrefix.size()));
  return WorkResult::success();
}

std::string Provisioner::claim_user_node(const std::string& ns, const std::string& claim) const {
  for (const auto& pod : doms_of(ctx_.pods->store().list())) {
    if (str(*pod, "/metadata/namespace") != ns) continue;
    auto node = str(*pod, "/spec/nodeName");
    if (node.empty() || pod_terminated(*pod)) continue;
    auto claims = claim_names(*pod);
    if (std::find(claims.begin(), claims.end(), claim) != claims.end()) return node;
  }
  return {};
}

bool Provisioner::ours(const json::value& pv) const {
  return str(pv, "/metadata/annotations/pv.kubernetes.io~1provisioned-by") == kProvisionerName &&
         str(pv, "/metadata/annotations/kstack.io~1nodesim-node") == ctx_.node.name;
}

void Provisioner::remove_volume_dir(const json::value& pv) {
  std::string path = str(pv, "/spec/local/path");
  if (path.empty()) return;
  if (auto r = remove_inside(ctx_.volumes_dir(), path); !r) {
    spdlog::warn("volume {}: {}", str(pv, "/metadata/name"), r.error());
  } else {
    spdlog::info("volume {}: removed {}", str(pv, "/metadata/name"), path);
  }
}

WorkResult Provisioner::reconcile_claim(const std::string& key) {
  ObjectPtr pvc = dom_of(ctx_.claims->store().get(key));
  if (!pvc || !str(*pvc, "/spec/volumeName").empty() || str(*pvc, "/status/phase") != "Pending" ||
      find(*pvc, "/metadata/deletionTimestamp") != nullptr) {
    return WorkResult::success();
  }
  const std::string ns = str(*pvc, "/metadata/namespace");
  const std::string name = str(*pvc, "/metadata/name");
  const std::string uid = str(*pvc, "/metadata/uid");
  const std::string class_name = claim_class(*pvc);
  ObjectPtr sc = class_name.empty() ? nullptr : dom_of(ctx_.classes->store().get(class_name));
  const bool served = sc && str(*sc, "/provisioner") == kProvisionerName;
  const std::string user_node = claim_user_node(ns, name);
  const std::string selected =
      str(*pvc, "/metadata/annotations/volume.kubernetes.io~1selected-node");
  if (!selected.empty() && selected != ctx_.node.name) return WorkResult::success();
  if (!user_node.empty() && user_node != ctx_.node.name) return WorkResult::success();
  if (!served && (user_node != ctx_.node.name || sc)) return WorkResult::success();
  if (str(*pvc, "/spec/volumeMode") == "Block") {
    spdlog::warn("claim {}: block volumes are not supported", key);
    return WorkResult::success();
  }
  if (ctx_.lost.load()) return WorkResult::success();
  const std::string pv_name = "pvc-" + uid;
  if (dom_of(ctx_.volumes->store().get(pv_name))) return WorkResult::success();  // binder's turn

  if (user_node.empty() && selected.empty()) {
    PlacementInput input{doms_of(ctx_.nodes->store().list()), doms_of(ctx_.claims->store().list()),
                         doms_of(ctx_.volumes->store().list()),
                         [this](const json::value& c) {
                           auto cls = dom_of(ctx_.classes->store().get(claim_class(c)));
                           return cls && str(*cls, "/provisioner") == kProvisionerName;
                         },
                         [this](const json::value& c) {
                           auto node = str(c,
                                           "/metadata/annotations/"
                                           "volume.kubernetes.io~1selected-node");
                           if (!node.empty()) return node;
                           return claim_user_node(str(c, "/metadata/namespace"),
                                                  str(c, "/metadata/name"));
                         }};
    if (placement_node(*pvc, input) != ctx_.node.name) {
      return WorkResult::requeue_after(kPlacementRecheck);  // another node's, unless it is lost
    }
  }

  const fs::path dir = ctx_.volumes_dir() / pv_name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return WorkResult::retry("create " + dir.string() + ": " + ec.message());
  fs::permissions(dir, fs::perms::all, ec);
  std::string capacity = str(*pvc, "/spec/resources/requests/storage");
  if (capacity.empty()) capacity = "1Gi";
  json::array modes;
  if (const auto* m = arr(*pvc, "/spec/accessModes"); m != nullptr && !m->empty()) {
    modes = *m;
  } else {
    modes.emplace_back("ReadWriteOnce");
  }
  std::string reclaim = sc ? str(*sc, "/reclaimPolicy") : std::string();
  if (reclaim.empty()) reclaim = "Delete";
  json::object expression{{"key", "kubernetes.io/hostname"},
                          {"operator", "In"},
                          {"values", json::array{json::value(ctx_.node.name)}}};
  json::object term{{"matchExpressions", json::array{expression}}};
  json::object affinity{{"required", json::object{{"nodeSelectorTerms", json::array{term}}}}};
  json::object claim_ref{{"apiVersion", "v1"},
                         {"kind", "PersistentVolumeClaim"},
                         {"namespace", ns},
                         {"name", name},
                         {"uid", uid}};
  json::object spec{{"capacity", json::object{{"storage", capacity}}},
                    {"accessModes", modes},
                    {"persistentVolumeReclaimPolicy", reclaim},
                    {"storageClassName", class_name},
                    {"volumeMode", "Filesystem"},
                    {"claimRef", claim_ref},
                    {"local", json::object{{"path", dir.string()}}},
                    {"nodeAffinity", affinity}};
  json::object metadata{{"name", pv_name},
                        {"labels", json::object{{kPvNodeAnnotation, ctx_.node.name}}},
                        {"annotations", json::object{{kProvisionedByAnnotation, kProvisionerName},
                                                     {kPvNodeAnnotation, ctx_.node.name}}}};
  json::value pv = json::object{
      {"apiVersion", "v1"}, {"kind", "PersistentVolume"}, {"metadata", metadata}, {"spec", spec}};
  auto created = ctx_.client->create(kube::resources::kPersistentVolumes, "", pv);
  if (!created) {
    if (created.error().is(kube::ErrorKind::kAlreadyExists)) {
      auto existing = ctx_.client->get(kube::resources::kPersistentVolumes, "", pv_name);
      if (existing && !ours(*existing)) (void)remove_inside(ctx_.volumes_dir(), dir);
      return WorkResult::success();  // another simulator provisioned it
    }
    (void)remove_inside(ctx_.volumes_dir(), dir);
    return WorkResult::retry("create volume " + pv_name + ": " + created.error().to_string());
  }
  spdlog::info("provisioned {} ({}, {}) for claim {} at {}", pv_name, capacity, reclaim, key,
               dir.string());
  return WorkResult::success();
}

WorkResult Provisioner::reconcile_volume(const std::string& name) {
  ObjectPtr pv = dom_of(ctx_.volumes->store().get(name));
  if (!pv) {
    ObjectPtr gone;
    {
      std::lock_guard lock(mu_);
      auto it = deleted_.find(name);
      if (it != deleted_.end()) {
        gone = it->second;
        deleted_.erase(it);
      }
    }
    if (gone && ours(*gone) && str(*gone, "/spec/persistentVolumeReclaimPolicy") == "Delete") {
      remove_volume_dir(*gone);
    }
    return WorkResult::success();
  }
  if (!ours(*pv) || str(*pv, "/status/phase") != "Released" || ctx_.lost.load()) {
    return WorkResult::success();
  }
  if (str(*pv, "/spec/persistentVolumeReclaimPolicy") != "Delete") {
    return WorkResult::success();  // Retain: the data stays for an administrator
  }
  if (ctx_.runtime->uses_path(str(*pv, "/spec/local/path"))) {
    // A sandbox of a pod deleted while this node was lost still has it: the kubelet removes
    // that sandbox first.
    return WorkResult::requeue_after(std::chrono::seconds(1));
  }
  remove_volume_dir(*pv);
  kube::DeleteOptions options;
  options.precondition_uid = str(*pv, "/metadata/uid");
  auto r = ctx_.client->remove(kube::resources::kPersistentVolumes, "", name, options);
  if (!r && !r.error().is(kube::ErrorKind::kNotFound) &&
      !r.error().is(kube::ErrorKind::kConflict)) {
    return WorkResult::retry("delete volume " + name + ": " + r.error().to_string());
  }
  spdlog::info("deleted released volume {}", name);
  return WorkResult::success();
}

}  // namespace kstack::nodesim
