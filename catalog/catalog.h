// The catalog as the webhook and the reconciler see it: lookups over the operator's informer
// caches (never process-local bookkeeping, so every replica answers the same and a restart
// forgets nothing). Which AppType a Stack uses (`local` = the Stack's namespace, then
// `system` = the operator's), which Stacks use an AppType (a Store index), the KStackConfig,
// and StorageClasses. Unit tests and `kstack validate` fill plain informer::Stores instead of
// a cluster (see catalog/memory_catalog.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model.h"
#include "informer/store.h"

namespace kstack::catalog {

// Index on the Stacks store: "appNamespace/appName" of the AppType a Stack uses.
inline constexpr std::string_view kStacksByAppIndex = "kstack-stacks-by-app";
// A Stack without spec.appCatalog (not yet defaulted) is indexed under both places it could
// resolve to, so that neither AppType can be deleted from under it.
informer::IndexFunc stacks_by_app_index(std::string system_namespace);

inline constexpr std::string_view kDefaultClassAnnotation =
    "storageclass.kubernetes.io/is-default-class";
inline constexpr std::string_view kBetaDefaultClassAnnotation =
    "storageclass.beta.kubernetes.io/is-default-class";

struct CatalogOptions {
  std::string system_namespace = std::string(kDefaultOperatorNamespace);
  std::string config_name = std::string(kConfigName);
};

// Non-owning; the stores must outlive the Catalog. Any may be null: a missing store holds
// nothing, except storage_classes, where null means "unknown" (offline validation) and the
// storage class checks are skipped.
struct CatalogStores {
  const informer::Store* apptypes = nullptr;
  informer::Store* stacks = nullptr;  // the Catalog registers kStacksByAppIndex on it
  const informer::Store* configs = nullptr;
  const informer::Store* storage_classes = nullptr;
};

struct FoundApp {
  AppType app;
  std::string catalog;         // kCatalogLocal or kCatalogSystem
  std::string namespace_name;  // where it was found
};

// FoundApp sharing the decoded AppType (see Catalog::find_app_ref).
struct FoundAppRef {
  std::shared_ptr<const AppType> app;  // never null
  std::string catalog;
  std::string namespace_name;
};

struct DecodeCache;

class Catalog {
 public:
  explicit Catalog(CatalogStores stores, CatalogOptions options = {});

  const std::string& system_namespace() const { return options_.system_namespace; }

  // The namespace an appCatalog value points at (empty for an unknown value).
  std::string catalog_namespace(std::string_view stack_namespace,
                                std::string_view app_catalog) const;

  // With app_catalog: only that place. Without: local first, then system.
  std::optional<FoundApp> find_app(std::string_view stack_namespace, std::string_view app_name,
                                   std::optional<std::string_view> app_catalog = {}) const;
  std::optional<FoundApp> find_app(const Stack& stack) const;
  // The same lookups without copying the AppType: the decoded object is shared, decoded once
  // per cached object (a new resourceVersion is a new object in the store) and kept only
  // while the store holds that object. What the admission webhook uses on every request.
  std::optional<FoundAppRef> find_app_ref(std::string_view stack_namespace,
                                          std::string_view app_name,
                                          std::optional<std::string_view> app_catalog = {}) const;
  std::optional<FoundAppRef> find_app_ref(const Stack& stack) const;

  // Every AppType of one namespace, sorted by name (what may be upgraded to what is decided
  // among them: upgradeFrom names AppTypes of the same namespace).
  std::vector<AppType> apps_in(std::string_view namespace_name) const;

  // Stacks whose AppType is app_namespace/app_name, sorted by key.
  std::vector<informer::ObjectPtr> stacks_using(std::string_view app_namespace,
                                                std::string_view app_name) const;

  // `kstack-config` in the system namespace, if it exists (decoded tolerantly).
  std::optional<KStackConfig> config() const;
  // The same, shared and decoded once per cached object (null when there is none).
  std::shared_ptr<const KStackConfig> config_ref() const;

  bool knows_storage_classes() const { return stores_.storage_classes != nullptr; }
  bool storage_class_exists(std::string_view name) const;
  // The class marked default by annotation; with several, the newest (as Kubernetes ≥ 1.26).
  std::optional<std::string> cluster_default_storage_class() const;
  // What a role's storage without a class gets: KStackConfig's defaultStorageClassName,
  // else the cluster default.
  std::optional<std::string> default_storage_class() const;

 private:
  std::shared_ptr<const AppType> decoded_app(const std::string& key) const;

  CatalogStores stores_;
  CatalogOptions options_;
  std::shared_ptr<DecodeCache> cache_;  // shared by copies, which see the same stores
};

}  // namespace kstack::catalog
