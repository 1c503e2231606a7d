// Deep equality of JSON values, as boost::json's operator== defines it (objects regardless of
// member order; int64 and uint64 compare by value; a double equals only a double of the same
// value) but without its copies: Boost 1.81's object::equal walks `for (auto e : *this)`,
// copying every member (and, recursively, everything under it) into the object's storage once
// per level. Comparing two specs cost more than decoding them; these functions allocate nothing.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace kstack::kube {

bool json_equal(const boost::json::value& a, const boost::json::value& b) noexcept;
bool json_equal(const boost::json::object& a, const boost::json::object& b) noexcept;
bool json_equal(const boost::json::array& a, const boost::json::array& b) noexcept;

}  // namespace kstack::kube
