// A member of a JSON object by key, for objects read many times over by key (the catalog's
// decoders look up every field a model has, present or not). Boost 1.81's object::if_contains
// is three calls deep (if_contains, find, find_in_object, none inline) and, in an object of a
// few members — almost every object Kubernetes sends — scans them comparing sizes and then
// calling memcmp. This scans the same way inline, comparing the first byte before calling
// memcmp; a large object (Boost hashes its keys) still goes to if_contains.
#pragma once

#include <cstring>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace kstack::kube {

inline const boost::json::value* member(const boost::json::object& object,
                                        std::string_view key) noexcept {
  // Boost scans objects of up to 18 members and hashes larger ones (detail::small_object_size_).
  constexpr std::size_t kScanned = 18;
  if (object.size() > kScanned || key.empty()) return object.if_contains(key);
  for (const auto& kv : object) {
    const auto k = kv.key();
    if (k.size() == key.size() && k.front() == key.front() &&
        std::memcmp(k.data(), key.data(), key.size()) == 0) {
      return &kv.value();
    }
  }
  return nullptr;
}

}  // namespace kstack::kube
