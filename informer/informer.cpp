#include "informer/informer.h"

#include <random>

namespace kstack::informer {
namespace {

std::mutex running_mu;
std::map<RunningResource, int>& running() {
  static std::map<RunningResource, int> counts;
  return counts;
}

void count_running(const RunningResource& resource, int delta) {
  std::lock_guard lock(running_mu);
  auto& counts = running();
  if ((counts[resource] += delta) <= 0) counts.erase(resource);
}

}  // namespace

std::map<RunningResource, int> running_informers() {
  std::lock_guard lock(running_mu);
  return running();
}

Informer::Informer(std::shared_ptr<kube::Client> client, ReflectorOptions reflector,
                   InformerOptions options)
    : options_(options),
      resource_{reflector.type.group, reflector.type.plural},
      reflector_(std::move(client), std::move(reflector), store_, *this) {}

Informer::~Informer() { stop(); }

void Informer::add_handler(EventHandler handler) { handlers_.push_back(std::move(handler)); }

void Informer::start() {
  std::lock_guard lock(mu_);
  if (started_ || stopping_) return;  // a stopped informer stays stopped
  started_ = true;
  count_running(resource_, +1);
  reflector_thread_ = std::thread([this] { reflector_.run(cancel_); });
  if (options_.resync_period.count() > 0) resync_thread_ = std::thread([this] { resync_loop(); });
}

bool Informer::wait_for_sync(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return store_.has_synced() || stopping_; }) &&
         store_.has_synced();
}

void Informer::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (started_) count_running(resource_, -1);
  }
  cv_.notify_all();
  cancel_.cancel();
  if (reflector_thread_.joinable()) reflector_thread_.join();
  if (resync_thread_.joinable()) resync_thread_.join();
}

void Informer::on_listed() {
  { std::lock_guard lock(mu_); }  // pairs with wait_for_sync's predicate check
  cv_.notify_all();
}

void Informer::on_add(const ObjectPtr& object) {
  for (const auto& h : handlers_) {
    if (h.on_add) h.on_add(object);
  }
}

void Informer::on_update(const ObjectPtr& old_object, const ObjectPtr& object) {
  for (const auto& h : handlers_) {
    if (h.on_update) h.on_update(old_object, object);
  }
}

void Informer::on_delete(const ObjectPtr& object, bool final_state_unknown) {
  for (const auto& h : handlers_) {
    if (h.on_delete) h.on_delete(object, final_state_unknown);
  }
}

void Informer::resync_loop() {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(1.0 - options_.resync_jitter,
                                                1.0 + options_.resync_jitter);
  for (;;) {
    const auto period =
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.resync_period * jitter(rng));
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, period, [this] { return stopping_; })) return;
    }
    if (!store_.has_synced()) continue;
    // From the cache only: a resync makes no API request.
    for (const auto& object : store_.list()) {
      for (const auto& h : handlers_) {
        if (h.on_resync) h.on_resync(object);
      }
    }
  }
}

}  // namespace kstack::informer
