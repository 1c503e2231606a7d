// How the informer caches hold objects: each one packed into a single block of bytes that
// is read in place, with a read-only API shaped like Boost.JSON's (kind(), if_object(),
// if_contains(), get_string(), find_pointer(), iteration), so that code reading a cached object
// reads like code reading a boost::json::value.
//
// Why not a boost::json::value per cached object: a DOM spends 24 B per value, 40 B per object
// member and a table per object or array, on top of the string bytes, so a ConfigMap of 1.2 KB
// of JSON took ~1.75 KB as a DOM even in one exactly-sized block. The packed form is about the
// size of the object's JSON (a 4-byte header per value, a 4-byte offset per member or
// element), yet keeps O(1) access to an array element and a linear scan over an object's keys
// (objects in Kubernetes have few keys), with no parse on read. Nothing off the shelf does
// this for Boost.JSON (simdjson's on-demand and DOM tapes are parse formats, not a cache you
// can read after the input is gone, and neither is a Debian package at a usable version).
//
// Layout (every node 4-byte aligned; offsets are relative to the node that holds them):
//   header u32: kind (3 bits) | payload (29 bits)
//   null                      [header]
//   bool                      [header, payload = 0/1]
//   int64, uint64, double     [header][8 bytes]
//   string                    [header, payload = length][bytes][NUL][padding to 4]
//   array                     [header, payload = size][u32 offset of element i]...[elements]
//   object                    [header, payload = size][u32 offset of member i]...
//                             [member i: key, then value]...
//   member key                a string node, or for a well-known key (one of about 200 field
//                             names of the kinds kstack caches: "metadata", "name", "status",
//                             "containerPort", ...) just [header, payload = kInternedKey | id]
//                             naming its entry in a table the program holds once, which saves
//                             its bytes in every object ("creationTimestamp": 24 B -> 4 B).
// A cached object is immutable: nothing here writes to a packed node.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>

#include <boost/json/kind.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>

namespace kstack::informer {

class PackedObject;
class PackedArray;
class PackedString;

namespace packed_detail {
inline std::uint32_t word(const void* at) {
  std::uint32_t w;
  std::memcpy(&w, at, sizeof w);
  return w;
}
inline const char* bytes(const void* p) { return static_cast<const char*>(p); }
inline constexpr std::uint32_t kKindBits = 3;
inline constexpr std::uint32_t kMaxPayload = (std::uint32_t{1} << (32 - kKindBits)) - 1;
// A member key's payload with this bit is an interned key's id, not a length.
inline constexpr std::uint32_t kInternedKey = std::uint32_t{1} << (31 - kKindBits);
// The well-known key of `id` (ids come from the packer, which only writes valid ones).
std::string_view interned_key(std::uint32_t id);
}  // namespace packed_detail

// One value of a packed object. Never constructed nor copied: only referred to, as the
// Boost.JSON values of a DOM are.
class PackedValue {
 public:
  PackedValue() = delete;
  PackedValue(const PackedValue&) = delete;
  PackedValue& operator=(const PackedValue&) = delete;

  boost::json::kind kind() const {
    return static_cast<boost::json::kind>(header() & ((1u << packed_detail::kKindBits) - 1));
  }
  bool is_null() const { return kind() == boost::json::kind::null; }
  bool is_bool() const { return kind() == boost::json::kind::bool_; }
  bool is_int64() const { return kind() == boost::json::kind::int64; }
  bool is_uint64() const { return kind() == boost::json::kind::uint64; }
  bool is_double() const { return kind() == boost::json::kind::double_; }
  bool is_number() const { return is_int64() || is_uint64() || is_double(); }
  bool is_string() const { return kind() == boost::json::kind::string; }
  bool is_array() const { return kind() == boost::json::kind::array; }
  bool is_object() const { return kind() == boost::json::kind::object; }
  bool is_primitive() const { return !is_array() && !is_object(); }
  bool is_structured() const { return is_array() || is_object(); }

  const PackedObject* if_object() const;
  const PackedArray* if_array() const;
  const PackedString* if_string() const;
  // Unchecked (the caller tested the kind), as Boost.JSON's get_*.
  const PackedObject& get_object() const;
  const PackedArray& get_array() const;
  const PackedString& get_string() const;
  bool get_bool() const { return payload() != 0; }
  std::int64_t get_int64() const { return number<std::int64_t>(); }
  std::uint64_t get_uint64() const { return number<std::uint64_t>(); }
  double get_double() const { return number<double>(); }
  // Checked: throw std::invalid_argument naming the kind expected and the kind found.
  const PackedObject& as_object() const;
  const PackedArray& as_array() const;
  const PackedString& as_string() const;
  bool as_bool() const;
  std::int64_t as_int64() const;

