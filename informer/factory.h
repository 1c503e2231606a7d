// The shared informer factory: one Informer (one list and watch, one Store) per scope — resource
// type, namespace, label and field selectors — per process, handed to every component that
// asks for that scope (the controller and the admission webhook in `kstack operator`), as
// client-go's SharedInformerFactory. Each consumer registers its own handlers; each informer is
// started once, and its first list serves every consumer.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "informer/informer.h"
#include "kube/client.h"

namespace kstack::informer {

// What one informer lists and watches. Requests for equal scopes share one informer; scopes
// that differ in anything (a namespace, a selector) are separate caches.
struct InformerScope {
  kube::ResourceType type;
  std::string namespace_name;  // "" = all namespaces (and cluster-scoped types)
  std::string label_selector;
  std::string field_selector;
};

// "stacks.kstack.io in all namespaces, fields metadata.name=kstack", for logs and errors.
std::string describe(const InformerScope& scope);

struct InformerFactoryOptions {
  // Period of the on_resync deliveries of every informer (client-go's defaultResync);
  // 0 disables them. Only handlers with an on_resync callback see them.
  std::chrono::milliseconds resync_period{0};
};

class SharedInformer;

// A handler added to a SharedInformer; removing it (reset(), or destruction) waits for a call
// in progress, after which the handler is never called again, so what it captured may go.
// Remove it before the factory goes, and never from inside the handler.
class HandlerRegistration {
 public:
  HandlerRegistration() = default;
  HandlerRegistration(SharedInformer* informer, std::uint64_t id) : informer_(informer), id_(id) {}
  ~HandlerRegistration() { reset(); }
  HandlerRegistration(HandlerRegistration&& other) noexcept { *this = std::move(other); }
  HandlerRegistration& operator=(HandlerRegistration&& other) noexcept;
  HandlerRegistration(const HandlerRegistration&) = delete;
  HandlerRegistration& operator=(const HandlerRegistration&) = delete;

  void reset();
  bool active() const { return informer_ != nullptr; }

 private:
  SharedInformer* informer_ = nullptr;
  std::uint64_t id_ = 0;
};

// One informer as the factory hands it out. Thread-safe.
class SharedInformer {
 public:
  SharedInformer(std::shared_ptr<kube::Client> client, InformerScope scope,
                 InformerOptions options);
  ~SharedInformer() { informer_.stop(); }  // its threads end before the handlers go
  SharedInformer(const SharedInformer&) = delete;
  SharedInformer& operator=(const SharedInformer&) = delete;

  const InformerScope& scope() const { return scope_; }
  // Shared by every consumer: read it, and add indexes (an index of the same name replaces the
  // earlier one, so consumers must agree on what a name means).
  Store& store() { return informer_.store(); }
  const Store& store() const { return informer_.store(); }

  // Adds a handler at any time. The handler first gets on_add for every object already cached
  // (client-go's AddEventHandler on a running informer), then every change. An object that
  // changes during the registration may arrive twice (added, then updated): handlers are
  // idempotent. Keep the registration as long as the handler may be called. Not from a handler
  // (deliveries hold the lock this takes).
  [[nodiscard]] HandlerRegistration add_handler(EventHandler handler);

  bool has_synced() const { return informer_.has_synced(); }
  // Blocks until the first list is in the cache, the informer stops, or the timeout passes.
  bool wait_for_sync(std::chrono::milliseconds timeout) { return informer_.wait_for_sync(timeout); }
  const Reflector& reflector() const { return informer_.reflector(); }
  std::size_t handler_count() const;

 private:
  friend class HandlerRegistration;
  friend class InformerFactory;
  void remove_handler(std::uint64_t id);
  EventHandler dispatcher();

  InformerScope scope_;
  Informer informer_;
  // Calls to the handlers hold it shared (the reflector and resync threads may deliver at
  // once, as with an unshared informer); adding or removing a handler holds it exclusively.
  mutable std::shared_mutex handlers_mu_;
  std::map<std::uint64_t, EventHandler> handlers_;
  std::uint64_t next_id_ = 1;
};

class InformerFactory {
 public:
  InformerFactory(std::shared_ptr<kube::Client> client, InformerFactoryOptions options = {});
  ~InformerFactory();  // stop()
  InformerFactory(const InformerFactory&) = delete;
  InformerFactory& operator=(const InformerFactory&) = delete;

  // The informer of `scope`, made on the first request. Thread-safe. It runs once start() is
  // called (again, for one requested after an earlier start()).
  SharedInformer& informer(const InformerScope& scope);

  // Starts every informer not started yet; idempotent, thread-safe; no-op after stop().
  void start();
  // Waits, within one deadline, for every started informer's first list; the error names the
  // scope that did not sync.
  kube::Result<void> wait_for_sync(std::chrono::milliseconds timeout);
  // Stops every informer (each stops its reflector and resync threads). Idempotent.
  void stop();

  // Every informer made, in the order requested.
  std::vector<SharedInformer*> informers() const;

 private:
  std::shared_ptr<kube::Client> client_;
  InformerFactoryOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<SharedInformer>> by_key_;
  std::vector<SharedInformer*> order_;
  std::vector<SharedInformer*> started_;
  bool stopped_ = false;
};

}  // namespace kstack::informer
