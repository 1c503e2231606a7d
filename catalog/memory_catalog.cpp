#include "catalog/memory_catalog.h"

#include <boost/json.hpp>

namespace kstack::catalog {
namespace json = boost::json;

MemoryCatalog::MemoryCatalog(CatalogOptions options, bool know_storage_classes)
    : know_storage_classes_(know_storage_classes) {
  CatalogStores stores;
  stores.apptypes = &apptypes_;
  stores.stacks = &stacks_;
  stores.configs = &configs_;
  stores.storage_classes = know_storage_classes_ ? &storage_classes_ : nullptr;
  catalog_ = std::make_unique<Catalog>(stores, std::move(options));
}

informer::Store* MemoryCatalog::store_for(std::string_view kind) {
  if (kind == kAppTypeKind) return &apptypes_;
  if (kind == kStackKind) return &stacks_;
  if (kind == kKStackConfigKind) return &configs_;
  if (kind == "StorageClass") return &storage_classes_;
  return nullptr;
}

bool MemoryCatalog::add(json::value object) {
  const auto* o = object.if_object();
  const auto* kind = o ? o->if_contains("kind") : nullptr;
  if (kind == nullptr || !kind->is_string()) return false;
  auto* store = store_for(kind->get_string());
  if (store == nullptr) return false;
  store->upsert(informer::pack(object));
  return true;
}

bool MemoryCatalog::remove(std::string_view kind, const std::string& key) {
  auto* store = store_for(kind);
  return store != nullptr && store->erase(key) != nullptr;
}

}  // namespace kstack::catalog