  // The number converted to T without loss, as boost::json::value::to_number<T>(ec).
  template <class T>
  T to_number(std::error_code& ec) const;

  // RFC 6901 (with ~0 and ~1); nullptr and `ec` set when the path does not lead to a value.
  const PackedValue* find_pointer(std::string_view pointer, std::error_code& ec) const;

  // The DOM of this value (allocated from `sp`), for code that needs one: decoders, writes.
  boost::json::value to_value(boost::json::storage_ptr sp = {}) const;

 protected:
  std::uint32_t header() const { return packed_detail::word(this); }
  std::uint32_t payload() const { return header() >> packed_detail::kKindBits; }
  const char* base() const { return packed_detail::bytes(this); }

 private:
  template <class T>
  T number() const {
    T out;
    std::memcpy(&out, base() + 4, sizeof out);
    return out;
  }
};

class PackedString : public PackedValue {
 public:
  std::size_t size() const { return payload(); }
  bool empty() const { return size() == 0; }
  const char* data() const { return base() + 4; }
  const char* c_str() const { return data(); }  // packed with a NUL after the bytes
  std::string_view subview() const { return {data(), size()}; }
  operator std::string_view() const { return subview(); }  // NOLINT: as boost::json::string
  std::string str() const { return std::string(subview()); }

  friend bool operator==(const PackedString& a, std::string_view b) { return a.subview() == b; }
  friend bool operator==(const PackedString& a, const PackedString& b) {
    return a.subview() == b.subview();
  }
  friend bool operator==(const PackedString& a, const char* b) {
    return a.subview() == std::string_view(b);
  }
  friend bool operator==(const PackedString& a, const std::string& b) {
    return a.subview() == std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const PackedString& a, std::string_view b) {
    return a.subview() <=> b;
  }
};

// One member of a packed object: the key's node (a string node or an interned key's id),
// followed by the value's node.
class PackedMember : public PackedValue {
 public:
  std::string_view key() const {
    const std::uint32_t p = payload();
    if ((p & packed_detail::kInternedKey) != 0) {
      return packed_detail::interned_key(p & ~packed_detail::kInternedKey);
    }
    return {base() + 4, p};
  }
  const PackedValue& value() const {
    const std::uint32_t p = payload();
    const std::size_t key_size =
        (p & packed_detail::kInternedKey) != 0 ? 4 : (4 + p + 1 + 3) & ~std::size_t{3};
    return *reinterpret_cast<const PackedValue*>(base() + key_size);
  }
  // Structured bindings: auto& [key, value] = member.
  template <std::size_t I>
  decltype(auto) get() const {
    if constexpr (I == 0) {
      return key();
    } else {
      return value();
    }
  }
};

namespace packed_detail {
// The iterator of a packed array (over its elements) and of a packed object (over its members):
// an index into the container, which gives the element (element_of, found by ADL).
template <class Container, class Element>
class IndexIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = Element;
  using difference_type = std::ptrdiff_t;
  using pointer = const Element*;
  using reference = const Element&;
  IndexIterator() = default;
  IndexIterator(const Container* c, std::size_t i) : c_(c), i_(i) {}
  reference operator*() const { return element_of(*c_, i_); }
  pointer operator->() const { return &element_of(*c_, i_); }
  reference operator[](difference_type n) const {
    return element_of(*c_, i_ + static_cast<std::size_t>(n));
  }
  IndexIterator& operator++() { return ++i_, *this; }
  IndexIterator operator++(int) {
    auto t = *this;
    ++i_;
    return t;
  }
  IndexIterator& operator--() { return --i_, *this; }
  IndexIterator operator--(int) {
    auto t = *this;
    --i_;
    return t;
  }
  IndexIterator& operator+=(difference_type n) { return i_ += n, *this; }
  IndexIterator& operator-=(difference_type n) { return i_ -= n, *this; }
  friend IndexIterator operator+(IndexIterator it, difference_type n) { return it += n; }
  friend IndexIterator operator+(difference_type n, IndexIterator it) { return it += n; }
  friend IndexIterator operator-(IndexIterator it, difference_type n) { return it -= n; }
  friend difference_type operator-(const IndexIterator& a, const IndexIterator& b) {
    return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
  }
  friend bool operator==(const IndexIterator& a, const IndexIterator& b) { return a.i_ == b.i_; }
  friend auto operator<=>(const IndexIterator& a, const IndexIterator& b) { return a.i_ <=> b.i_; }

