// Reads one Stack's owned objects out of the informer caches through the stack index.
#include "observer/observer.h"

#include <boost/json.hpp>

namespace kstack::observer {
namespace json = boost::json;

namespace {

// The label every owned object carries (docs/spec.md §4; reconciler::kLabelStack, which this
// library cannot include: the reconciler depends on the observer, not the other way round).
constexpr std::string_view kStackLabel = "kstack.io/stack";

std::string stack_key(std::string_view ns, std::string_view stack) {
  std::string key;
  key.reserve(ns.size() + 1 + stack.size());
  key.append(ns).append("/").append(stack);
  return key;
}

std::map<std::string, informer::ObjectPtr> by_stack(const informer::Store* store,
                                                    const std::string& key) {
  std::map<std::string, informer::ObjectPtr> out;
  if (store == nullptr) return out;
  // The name from the store's key ("namespace/name"), not from the object: reading the
  // objects' metadata here was half of this function's time (cache misses on cold objects).
  for (auto& [object_key, object] : store->by_index_keyed(kStackIndex, key)) {
    object_key.erase(0, object_key.find('/') + 1);
    out.emplace(std::move(object_key), std::move(object));
  }
  return out;
}

informer::ObjectPtr by_name(const informer::Store* store, std::string_view ns,
                            std::string_view name) {
  if (store == nullptr) return nullptr;
  return store->get(informer::object_key(ns, name));
}

}  // namespace

informer::IndexFunc stack_index() {
  return [](const informer::PackedValue& object) -> std::vector<std::string> {
    const auto* o = object.if_object();
    const auto* md = o ? o->if_contains("metadata") : nullptr;
    const auto* labels = md && md->is_object() ? md->get_object().if_contains("labels") : nullptr;
    if (labels == nullptr || !labels->is_object()) return {};
    const auto* value = labels->get_object().if_contains(kStackLabel);
    if (value == nullptr || !value->is_string()) return {};
    return {stack_key(informer::object_namespace(object), value->get_string())};
  };
}

Observer::Observer(Stores stores) : stores_(stores) {
  for (auto* store :
       {stores_.stateful_sets, stores_.services, stores_.pvcs, stores_.pods, stores_.pdbs}) {
    if (store != nullptr) store->add_index(std::string(kStackIndex), stack_index());
  }
}

Observed Observer::observe(std::string_view namespace_name, std::string_view stack_name) const {
  const std::string key = stack_key(namespace_name, stack_name);
  Observed observed;
  observed.stateful_sets = by_stack(stores_.stateful_sets, key);
  observed.services = by_stack(stores_.services, key);
  observed.pvcs = by_stack(stores_.pvcs, key);
  observed.pods = by_stack(stores_.pods, key);
  observed.pdbs = by_stack(stores_.pdbs, key);
  // The cluster-scoped objects the pods and claims point at, by name.
  const auto add_referenced = [](const informer::Store* store, const informer::PackedValue& object,
                                 std::string_view pointer,
                                 std::map<std::string, informer::ObjectPtr>& into) {
    if (store == nullptr) return;
    std::error_code ec;
    const auto* name = object.find_pointer(pointer, ec);
    if (name == nullptr || !name->is_string() || name->get_string().empty()) return;
    std::string n(name->get_string());
    if (into.contains(n)) return;
    if (auto found = store->get(n)) into.emplace(std::move(n), std::move(found));
  };
  for (const auto& [name, pod] : observed.pods) {
    add_referenced(stores_.nodes, *pod, "/spec/nodeName", observed.nodes);
  }
  for (const auto& [name, pvc] : observed.pvcs) {
    add_referenced(stores_.volumes, *pvc, "/spec/volumeName", observed.volumes);
  }
  return observed;
}

informer::ObjectPtr Observer::stateful_set(std::string_view ns, std::string_view name) const {
  return by_name(stores_.stateful_sets, ns, name);
}
informer::ObjectPtr Observer::service(std::string_view ns, std::string_view name) const {
  return by_name(stores_.services, ns, name);
}
informer::ObjectPtr Observer::pvc(std::string_view ns, std::string_view name) const {
  return by_name(stores_.pvcs, ns, name);
}
informer::ObjectPtr Observer::pod(std::string_view ns, std::string_view name) const {
  return by_name(stores_.pods, ns, name);
}

}  // namespace kstack::observer
