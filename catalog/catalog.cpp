#include "catalog/catalog.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <boost/json.hpp>

#include "catalog/parse.h"

namespace kstack::catalog {
namespace json = boost::json;

namespace resources {
const kube::ResourceType kAppTypes{"kstack.io", "v1beta1", "apptypes", "AppType", true};
const kube::ResourceType kStacks{"kstack.io", "v1beta1", "stacks", "Stack", true};
const kube::ResourceType kKStackConfigs{"kstack.io", "v1beta1", "kstackconfigs", "KStackConfig",
                                        true};
const kube::ResourceType kStorageClasses{"storage.k8s.io", "v1", "storageclasses", "StorageClass",
                                         false};
}  // namespace resources

namespace {

std::string_view string_at(const informer::PackedValue& v,
                           std::initializer_list<std::string_view> path) {
  const informer::PackedValue* cur = &v;
  for (auto key : path) {
    const auto* o = cur->if_object();
    if (o == nullptr) return {};
    cur = o->if_contains(key);
    if (cur == nullptr) return {};
  }
  return cur->is_string() ? std::string_view(cur->get_string()) : std::string_view{};
}

}  // namespace

// Decoded objects keyed by store key, each with the cached object it was decoded from: an
// entry is used only while the store still holds that very object (objects in a store are
// immutable; an update replaces the pointer), and holding it keeps its address from being
// reused. Deleted AppTypes' entries are dropped when the map outgrows the store.
struct DecodeCache {
  std::mutex mu;
  std::unordered_map<std::string, std::pair<informer::ObjectPtr, std::shared_ptr<const AppType>>>
      apps;
  informer::ObjectPtr config_object;
  std::shared_ptr<const KStackConfig> config;
};

informer::IndexFunc stacks_by_app_index(std::string system_namespace) {
  return [system = std::move(system_namespace)](const informer::PackedValue& stack) {
    std::vector<std::string> out;
    std::string_view app = string_at(stack, {"spec", "app"});
    if (app.empty()) return out;
    std::string_view ns = informer::object_namespace(stack);
    std::string_view where = string_at(stack, {"spec", "appCatalog"});
    if (where == kCatalogLocal || where.empty()) out.push_back(informer::object_key(ns, app));
    if ((where == kCatalogSystem || where.empty()) && !(where.empty() && ns == system)) {
      out.push_back(informer::object_key(system, app));
    }
    return out;
  };
}

Catalog::Catalog(CatalogStores stores, CatalogOptions options)
    : stores_(stores), options_(std::move(options)), cache_(std::make_shared<DecodeCache>()) {
  if (stores_.stacks != nullptr) {
    stores_.stacks->add_index(std::string(kStacksByAppIndex),
                              stacks_by_app_index(options_.system_namespace));
  }
}

std::string Catalog::catalog_namespace(std::string_view stack_namespace,
                                       std::string_view app_catalog) const {
  if (app_catalog == kCatalogLocal) return std::string(stack_namespace);
  if (app_catalog == kCatalogSystem) return options_.system_namespace;
  return {};
}

std::shared_ptr<const AppType> Catalog::decoded_app(const std::string& key) const {
  auto obj = stores_.apptypes->get(key);
  if (obj == nullptr) return nullptr;
  {
    std::lock_guard lock(cache_->mu);
    auto it = cache_->apps.find(key);
    if (it != cache_->apps.end() && it->second.first == obj) return it->second.second;
  }
  FieldErrors ignored;  // the cache holds admitted objects; decode what is there
  auto app = std::make_shared<const AppType>(decode_apptype(obj->to_value(), ignored));
  const std::size_t limit = 2 * stores_.apptypes->size() + 64;
  std::lock_guard lock(cache_->mu);
  if (cache_->apps.size() >= limit) cache_->apps.clear();
  cache_->apps.insert_or_assign(key, std::pair(std::move(obj), app));
  return app;
}

std::optional<FoundAppRef> Catalog::find_app_ref(
    std::string_view stack_namespace, std::string_view app_name,
    std::optional<std::string_view> app_catalog) const {
  if (stores_.apptypes == nullptr || app_name.empty()) return std::nullopt;
  auto look = [&](std::string_view where) -> std::optional<FoundAppRef> {
    std::string ns = catalog_namespace(stack_namespace, where);
    if (ns.empty()) return std::nullopt;
    auto app = decoded_app(informer::object_key(ns, app_name));
    if (app == nullptr) return std::nullopt;
    return FoundAppRef{std::move(app), std::string(where), std::move(ns)};
  };
  if (app_catalog) return look(*app_catalog);
  if (auto local = look(kCatalogLocal)) return local;
  return look(kCatalogSystem);
}

std::optional<FoundAppRef> Catalog::find_app_ref(const Stack& stack) const {
  std::optional<std::string_view> where;
  if (stack.spec.app_catalog && !stack.spec.app_catalog->empty()) where = *stack.spec.app_catalog;
  return find_app_ref(stack.metadata.namespace_name, stack.spec.app, where);
}

std::optional<FoundApp> Catalog::find_app(std::string_view stack_namespace,
                                          std::string_view app_name,
                                          std::optional<std::string_view> app_catalog) const {
  auto found = find_app_ref(stack_namespace, app_name, app_catalog);
  if (!found) return std::nullopt;
  return FoundApp{*found->app, std::move(found->catalog), std::move(found->namespace_name)};
}

std::optional<FoundApp> Catalog::find_app(const Stack& stack) const {
  std::optional<std::string_view> where;
  if (stack.spec.app_catalog && !stack.spec.app_catalog->empty()) where = *stack.spec.app_catalog;
  return find_app(stack.metadata.namespace_name, stack.spec.app, where);
}

std::vector<AppType> Catalog::apps_in(std::string_view namespace_name) const {
  std::vector<AppType> out;
  if (stores_.apptypes == nullptr) return out;
  for (const auto& obj : stores_.apptypes->list()) {
    if (informer::object_namespace(*obj) != namespace_name) continue;
    FieldErrors ignored;
    out.push_back(decode_apptype(obj->to_value(), ignored));
  }
  std::sort(out.begin(), out.end(),
            [](const AppType& a, const AppType& b) { return a.metadata.name < b.metadata.name; });
  return out;
}

std::vector<informer::ObjectPtr> Catalog::stacks_using(std::string_view app_namespace,
                                                       std::string_view app_name) const {
  if (stores_.stacks == nullptr) return {};
  auto out =
      stores_.stacks->by_index(kStacksByAppIndex, informer::object_key(app_namespace, app_name));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return informer::object_key(*a) < informer::object_key(*b);
  });
  return out;
}