 private:
  const Container* c_ = nullptr;
  std::size_t i_ = 0;
};
}  // namespace packed_detail

class PackedArray : public PackedValue {
 public:
  using iterator = packed_detail::IndexIterator<PackedArray, PackedValue>;
  using const_iterator = iterator;

  std::size_t size() const { return payload(); }
  bool empty() const { return size() == 0; }
  const PackedValue& operator[](std::size_t i) const {
    return *reinterpret_cast<const PackedValue*>(base() + packed_detail::word(base() + 4 + 4 * i));
  }
  const PackedValue& at(std::size_t i) const;  // std::out_of_range past the end
  const PackedValue* if_contains(std::size_t i) const { return i < size() ? &(*this)[i] : nullptr; }
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }
};

class PackedObject : public PackedValue {
 public:
  using iterator = packed_detail::IndexIterator<PackedObject, PackedMember>;
  using const_iterator = iterator;

  std::size_t size() const { return payload(); }
  bool empty() const { return size() == 0; }
  const PackedMember& member(std::size_t i) const {
    return *reinterpret_cast<const PackedMember*>(base() + packed_detail::word(base() + 4 + 4 * i));
  }
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }
  iterator find(std::string_view key) const;
  const PackedValue* if_contains(std::string_view key) const {
    auto it = find(key);
    return it == end() ? nullptr : &it->value();
  }
  bool contains(std::string_view key) const { return find(key) != end(); }
  std::size_t count(std::string_view key) const { return contains(key) ? 1 : 0; }
  // std::out_of_range naming the key when absent.
  const PackedValue& at(std::string_view key) const;
};

// What the iterators of packed_detail::IndexIterator read.
inline const PackedValue& element_of(const PackedArray& a, std::size_t i) { return a[i]; }
inline const PackedMember& element_of(const PackedObject& o, std::size_t i) { return o.member(i); }

inline const PackedObject* PackedValue::if_object() const {
  return is_object() ? static_cast<const PackedObject*>(this) : nullptr;
}
inline const PackedArray* PackedValue::if_array() const {
  return is_array() ? static_cast<const PackedArray*>(this) : nullptr;
}
inline const PackedString* PackedValue::if_string() const {
  return is_string() ? static_cast<const PackedString*>(this) : nullptr;
}
inline const PackedObject& PackedValue::get_object() const {
  return static_cast<const PackedObject&>(*this);
}
inline const PackedArray& PackedValue::get_array() const {
  return static_cast<const PackedArray&>(*this);
}
inline const PackedString& PackedValue::get_string() const {
  return static_cast<const PackedString&>(*this);
}

// Deep equality with a DOM: same kinds (numbers compare by value across int64/uint64 as
// Boost.JSON's operator== does), same object members in any order, same elements in order.
bool operator==(const PackedValue& packed, const boost::json::value& dom);
bool operator==(const PackedValue& a, const PackedValue& b);

// A packed value owned with the block it lives in (a std::shared_ptr aliasing the block).
using PackedPtr = std::shared_ptr<const PackedValue>;

// Packs `value` into one block of exactly the bytes it needs. std::length_error if a string or
// container is larger than the format holds (2^29 - 1 bytes or entries; the client's response
// size limit is far below).
PackedPtr pack(const boost::json::value& value);
// The bytes `pack(value)` allocates for the packed value (not counting the shared_ptr's
// control block, which shares the allocation).
std::size_t packed_size(const boost::json::value& value);
// The block's size in bytes, as packed.
std::size_t packed_size(const PackedValue& value);

}  // namespace kstack::informer

template <>
struct std::tuple_size<kstack::informer::PackedMember> : std::integral_constant<std::size_t, 2> {};
template <>
struct std::tuple_element<0, kstack::informer::PackedMember> {
  using type = std::string_view;
};
template <>
struct std::tuple_element<1, kstack::informer::PackedMember> {
  using type = const kstack::informer::PackedValue&;
};
