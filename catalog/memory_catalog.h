// A Catalog over stores it owns, filled by hand: for `kstack validate`/`render` (objects read
// from files) and for unit tests (no cluster). Objects are routed to a store by kind.
#pragma once

#include <memory>
#include <string_view>

#include <boost/json/value.hpp>

#include "catalog/catalog.h"
#include "informer/store.h"

namespace kstack::catalog {

class MemoryCatalog {
 public:
  // With know_storage_classes = false the catalog reports StorageClasses as unknown and the
  // storage class rules are skipped (offline validation knows no cluster).
  explicit MemoryCatalog(CatalogOptions options = {}, bool know_storage_classes = true);
  MemoryCatalog(const MemoryCatalog&) = delete;
  MemoryCatalog& operator=(const MemoryCatalog&) = delete;

  // AppType, Stack, KStackConfig or StorageClass (by `kind`); false for any other kind.
  bool add(boost::json::value object);
  // Removes by kind and key; false when there was nothing to remove.
  bool remove(std::string_view kind, const std::string& key);

  const Catalog& catalog() const { return *catalog_; }
  informer::Store& apptypes() { return apptypes_; }
  informer::Store& stacks() { return stacks_; }
  informer::Store& configs() { return configs_; }
  informer::Store& storage_classes() { return storage_classes_; }

 private:
  informer::Store* store_for(std::string_view kind);

  informer::Store apptypes_;
  informer::Store stacks_;
  informer::Store configs_;
  informer::Store storage_classes_;
  bool know_storage_classes_;
  std::unique_ptr<Catalog> catalog_;
};

}  // namespace kstack::catalog
