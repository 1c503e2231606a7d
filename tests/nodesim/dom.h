// The node simulator reads the objects its informers cache as Boost.JSON DOMs: kstack's caches
// hold objects packed (informer/packed.h), read in place by the operator's hot paths, while the
// simulator's kubelet, scheduler and provisioner edit copies of pods, claims and volumes to
// write them back. Each object is converted once where the simulator takes it from a cache or
// an informer event.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <boost/json/value.hpp>

#include "informer/informer.h"

namespace kstack::nodesim {

using DomPtr = std::shared_ptr<const boost::json::value>;

// nullptr for nullptr.
inline DomPtr dom_of(const informer::ObjectPtr& object) {
  return object ? std::make_shared<const boost::json::value>(object->to_value()) : nullptr;
}

inline std::vector<DomPtr> doms_of(const std::vector<informer::ObjectPtr>& objects) {
  std::vector<DomPtr> out;
  out.reserve(objects.size());
  for (const auto& o : objects) out.push_back(dom_of(o));
  return out;
}

// informer::EventHandler with DOMs.
struct DomEventHandler {
  std::function<void(const DomPtr&)> on_add;
  std::function<void(const DomPtr& old_object, const DomPtr& object)> on_update;
  std::function<void(const DomPtr& object, bool final_state_unknown)> on_delete;
  std::function<void(const DomPtr&)> on_resync;
};

inline informer::EventHandler packed_handler(DomEventHandler h) {
  informer::EventHandler out;
  if (h.on_add) {
    out.on_add = [f = std::move(h.on_add)](const informer::ObjectPtr& o) { f(dom_of(o)); };
  }
  if (h.on_update) {
    out.on_update = [f = std::move(h.on_update)](const informer::ObjectPtr& old,
                                                 const informer::ObjectPtr& o) {
      f(dom_of(old), dom_of(o));
    };
  }
  if (h.on_delete) {
    out.on_delete = [f = std::move(h.on_delete)](const informer::ObjectPtr& o, bool unknown) {
      f(dom_of(o), unknown);
    };
  }
  if (h.on_resync) {
    out.on_resync = [f = std::move(h.on_resync)](const informer::ObjectPtr& o) { f(dom_of(o)); };
  }
  return out;
}

}  // namespace kstack::nodesim
