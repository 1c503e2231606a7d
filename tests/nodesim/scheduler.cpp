// The scheduler role (see scheduler.h). A single worker, so capacity accounting on this node
// needs no further locking than the assume cache.
#include "tests/nodesim/scheduler.h"

#include <algorithm>

#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tests/nodesim/dom.h"
#include "tests/nodesim/json_util.h"

namespace kstack::nodesim {

namespace json = boost::json;
using ObjectPtr = DomPtr;
using informer::WorkResult;

namespace {

bool pending(const json::value& pod) {
  return str(pod, "/spec/nodeName").empty() &&
         find(pod, "/metadata/deletionTimestamp") == nullptr && !pod_terminated(pod);
}

bool ours_to_schedule(const json::value& pod) {
  auto scheduler = str(pod, "/spec/schedulerName");
  return scheduler.empty() || scheduler == kDefaultSchedulerName;
}

// What of a Node decides whether pods may go there (status heartbeats do not).
bool same_schedulability(const json::value& a, const json::value& b) {
  auto same = [&](std::string_view pointer) {
    const auto* va = find(a, pointer);
    const auto* vb = find(b, pointer);
    return va == nullptr ? vb == nullptr : vb != nullptr && *va == *vb;
  };
  return flag(a, "/spec/unschedulable") == flag(b, "/spec/unschedulable") && same("/spec/taints") &&
         same("/metadata/labels");
}

}  // namespace

Scheduler::Scheduler(Context& ctx) : ctx_(ctx), queue_(queue_options("scheduler")) {
  informer::ReflectorOptions r;
  r.type = kube::resources::kNodes;
  r.field_selector = "metadata.name=" + ctx_.node.name;
  informer::InformerOptions no_resync;
  no_resync.resync_period = std::chrono::milliseconds(0);
  node_ = std::make_unique<informer::Informer>(ctx_.client, r, no_resync);
  DomEventHandler h;
  h.on_add = [this](const ObjectPtr&) { enqueue_all(); };
  h.on_update = [this](const ObjectPtr& old_node, const ObjectPtr& node) {
    if (!same_schedulability(*old_node, *node)) enqueue_all();  // e.g. uncordoned
  };
  node_->add_handler(packed_handler(std::move(h)));
}

Scheduler::~Scheduler() { stop(); }

informer::EventHandler Scheduler::pod_handler() {
  DomEventHandler h;
  auto on_pod = [this](const ObjectPtr& o) {
    if (pending(*o)) {
      queue_.add(informer::object_key(*o));
    } else if (str(*o, "/spec/nodeName") == ctx_.node.name && pod_terminated(*o)) {
      enqueue_all();  // capacity freed
    }
  };
  h.on_add = on_pod;
  h.on_update = [on_pod](const ObjectPtr&, const ObjectPtr& o) { on_pod(o); };
  h.on_resync = on_pod;
  h.on_delete = [this](const ObjectPtr& o, bool) {
    if (str(*o, "/spec/nodeName") == ctx_.node.name) enqueue_all();
  };
  return packed_handler(std::move(h));
}

informer::EventHandler Scheduler::volume_handler() {
  DomEventHandler h;
  h.on_add = [this](const ObjectPtr&) { enqueue_all(); };
  h.on_update = [this](const ObjectPtr&, const ObjectPtr&) { enqueue_all(); };
  return packed_handler(std::move(h));
}

void Scheduler::start() {
  node_->start();
  workers_ = std::make_unique<informer::Workers>(
      queue_, 1, [this](const std::string& key) { return reconcile(key); });
  enqueue_all();
}

void Scheduler::stop() {
  if (workers_) workers_->stop();
  node_->stop();
}

void Scheduler::enqueue_all() {
  for (const auto& pod : doms_of(ctx_.pods->store().list())) {
    if (pending(*pod)) queue_.add(informer::object_key(*pod));
  }
}

WorkResult Scheduler::reconcile(const std::string& key) {
  ObjectPtr pod = dom_of(ctx_.pods->store().get(key));
  if (pod && !pending(*pod)) {
    std::lock_guard lock(mu_);
    delayed_.erase(str(*pod, "/metadata/uid"));
  }
  if (!pod || !pending(*pod) || !ours_to_schedule(*pod) || ctx_.lost.load()) {
    return WorkResult::success();
  }
  const std::string uid = str(*pod, "/metadata/uid");
  ObjectPtr node = dom_of(node_->store().get(ctx_.node.name));
  if (!node) return WorkResult::success();  // not cached yet: its add event enqueues every pod

  Resources used;
  std::int64_t count = 0;
  {
    std::lock_guard lock(mu_);
    for (const auto& p : doms_of(ctx_.pods->store().list())) {
      if (str(*p, "/spec/nodeName") != ctx_.node.name || pod_terminated(*p)) continue;
      used += pod_requests(*p);
      ++count;
      assumed_.erase(str(*p, "/metadata/uid"));
    }
    for (auto it = assumed_.begin(); it != assumed_.end();) {
      auto cached = dom_of(ctx_.pods->store().get(it->second.first));
      if (!cached || str(*cached, "/metadata/uid") != it->first) {
        it = assumed_.erase(it);
        continue;
      }
      used += it->second.second;
      ++count;
      ++it;
    }
  }
  FitInput input{ctx_.node,
                 used,
                 count,
                 [this](const std::string& k) { return dom_of(ctx_.claims->store().get(k)); },
                 [this](const std::string& k) { return dom_of(ctx_.volumes->store().get(k)); },
                 node};
  FitResult fit = check_fit(*pod, input);
  if (!fit.fits()) {
    spdlog::debug("pod {} does not go to {}: {}", key, ctx_.node.name, fit.reason);
    return WorkResult::success();  // pod, claim and volume events bring it back
  }
  if (count > 0) {
    std::lock_guard lock(mu_);
    if (delayed_.insert(uid).second) {
      return WorkResult::requeue_after(std::min(kBindDelayPerPod * count, kMaxBindDelay));
    }
  }
  auto bound = bind(*pod);
  if (!bound) return WorkResult::retry("bind " + key + ": " + bound.error().to_string());
  std::lock_guard lock(mu_);
  delayed_.erase(uid);
  if (*bound) {
    assumed_[uid] = {key, pod_requests(*pod)};
    spdlog::info("bound pod {} to node {}", key, ctx_.node.name);
  }
  return WorkResult::success();
}

kube::Result<bool> Scheduler::bind(const json::value& pod) {
  const std::string ns = str(pod, "/metadata/namespace");
  const std::string name = str(pod, "/metadata/name");
  json::object binding{
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata",
       json::object{{"name", name}, {"namespace", ns}, {"uid", str(pod, "/metadata/uid")}}},
      {"target", json::object{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", ctx_.node.name}}}};
  auto response =
      ctx_.client->raw("POST", kube::resource_path(kube::resources::kPods, ns, name, "binding"),
                       json::serialize(binding), "application/json", "POST");
  if (!response) return tl::unexpected(response.error());
  if (response->status >= 200 && response->status < 300) return true;
  auto error = kube::error_from_response(response->status, response->body);
  if (error.is(kube::ErrorKind::kConflict) || error.is(kube::ErrorKind::kNotFound) ||
      error.is(kube::ErrorKind::kAlreadyExists)) {
    spdlog::debug("pod {}/{} not bound here: {}", ns, name, error.to_string());
    return false;  // another simulator bound it, or it is gone
  }
  return tl::unexpected(error);
}

}  // namespace kstack::nodesim
