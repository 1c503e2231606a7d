// Cached objects in one exactly-sized block each. A DOM parsed with the default storage is a
// malloc per object table, array and long string: with malloc's per-chunk header and rounding
// that is most of a cached object's size. compact() copies a DOM into a FittedResource, which
// owns one buffer of exactly the size the copy needs (measured by a first, counting copy).
//
// A Boost.JSON copy (`value(const value&)`) allocates from the SOURCE's storage, so code that
// copies part of a cached object allocates from that object's resource and holds a reference
// to it. Hence the resource is reference counted (the copy keeps it alive after the cache
// dropped the object) and never grows: once the buffer is filled, every further allocation
// goes to the global heap and is freed by its deallocate (a deallocation inside the buffer is
// a no-op), so a cached object copied on every resync costs nothing once the copies are gone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <boost/json/memory_resource.hpp>
#include <boost/json/value.hpp>

namespace kstack::informer {

class FittedResource final : public boost::json::memory_resource {
 public:
  // `self`, if given, receives this resource's address (make_shared_resource wraps it).
  explicit FittedResource(std::size_t size, FittedResource** self = nullptr);
  ~FittedResource() override;
  FittedResource(const FittedResource&) = delete;
  FittedResource& operator=(const FittedResource&) = delete;

  std::size_t buffer_size() const { return size_; }
  // Bytes handed out from the buffer so far (== buffer_size() after a compact()).
  std::size_t buffer_used() const { return used_; }
  // Bytes allocated on the global heap (beyond the buffer) and not yet deallocated.
  std::size_t outside_bytes() const { return outside_.load(std::memory_order_relaxed); }
  // No more allocations from the buffer, even if some bytes are left (alignment): after this,
  // concurrent allocations (copies made by several readers at once) touch only the heap.
  void seal() { used_ = size_; }

 private:
  void* do_allocate(std::size_t n, std::size_t align) override;
  void do_deallocate(void* p, std::size_t n, std::size_t align) override;
  bool do_is_equal(const boost::json::memory_resource& other) const noexcept override;

  char* buffer_;
  std::uint32_t size_;
  std::uint32_t used_ = 0;
  std::atomic<std::size_t> outside_{0};
};

struct Compacted {
  boost::json::value value;
  // The resource value's storage counts references to; valid while value or any copy made
  // from it (with its storage) lives. For tests and benchmarks.
  const FittedResource* resource = nullptr;
};

// A copy of `object` whose whole DOM is one block of a shared FittedResource.
Compacted compact(const boost::json::value& object);

}  // namespace kstack::informer
