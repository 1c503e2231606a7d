#include "reconciler/controller.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/model.h"
#include "informer/factory.h"
#include "informer/work_queue.h"
#include "kube/log_context.h"
#include "reconciler/desired_state.h"
#include "reconciler/reconciler.h"

namespace kstack::reconciler {
namespace {

// Whether an update changed nothing but the object's status: the same generation (a spec
// change moves it), labels, ownerReferences and deletion timestamp.
bool status_only_change(const informer::PackedValue& old, const informer::PackedValue& now) {
  static constexpr std::string_view kPointers[] = {"/metadata/generation", "/metadata/labels",
                                                   "/metadata/ownerReferences",
                                                   "/metadata/deletionTimestamp"};
  for (const auto pointer : kPointers) {
    std::error_code e1, e2;
    const auto* a = old.find_pointer(pointer, e1);
    const auto* b = now.find_pointer(pointer, e2);
    if ((a == nullptr) != (b == nullptr) || (a != nullptr && *a != *b)) return false;
  }
  return true;
}

informer::InformerScope watch(const kube::ResourceType& type, std::string ns,
                              std::string label_selector = {}, std::string field_selector = {}) {
  return {type, std::move(ns), std::move(label_selector), std::move(field_selector)};
}

}  // namespace

struct Controller::Impl {
  ControllerOptions options;
  std::shared_ptr<informer::InformerFactory> factory;
  bool own_factory = false;
  informer::SharedInformer *stacks = nullptr, *apptypes = nullptr, *configs = nullptr,
                           *sets = nullptr, *services = nullptr, *pvcs = nullptr, *pods = nullptr,
                           *pdbs = nullptr, *nodes = nullptr, *volumes = nullptr;
  // PodDisruptionBudget as the API server serves it (policy/v1, else v1beta1); none: not served.
  std::optional<kube::ResourceType> pdb_type;
  std::vector<informer::HandlerRegistration> handlers;  // released by stop()
  std::unique_ptr<executor::Executor> executor;
  std::unique_ptr<executor::SetupRunner> setup;
  std::unique_ptr<Notifier> notifier;
  std::unique_ptr<executor::SetupStepRunner> setup_steps;
  std::unique_ptr<SetupExecutor> setup_executor;
  std::unique_ptr<Reconciler> reconciler;
  std::unique_ptr<informer::WorkQueue> queue;
  std::unique_ptr<informer::Workers> workers;
  std::atomic<std::uint64_t> reconciles{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> resyncs{0};
  std::atomic<bool> synced{false};
  std::mutex workers_mu;  // start_workers() / stop_workers() may come from another thread
  bool workers_stopped = false;
  std::once_flag stopped;
};

Controller::Controller(std::shared_ptr<kube::Client> client, ControllerOptions options)
    : client_(std::move(client)), impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

Controller::~Controller() { stop(); }

namespace {

using Keys = std::vector<std::string>;
using Enqueue = std::function<void(const Keys&)>;

// A handler that enqueues the keys `keys_of` gives for the object on every add, update (the new
// object and the old one: a label or owner may have been taken away) and delete.
informer::EventHandler enqueue_keys_of(std::function<Keys(const informer::PackedValue&)> keys_of,
                                       Enqueue enqueue) {
  informer::EventHandler h;
  h.on_add = [keys_of, enqueue](const informer::ObjectPtr& o) { enqueue(keys_of(*o)); };
  h.on_update = [keys_of, enqueue](const informer::ObjectPtr& old, const informer::ObjectPtr& o) {
    enqueue(keys_of(*o));
    if (old) enqueue(keys_of(*old));
  };
  h.on_delete = [keys_of, enqueue](const informer::ObjectPtr& o, bool) { enqueue(keys_of(*o)); };
  return h;
}

}  // namespace

namespace {

// policy/v1 from Kubernetes 1.21, policy/v1beta1 until 1.25: whichever the server serves.
kube::Result<std::optional<kube::ResourceType>> discover_pdb_once(kube::Client& client) {
  auto v1 = client.discover("policy/v1", "PodDisruptionBudget");
  if (v1) return std::optional<kube::ResourceType>(*v1);
  if (!v1.error().is(kube::ErrorKind::kNotFound)) return tl::unexpected(std::move(v1.error()));
  auto beta = client.discover("policy/v1beta1", "PodDisruptionBudget");
  if (beta) return std::optional<kube::ResourceType>(*beta);
  if (!beta.error().is(kube::ErrorKind::kNotFound)) return tl::unexpected(std::move(beta.error()));
  spdlog::warn(
      "controller: the API server serves no PodDisruptionBudget (policy/v1 or v1beta1); "
      "roles that declare minAvailable get none");
  return std::optional<kube::ResourceType>();
}

// As above, tried again while the server cannot be reached (a transport or TLS failure, 5xx,
// 429), as the informers' lists are, until `deadline`; a refusal (403, ...) ends it at once.
kube::Result<std::optional<kube::ResourceType>> discover_pdb(
    kube::Client& client, std::chrono::steady_clock::time_point deadline) {
  auto backoff = std::chrono::milliseconds(100);
  for (;;) {
    auto found = discover_pdb_once(client);
    if (found) return found;
    const auto& e = found.error();
    const bool transient = e.retryable() || e.is(kube::ErrorKind::kTls);
    if (!transient || std::chrono::steady_clock::now() + backoff > deadline) return found;
    spdlog::warn("controller: discovering PodDisruptionBudget: {}; trying again in {} ms",
                 e.to_string(), backoff.count());
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

}  // namespace

kube::Result<void> Controller::open_informers() {
  auto& s = *impl_;
  const auto& opts = s.options;
  const std::string owned = fmt::format("{}={}", kLabelManagedBy, kManagedByValue);
  s.factory = opts.informers;
  s.own_factory = s.factory == nullptr;
  if (s.own_factory) {
    s.factory = std::make_shared<informer::InformerFactory>(
        client_, informer::InformerFactoryOptions{.resync_period = opts.resync_period});
  }
  auto& f = *s.factory;
  s.stacks = &f.informer(watch(catalog::resources::kStacks, opts.watch_namespace));
  // AppTypes live in the Stacks' namespaces (local catalog) and the operator's (system).
  s.apptypes = &f.informer(watch(catalog::resources::kAppTypes, {}));
  s.configs = &f.informer(watch(catalog::resources::kKStackConfigs, opts.operator_namespace, {},
                                fmt::format("metadata.name={}", catalog::kConfigName)));
  s.sets = &f.informer(watch(kube::resources::kStatefulSets, opts.watch_namespace, owned));
  s.services = &f.informer(watch(kube::resources::kServices, opts.watch_namespace, owned));
  s.pvcs =
      &f.informer(watch(kube::resources::kPersistentVolumeClaims, opts.watch_namespace, owned));
  s.pods = &f.informer(watch(kube::resources::kPods, opts.watch_namespace, owned));
  // Member recovery reads the members' Nodes and their claims' volumes (cluster-scoped).
  s.nodes = &f.informer(watch(kube::resources::kNodes, {}));
  s.volumes = &f.informer(watch(kube::resources::kPersistentVolumes, {}));
  auto pdb = discover_pdb(*client_, std::chrono::steady_clock::now() + opts.sync_timeout);
  if (!pdb) {
    return kube::make_error(
        pdb.error().kind,
        fmt::format("controller: discovering PodDisruptionBudget: {}", pdb.error().message));
  }
  s.pdb_type = *pdb;
  if (s.pdb_type) s.pdbs = &f.informer(watch(*s.pdb_type, opts.watch_namespace, owned));
  return {};
}

void Controller::build_pipeline() {
  auto& s = *impl_;
  const auto& opts = s.options;
  informer::WorkQueueOptions qo;
  qo.name = "stack";
  qo.metrics = opts.queue_metrics;
  s.queue = std::make_unique<informer::WorkQueue>(qo);
  auto requeue = [q = s.queue.get()](const std::string& key) { q->add(key); };
  s.executor = std::make_unique<executor::Executor>(client_, opts.executor);
  Caches caches;
  caches.stacks = &s.stacks->store();
  caches.apptypes = &s.apptypes->store();
  caches.configs = &s.configs->store();
  caches.owned = observer::Stores{&s.sets->store(),
                                  &s.services->store(),
                                  &s.pvcs->store(),
                                  &s.pods->store(),
                                  s.pdbs != nullptr ? &s.pdbs->store() : nullptr,
                                  &s.nodes->store(),
                                  &s.volumes->store()};
  ReconcilerOptions ro;
  ro.operator_namespace = opts.operator_namespace;
  ro.poll_interval = opts.poll_interval;
  ro.pdb_type = s.pdb_type;
  ro.status_progress_interval = opts.status_progress_interval;
  s.setup = std::make_unique<executor::SetupRunner>(client_, opts.setup);
  s.notifier = std::make_unique<Notifier>(*s.setup, requeue, opts.notifier);
  s.setup_steps = std::make_unique<executor::SetupStepRunner>(*s.setup, *client_);
  s.setup_executor = std::make_unique<SetupExecutor>(*s.setup_steps, requeue, opts.setup_steps);
  s.reconciler = std::make_unique<Reconciler>(caches, *s.executor, ro,
                                              SetupHooks{s.setup_executor.get(), s.notifier.get()});
}

void Controller::add_handlers() {
  auto& s = *impl_;
  auto* queue = s.queue.get();
  auto* rec = s.reconciler.get();
  Enqueue enqueue = [queue](const Keys& keys) {
    for (const auto& k : keys) queue->add(k);
  };
  // Pods and the StatefulSets' status: coalesced (ControllerOptions::coalesce).
  const auto coalesce = std::chrono::duration_cast<std::chrono::nanoseconds>(s.options.coalesce);
  Enqueue enqueue_soon = [queue, coalesce](const Keys& keys) {
    for (const auto& k : keys) queue->add_after(k, coalesce);
  };

  auto on_stack = enqueue_keys_of(
      [](const informer::PackedValue& o) { return Keys{informer::object_key(o)}; }, enqueue);
  on_stack.on_resync = [queue, &s](const informer::ObjectPtr& o) {
    s.resyncs.fetch_add(1);
    queue->add(informer::object_key(*o));
  };
  s.handlers.push_back(s.stacks->add_handler(on_stack));

  const auto owner_keys = [](const informer::PackedValue& o) {
    return Reconciler::stacks_for_owned(o);
  };
  auto on_owned = enqueue_keys_of(owner_keys, enqueue);
  for (auto* inf : {s.services, s.pvcs}) s.handlers.push_back(inf->add_handler(on_owned));
  if (s.pdbs != nullptr) s.handlers.push_back(s.pdbs->add_handler(on_owned));
  s.handlers.push_back(s.pods->add_handler(enqueue_keys_of(owner_keys, enqueue_soon)));

  informer::EventHandler on_set = on_owned;
  on_set.on_update = [enqueue, enqueue_soon, owned_update = on_owned.on_update](
                         const informer::ObjectPtr& old, const informer::ObjectPtr& o) {
    if (old && status_only_change(*old, *o)) return enqueue_soon(Reconciler::stacks_for_owned(*o));
    owned_update(old, o);
  };
  s.handlers.push_back(s.sets->add_handler(on_set));

  s.handlers.push_back(s.apptypes->add_handler(enqueue_keys_of(
      [rec](const informer::PackedValue& o) { return rec->stacks_for_apptype(o); }, enqueue)));
  s.handlers.push_back(s.configs->add_handler(
      enqueue_keys_of([rec](const informer::PackedValue&) { return rec->all_stacks(); }, enqueue)));
}

kube::Result<void> Controller::wait_synced() {
  auto& s = *impl_;
  const std::pair<const char*, informer::SharedInformer*> caches_by_name[] = {
      {"stacks", s.stacks},
      {"apptypes", s.apptypes},
      {"kstackconfigs", s.configs},
      {"statefulsets", s.sets},
      {"services", s.services},
      {"persistentvolumeclaims", s.pvcs},
      {"pods", s.pods},
      {"nodes", s.nodes},
      {"persistentvolumes", s.volumes},
      {"poddisruptionbudgets", s.pdbs}};
  for (const auto& [name, inf] : caches_by_name) {
    if (inf == nullptr) continue;  // not served (PodDisruptionBudgets)
    if (!inf->wait_for_sync(s.options.sync_timeout)) {
      return kube::make_error(
          kube::ErrorKind::kTimeout,
          fmt::format("controller: the {} cache did not sync within {} ms (can kstack list and "
                      "watch {}?)",
                      name, s.options.sync_timeout.count(), name));
    }
  }
  s.synced = true;
  spdlog::info("controller: caches synced ({} stacks)", s.stacks->store().size());
  return {};
}

kube::Result<void> Controller::start() {
  if (auto opened = open_informers(); !opened) return opened;
  build_pipeline();
  add_handlers();
  impl_->factory->start();  // the shared caches may run already: their handlers got what they hold
  if (auto synced = wait_synced(); !synced) return synced;
  if (impl_->options.start_workers) start_workers();
  return {};
}

namespace {

std::string_view result_label(informer::WorkResult::Kind kind) {
  switch (kind) {
    case informer::WorkResult::Kind::kSuccess:
      return "success";
    case informer::WorkResult::Kind::kRequeue:
      return "requeue";
    case informer::WorkResult::Kind::kRequeueAfter:
      return "requeue_after";
    case informer::WorkResult::Kind::kError:
    case informer::WorkResult::Kind::kTerminalError:
      break;
  }
  return "error";
}

}  // namespace

void Controller::start_workers() {
  auto& s = *impl_;
  std::lock_guard lock(s.workers_mu);
  if (s.workers || s.workers_stopped || !s.synced) return;
  spdlog::info("controller: starting {} workers", s.options.workers);
  s.workers = std::make_unique<informer::Workers>(
      *s.queue, std::max(1, s.options.workers), [&s](const std::string& key) {
        const auto started = std::chrono::steady_clock::now();
        // The pass's log fields, also on the failure line below.
        const kube::LogScope log_scope(Reconciler::pass_log_fields(key));
        auto result = s.reconciler->reconcile(key);
        s.reconciles.fetch_add(1);
        if (result.kind == informer::WorkResult::Kind::kError ||
            result.kind == informer::WorkResult::Kind::kTerminalError) {
          s.errors.fetch_add(1);
          spdlog::warn("reconcile {}: {}", key, result.error);
        }
        if (s.options.on_reconcile) {
          s.options.on_reconcile(result_label(result.kind),
                                 std::chrono::steady_clock::now() - started);
        }
        return result;
      });
}

void Controller::stop_workers() {
  auto& s = *impl_;
  std::lock_guard lock(s.workers_mu);
  if (s.workers_stopped) return;
  s.workers_stopped = true;
  if (s.queue) s.queue->shut_down_with_drain();
  if (s.workers) s.workers->stop();
  if (s.setup_executor) s.setup_executor->stop();
  if (s.notifier) s.notifier->stop();
}

void Controller::stop() {
  if (!impl_) return;
  std::call_once(impl_->stopped, [this] {
    stop_workers();
    auto& s = *impl_;
    s.handlers.clear();  // shared caches outlive the controller: they must not call it any more
    if (s.own_factory) s.factory->stop();
  });
}

bool Controller::synced() const { return impl_->synced.load(); }

ControllerStats Controller::stats() const {
  return ControllerStats{impl_->reconciles.load(), impl_->errors.load(), impl_->resyncs.load()};
}

}  // namespace kstack::reconciler
