// The observer: what exists now for one Stack, read only from the informer caches (docs/spec.md §4:
// a reconcile never LISTs the API server). The owned kinds are found through an index on the
// namespace + `kstack.io/stack` label, so observing a Stack costs O(its objects), not O(cache).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "informer/store.h"

namespace kstack::observer {

// Index name registered on every owned-object store: value "<namespace>/<kstack.io/stack>".
inline constexpr std::string_view kStackIndex = "kstack-stack";
informer::IndexFunc stack_index();

// The caches of the kinds a Stack owns (or, for Pods, whose state it reports).
struct Stores {
  informer::Store* stateful_sets = nullptr;
  informer::Store* services = nullptr;
  informer::Store* pvcs = nullptr;
  informer::Store* pods = nullptr;
  // PodDisruptionBudgets kstack keeps (owned, indexed like the others); may be null.
  informer::Store* pdbs = nullptr;
  // Cluster-scoped, not owned: the Nodes the members' pods run on and the PersistentVolumes
  // their claims are bound to (member recovery, docs/api.md "Lost nodes"); may be null.
  informer::Store* nodes = nullptr;
  informer::Store* volumes = nullptr;
};

// Everything currently cached for one Stack, each map keyed by object name.
struct Observed {
  std::map<std::string, informer::ObjectPtr> stateful_sets;
  std::map<std::string, informer::ObjectPtr> services;  // the headless one included
  std::map<std::string, informer::ObjectPtr> pvcs;
  std::map<std::string, informer::ObjectPtr> pods;
  std::map<std::string, informer::ObjectPtr> pdbs;
  // The Nodes of the pods above (by node name) and the PersistentVolumes bound to the claims
  // above (by volume name), as far as the caches have them.
  std::map<std::string, informer::ObjectPtr> nodes;
  std::map<std::string, informer::ObjectPtr> volumes;
};

class Observer {
 public:
  // Registers kStackIndex on each store; call before the informers start.
  explicit Observer(Stores stores);

  Observed observe(std::string_view namespace_name, std::string_view stack_name) const;

  // One cached object by name ("" kinds: nullptr when absent).
  informer::ObjectPtr stateful_set(std::string_view ns, std::string_view name) const;
  informer::ObjectPtr service(std::string_view ns, std::string_view name) const;
  informer::ObjectPtr pvc(std::string_view ns, std::string_view name) const;
  informer::ObjectPtr pod(std::string_view ns, std::string_view name) const;

 private:
  Stores stores_;
};

}  // namespace kstack::observer
