#include "kube/watch.h"

#include <cctype>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace kstack::kube {

std::string_view to_string(WatchEvent::Type type) {
  switch (type) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

WatchDecoder::WatchDecoder(std::size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

Result<void> WatchDecoder::feed(std::string_view bytes, std::vector<WatchEvent>& out) {
  while (!bytes.empty()) {
    if (in_value_bytes_ == 0) {
      // Skip the newlines and spaces between events without starting a value.
      std::size_t skip = 0;
      while (skip < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[skip])) != 0) {
        ++skip;
      }
      bytes.remove_prefix(skip);
      if (bytes.empty()) break;
    }
    boost::system::error_code ec;
    const std::size_t used = parser_.write_some(bytes, ec);
    if (ec) {
      return make_error(ErrorKind::kDecode,
                        fmt::format("watch stream: malformed JSON at byte {} of an event: {}",
                                    in_value_bytes_ + used, ec.message()));
    }
    const std::string_view consumed = bytes.substr(0, used);
    bytes.remove_prefix(used);
    const bool done = parser_.done();
    // A finished value may have swallowed the whitespace after it: that is not the event's.
    std::size_t size = in_value_bytes_ + used;
    if (done) {
      std::size_t trailing = 0;
      while (trailing < consumed.size() && std::isspace(static_cast<unsigned char>(
                                               consumed[consumed.size() - 1 - trailing])) != 0) {
        ++trailing;
      }
      size -= trailing;
    }
    in_value_bytes_ += used;
    if (size > max_event_bytes_) {
      return make_error(ErrorKind::kResponseTooLarge,
                        fmt::format("watch stream: event exceeds {} bytes", max_event_bytes_));
    }
    if (done) {
      if (auto r = finish_value(out); !r) return r;
    }
  }
  return {};
}

Result<void> WatchDecoder::finish_value(std::vector<WatchEvent>& out) {
  boost::json::value v = parser_.release();
  parser_.reset();
  in_value_bytes_ = 0;
  auto event = to_watch_event(std::move(v));
  if (!event) return tl::unexpected(std::move(event.error()));
  out.push_back(std::move(*event));
  return {};
}

Result<WatchEvent> to_watch_event(boost::json::value line) {
  auto* obj = line.if_object();
  const boost::json::value* type = obj ? obj->if_contains("type") : nullptr;
  boost::json::value* object = obj ? obj->if_contains("object") : nullptr;
  if (type == nullptr || !type->is_string() || object == nullptr) {
    return make_error(ErrorKind::kDecode,
                      "watch stream: event without \"type\" string and \"object\"");
  }
  const std::string_view t = type->get_string();
  WatchEvent ev;
  if (t == "ADDED") {
    ev.type = WatchEvent::Type::kAdded;
  } else if (t == "MODIFIED") {
    ev.type = WatchEvent::Type::kModified;
  } else if (t == "DELETED") {
    ev.type = WatchEvent::Type::kDeleted;
  } else if (t == "BOOKMARK") {
    ev.type = WatchEvent::Type::kBookmark;
  } else if (t == "ERROR") {
    Error e = error_from_response(0, boost::json::serialize(*object));
    e.message = "watch: " + e.message;
    return tl::unexpected(std::move(e));
  } else {
    return make_error(ErrorKind::kDecode,
                      fmt::format("watch stream: unknown event type \"{}\"", t));
  }
  if (!object->is_object()) {
    // Only a Kubernetes object has the metadata a cache keys and orders by.
    return make_error(ErrorKind::kDecode, fmt::format("watch stream: {} event's \"object\" is {}, "
                                                      "not an object",
                                                      t, boost::json::to_string(object->kind())));
  }
  ev.object = std::move(*object);
  return ev;
}

}  // namespace kstack::kube
