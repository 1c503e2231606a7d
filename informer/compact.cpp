#include "informer/compact.h"

#include <array>
#include <cstdlib>
#include <limits>
#include <new>

#include <boost/json.hpp>

namespace kstack::informer {
namespace json = boost::json;

namespace {

constexpr std::size_t align_up(std::size_t n, std::size_t align) {
  return (n + align - 1) & ~(align - 1);
}

// The first copy: allocates from a monotonic arena and adds up the sizes exactly as
// FittedResource lays them out (same order, same alignment), from a base aligned like malloc's.
class CountingResource final : public json::memory_resource {
 public:
  explicit CountingResource(json::memory_resource* arena) : arena_(arena) {}
  std::size_t total() const { return total_; }

 private:
  void* do_allocate(std::size_t n, std::size_t align) override {
    total_ = align_up(total_, align) + n;
    return arena_->allocate(n, align);
  }
  void do_deallocate(void*, std::size_t, std::size_t) override {}
  bool do_is_equal(const json::memory_resource& other) const noexcept override {
    return this == &other;
  }
  json::memory_resource* arena_;
  std::size_t total_ = 0;
};

}  // namespace

FittedResource::FittedResource(std::size_t size, FittedResource** self)
    : buffer_(static_cast<char*>(::operator new(size == 0 ? 1 : size))),
      size_(static_cast<std::uint32_t>(size)) {
  if (self != nullptr) *self = this;
}

FittedResource::~FittedResource() { ::operator delete(buffer_); }

void* FittedResource::do_allocate(std::size_t n, std::size_t align) {
  // ::operator new's blocks are aligned for any fundamental type, so offsets aligned here are.
  if (align <= alignof(std::max_align_t)) {
    const std::size_t at = align_up(used_, align);
    if (at + n <= size_) {
      used_ = static_cast<std::uint32_t>(at + n);
      return buffer_ + at;
    }
  }
  void* p = ::operator new(n, std::align_val_t(align));
  outside_.fetch_add(n, std::memory_order_relaxed);
  return p;
}

void FittedResource::do_deallocate(void* p, std::size_t n, std::size_t align) {
  auto* c = static_cast<char*>(p);
  if (c >= buffer_ && c < buffer_ + size_) return;  // freed with the whole buffer
  outside_.fetch_sub(n, std::memory_order_relaxed);
  ::operator delete(p, std::align_val_t(align));
}

bool FittedResource::do_is_equal(const json::memory_resource& other) const noexcept {
  return this == &other;
}

Compacted compact(const json::value& object) {
  std::size_t size = 0;
  {
    alignas(std::max_align_t) std::array<unsigned char, 8192> initial;
    json::monotonic_resource arena(initial.data(), initial.size());
    CountingResource counting(&arena);
    json::value first(object, json::storage_ptr(&counting));
    size = counting.total();
  }
  if (size > std::numeric_limits<std::uint32_t>::max()) return {json::value(object), nullptr};
  FittedResource* resource = nullptr;
  json::storage_ptr sp = json::make_shared_resource<FittedResource>(size, &resource);
  Compacted out{json::value(object, sp), resource};
  resource->seal();
  return out;
}

}  // namespace kstack::informer
