// An informer: a Reflector keeping a Store, event handlers called for every change, and a
// periodic resync that re-delivers every cached object without any API request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "informer/reflector.h"
#include "informer/store.h"
#include "kube/client.h"

namespace kstack::informer {

// kstack's default resync period (docs/spec.md §4); each period is jittered by up to 10 %.
inline constexpr std::chrono::seconds kDefaultResyncPeriod{300};
inline constexpr double kResyncJitter = 0.1;

// Any callback may be empty. They run on the informer's threads (changes on the reflector
// thread, resyncs on the resync thread) and must not block for long: enqueue and return.
struct EventHandler {
  std::function<void(const ObjectPtr&)> on_add;
  std::function<void(const ObjectPtr& old_object, const ObjectPtr& object)> on_update;
  std::function<void(const ObjectPtr& object, bool final_state_unknown)> on_delete;
  std::function<void(const ObjectPtr&)> on_resync;
};

// Informers started and not yet stopped in this process, by resource (group and plural), for
// the operator's kstack_informers gauge: every Informer counts, whoever made it, so the gauge
// shows a duplicate cache however it came about.
struct RunningResource {
  std::string group;
  std::string resource;
  auto operator<=>(const RunningResource&) const = default;
};
std::map<RunningResource, int> running_informers();

struct InformerOptions {
  std::chrono::milliseconds resync_period = kDefaultResyncPeriod;  // 0 disables resync
  double resync_jitter = kResyncJitter;
};

class Informer : private EventSink {
 public:
  Informer(std::shared_ptr<kube::Client> client, ReflectorOptions reflector,
           InformerOptions options = {});
  ~Informer() override;

  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Add indexes and handlers before start().
  Store& store() { return store_; }
  const Store& store() const { return store_; }
  void add_handler(EventHandler handler);

  void start();
  // Blocks until the first list is in the cache or the timeout passes.
  bool wait_for_sync(std::chrono::milliseconds timeout);
  bool has_synced() const { return store_.has_synced(); }
  // Stops the reflector and resync threads; idempotent.
  void stop();

  const Reflector& reflector() const { return reflector_; }

 private:
  void on_add(const ObjectPtr& object) override;
  void on_update(const ObjectPtr& old_object, const ObjectPtr& object) override;
  void on_delete(const ObjectPtr& object, bool final_state_unknown) override;
  void on_listed() override;
  void resync_loop();

  InformerOptions options_;
  RunningResource resource_;
  Store store_;
  Reflector reflector_;
  std::vector<EventHandler> handlers_;
  kube::CancelToken cancel_;
  std::thread reflector_thread_;
  std::thread resync_thread_;
  std::mutex mu_;
  std::condition_variable cv_;  // signalled on sync and on stop
  bool stopping_ = false;
  bool started_ = false;
};

}  // namespace kstack::informer
