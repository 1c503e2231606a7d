// Watch events and the incremental decoder for the API server's watch stream (one JSON object
// per event, arriving in arbitrary chunk splits).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "kube/error.h"
#include "kube/json_parser.h"

namespace kstack::kube {

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kAdded;
  boost::json::value object;
};

std::string_view to_string(WatchEvent::Type type);

// Called for each decoded event; return false to stop watching.
using WatchHandler = std::function<bool(WatchEvent&&)>;

// A single event larger than this is refused (the API server's own limit on objects is ~1.5 MiB
// in etcd; a 16 MiB cap leaves room and bounds memory against a broken stream).
inline constexpr std::size_t kMaxWatchEventBytes = 16u << 20;

class WatchDecoder {
 public:
  explicit WatchDecoder(std::size_t max_event_bytes = kMaxWatchEventBytes);

  // Feeds bytes; appends every event completed by them to `out`. An ERROR event (a Status from
  // the server, e.g. 410 Expired) or malformed data is returned as an error; after an error the
  // decoder must not be fed again.
  Result<void> feed(std::string_view bytes, std::vector<WatchEvent>& out);

  // True when no partial event is buffered (the stream may end cleanly here).
  bool at_boundary() const { return in_value_bytes_ == 0; }

 private:
  Result<void> finish_value(std::vector<WatchEvent>& out);

  // Exact numbers: Boost.JSON's own parser gives a number split across two feeds a different
  // double than the same number fed whole (kube/json_parser.h).
  JsonStreamParser parser_;
  std::size_t max_event_bytes_;
  std::size_t in_value_bytes_ = 0;
};

// Turns one decoded watch line into an event (or the error an ERROR event carries).
Result<WatchEvent> to_watch_event(boost::json::value line);

}  // namespace kstack::kube
