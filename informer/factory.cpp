#include "informer/factory.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kstack::informer {
namespace {

// Equal scopes give equal keys; the separator cannot occur in a group, plural, namespace or
// selector.
std::string scope_key(const InformerScope& s) {
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}", s.type.group, s.type.version, s.type.plural,
                     s.namespace_name, s.label_selector, s.field_selector);
}

ReflectorOptions reflector_options(const InformerScope& scope) {
  ReflectorOptions o;
  o.type = scope.type;
  o.namespace_name = scope.namespace_name;
  o.label_selector = scope.label_selector;
  o.field_selector = scope.field_selector;
  return o;
}

}  // namespace

std::string describe(const InformerScope& scope) {
  std::string out = scope.type.plural;
  if (!scope.type.group.empty()) out += "." + scope.type.group;
  if (scope.type.namespaced) {
    out += scope.namespace_name.empty() ? " in all namespaces"
                                        : " in namespace " + scope.namespace_name;
  }
  if (!scope.label_selector.empty()) out += ", labels " + scope.label_selector;
  if (!scope.field_selector.empty()) out += ", fields " + scope.field_selector;
  return out;
}

HandlerRegistration& HandlerRegistration::operator=(HandlerRegistration&& other) noexcept {
  if (this != &other) {
    reset();
    informer_ = std::exchange(other.informer_, nullptr);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void HandlerRegistration::reset() {
  if (informer_ == nullptr) return;
  std::exchange(informer_, nullptr)->remove_handler(id_);
}

SharedInformer::SharedInformer(std::shared_ptr<kube::Client> client, InformerScope scope,
                               InformerOptions options)
    : scope_(std::move(scope)), informer_(std::move(client), reflector_options(scope_), options) {
  informer_.add_handler(dispatcher());
}

// The informer's only handler: passes each delivery to the registered handlers.
EventHandler SharedInformer::dispatcher() {
  EventHandler d;
  d.on_add = [this](const ObjectPtr& object) {
    std::shared_lock lock(handlers_mu_);
    for (const auto& [id, h] : handlers_) {
      if (h.on_add) h.on_add(object);
    }
  };
  d.on_update = [this](const ObjectPtr& old_object, const ObjectPtr& object) {
    std::shared_lock lock(handlers_mu_);
    for (const auto& [id, h] : handlers_) {
      if (h.on_update) h.on_update(old_object, object);
    }
  };
  d.on_delete = [this](const ObjectPtr& object, bool final_state_unknown) {
    std::shared_lock lock(handlers_mu_);
    for (const auto& [id, h] : handlers_) {
      if (h.on_delete) h.on_delete(object, final_state_unknown);
    }
  };
  d.on_resync = [this](const ObjectPtr& object) {
    std::shared_lock lock(handlers_mu_);
    for (const auto& [id, h] : handlers_) {
      if (h.on_resync) h.on_resync(object);
    }
  };
  return d;
}

HandlerRegistration SharedInformer::add_handler(EventHandler handler) {
  // Exclusive: no delivery runs while the cache is replayed, so a change stored after the
  // replay's snapshot is delivered to the new handler too (it waits for the lock), and one
  // stored before is in the snapshot.
  std::unique_lock lock(handlers_mu_);
  if (handler.on_add) {
    for (const auto& object : informer_.store().list()) handler.on_add(object);
  }
  const std::uint64_t id = next_id_++;
  handlers_.emplace(id, std::move(handler));
  return HandlerRegistration(this, id);
}

void SharedInformer::remove_handler(std::uint64_t id) {
  std::unique_lock lock(handlers_mu_);  // waits for a delivery in progress
  handlers_.erase(id);
}

std::size_t SharedInformer::handler_count() const {
  std::shared_lock lock(handlers_mu_);
  return handlers_.size();
}

InformerFactory::InformerFactory(std::shared_ptr<kube::Client> client,
                                 InformerFactoryOptions options)
    : client_(std::move(client)), options_(options) {}

InformerFactory::~InformerFactory() { stop(); }

SharedInformer& InformerFactory::informer(const InformerScope& scope) {
  std::lock_guard lock(mu_);
  auto& slot = by_key_[scope_key(scope)];
  if (!slot) {
    slot = std::make_unique<SharedInformer>(
        client_, scope, InformerOptions{.resync_period = options_.resync_period});
    order_.push_back(slot.get());
  }
  return *slot;
}

void InformerFactory::start() {
  std::lock_guard lock(mu_);
  if (stopped_) return;
  for (auto* inf : order_) {
    if (std::find(started_.begin(), started_.end(), inf) != started_.end()) continue;
    spdlog::debug("informers: starting {}", describe(inf->scope()));
    inf->informer_.start();
    started_.push_back(inf);
  }
}

kube::Result<void> InformerFactory::wait_for_sync(std::chrono::milliseconds timeout) {
  std::vector<SharedInformer*> started;
  {
    std::lock_guard lock(mu_);
    started = started_;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto* inf : started) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!inf->wait_for_sync(std::max(left, std::chrono::milliseconds(0)))) {
      return kube::make_error(
          kube::ErrorKind::kTimeout,
          fmt::format("informers: the cache of {} did not sync within {} ms (can kstack list and "
                      "watch {}?)",
                      describe(inf->scope()), timeout.count(), inf->scope().type.plural));
    }
  }
  return {};
}

void InformerFactory::stop() {
  std::vector<SharedInformer*> all;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    all = order_;
  }
  for (auto* inf : all) inf->informer_.stop();
}

std::vector<SharedInformer*> InformerFactory::informers() const {
  std::lock_guard lock(mu_);
  return order_;
}

}  // namespace kstack::informer