std::shared_ptr<const KStackConfig> Catalog::config_ref() const {
  if (stores_.configs == nullptr) return nullptr;
  auto obj =
      stores_.configs->get(informer::object_key(options_.system_namespace, options_.config_name));
  if (obj == nullptr) return nullptr;
  {
    std::lock_guard lock(cache_->mu);
    if (cache_->config_object == obj) return cache_->config;
  }
  FieldErrors ignored;
  auto config =
      std::make_shared<const KStackConfig>(decode_kstack_config(obj->to_value(), ignored));
  std::lock_guard lock(cache_->mu);
  cache_->config_object = std::move(obj);
  cache_->config = config;
  return config;
}

std::optional<KStackConfig> Catalog::config() const {
  auto config = config_ref();
  if (config == nullptr) return std::nullopt;
  return *config;
}

bool Catalog::storage_class_exists(std::string_view name) const {
  return stores_.storage_classes != nullptr &&
         stores_.storage_classes->get(std::string(name)) != nullptr;
}

std::optional<std::string> Catalog::cluster_default_storage_class() const {
  if (stores_.storage_classes == nullptr) return std::nullopt;
  informer::ObjectPtr best;
  for (const auto& sc : stores_.storage_classes->list()) {
    bool is_default =
        string_at(*sc, {"metadata", "annotations", kDefaultClassAnnotation}) == "true" ||
        string_at(*sc, {"metadata", "annotations", kBetaDefaultClassAnnotation}) == "true";
    if (!is_default) continue;
    // Newest wins (RFC 3339 timestamps compare as strings); the name breaks ties so the
    // answer never depends on the store's iteration order.
    auto key = [](const informer::PackedValue& o) {
      return std::pair(string_at(o, {"metadata", "creationTimestamp"}), informer::object_name(o));
    };
    if (best == nullptr || key(*sc) > key(*best)) best = sc;
  }
  if (best == nullptr) return std::nullopt;
  return std::string(informer::object_name(*best));
}

std::optional<std::string> Catalog::default_storage_class() const {
  if (auto cfg = config_ref(); cfg && cfg->spec.default_storage_class_name &&
                               !cfg->spec.default_storage_class_name->empty()) {
    return cfg->spec.default_storage_class_name;
  }
  return cluster_default_storage_class();
}

}  // namespace kstack::catalog
