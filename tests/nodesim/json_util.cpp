// JSON read helpers and time formats (see json_util.h).
#include "tests/nodesim/json_util.h"

#include <ctime>
#include <random>

#include <fmt/format.h>

namespace kstack::nodesim {

namespace json = boost::json;

const json::value* find(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const json::value* p = v.find_pointer(pointer, ec);
  if (ec || p == nullptr || p->is_null()) return nullptr;
  return p;
}

std::string str(const json::value& v, std::string_view pointer) {
  const auto* p = find(v, pointer);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

const json::object* obj(const json::value& v, std::string_view pointer) {
  const auto* p = find(v, pointer);
  return p != nullptr ? p->if_object() : nullptr;
}

const json::array* arr(const json::value& v, std::string_view pointer) {
  const auto* p = find(v, pointer);
  return p != nullptr ? p->if_array() : nullptr;
}

bool flag(const json::value& v, std::string_view pointer) {
  const auto* p = find(v, pointer);
  return p != nullptr && p->is_bool() && p->get_bool();
}

std::map<std::string, std::string> string_map(const json::value& v, std::string_view pointer) {
  std::map<std::string, std::string> out;
  if (const auto* o = obj(v, pointer)) {
    for (const auto& [k, val] : *o) {
      if (val.is_string()) out.emplace(std::string(k), std::string(val.get_string()));
    }
  }
  return out;
}

namespace {

std::tm utc(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm;
}

}  // namespace

std::string format_time(std::chrono::system_clock::time_point t) {
  std::tm tm = utc(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string format_micro_time(std::chrono::system_clock::time_point t) {
  std::tm tm = utc(t);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()) %
                std::chrono::seconds(1);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros.count());
}

std::string random_uuid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uint64_t hi = rng();
  std::uint64_t lo = rng();
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // variant 10
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF,
                     hi & 0xFFFF, lo >> 48, lo & 0xFFFFFFFFFFFFULL);
}

}  // namespace kstack::nodesim
