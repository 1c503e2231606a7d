#include "catalog/catalog.h"

#include <algorithm>

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

std::string_view string_at(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* cur = &v;
  for (auto key : path) {
    const auto* o = cur->if_object();
    if (o == nullptr) return {};
    cur = o->if_contains(key);
    if (cur == nullptr) return {};
  }
  return cur->is_string() ? std::string_view(cur->get_string()) : std::string_view{};
}

}  // namespace

informer::IndexFunc stacks_by_app_index(std::string system_namespace) {
  return [system = std::move(system_namespace)](const json::value& stack) {
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
    : stores_(stores), options_(std::move(options)) {
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

std::optional<FoundApp> Catalog::find_app(std::string_view stack_namespace,
                                          std::string_view app_name,
                                          std::optional<std::string_view> app_catalog) const {
  if (stores_.apptypes == nullptr || app_name.empty()) return std::nullopt;
  auto look = [&](std::string_view where) -> std::optional<FoundApp> {
    std::string ns = catalog_namespace(stack_namespace, where);
    if (ns.empty()) return std::nullopt;
    auto obj = stores_.apptypes->get(informer::object_key(ns, app_name));
    if (obj == nullptr) return std::nullopt;
    FieldErrors ignored;  // the cache holds admitted objects; decode what is there
    return FoundApp{decode_apptype(*obj, ignored), std::string(where), std::move(ns)};
  };
  if (app_catalog) return look(*app_catalog);
  if (auto local = look(kCatalogLocal)) return local;
  return look(kCatalogSystem);
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
    out.push_back(decode_apptype(*obj, ignored));
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

std::optional<KStackConfig> Catalog::config() const {
  if (stores_.configs == nullptr) return std::nullopt;
  auto obj =
      stores_.configs->get(informer::object_key(options_.system_namespace, options_.config_name));
  if (obj == nullptr) return std::nullopt;
  FieldErrors ignored;
  return decode_kstack_config(*obj, ignored);
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
    auto key = [](const json::value& o) {
      return std::pair(string_at(o, {"metadata", "creationTimestamp"}), informer::object_name(o));
    };
    if (best == nullptr || key(*sc) > key(*best)) best = sc;
  }
  if (best == nullptr) return std::nullopt;
  return std::string(informer::object_name(*best));
}

std::optional<std::string> Catalog::default_storage_class() const {
  if (auto cfg = config(); cfg && cfg->spec.default_storage_class_name &&
                           !cfg->spec.default_storage_class_name->empty()) {
    return cfg->spec.default_storage_class_name;
  }
  return cluster_default_storage_class();
}

}  // namespace kstack::catalog
