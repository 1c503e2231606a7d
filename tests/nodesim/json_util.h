// Small read helpers over Kubernetes objects held as Boost.JSON values, and the API's time
// formats. Missing or mistyped fields read as empty: callers treat the API's objects as data
// that may lack anything.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace kstack::nodesim {

// The value at a JSON pointer ("/spec/nodeName"), or null when absent.
const boost::json::value* find(const boost::json::value& v, std::string_view pointer);
std::string str(const boost::json::value& v, std::string_view pointer);
const boost::json::object* obj(const boost::json::value& v, std::string_view pointer);
const boost::json::array* arr(const boost::json::value& v, std::string_view pointer);
bool flag(const boost::json::value& v, std::string_view pointer);  // false unless true
// Map of string values (labels, annotations, nodeSelector); non-string values are skipped.
std::map<std::string, std::string> string_map(const boost::json::value& v,
                                              std::string_view pointer);

// metav1.Time: RFC 3339 with second precision, UTC ("2024-05-01T10:00:00Z").
std::string format_time(std::chrono::system_clock::time_point t);
// metav1.MicroTime: microsecond precision ("2024-05-01T10:00:00.123456Z").
std::string format_micro_time(std::chrono::system_clock::time_point t);
inline std::string now_time() { return format_time(std::chrono::system_clock::now()); }

// A random RFC 4122 version 4 UUID.
std::string random_uuid();

}  // namespace kstack::nodesim
