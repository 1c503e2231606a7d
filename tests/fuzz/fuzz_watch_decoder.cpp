// Fuzzes kube::WatchDecoder: the watch stream arrives in arbitrary chunk splits, so decoding
// an input fed at once and fed in pseudo-random chunks must give the same events (and an
// error in both or neither). Also exercises to_watch_event and, through ERROR events,
// error_from_response.
// Input: byte 0 picks the event size cap and seeds the chunk sizes, the rest is the stream.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <boost/json/serialize.hpp>

#include "kube/watch.h"

namespace {

using kstack::kube::WatchDecoder;
using kstack::kube::WatchEvent;

struct Decoded {
  std::vector<WatchEvent> events;
  bool ok = true;
  bool at_boundary = true;
};

// Feeds `stream` in chunks of 1..max_chunk bytes (max_chunk 0: all at once), stopping at the
// first error as the decoder's contract asks.
Decoded decode(std::string_view stream, std::size_t cap, std::uint32_t seed,
               std::size_t max_chunk) {
  Decoded d;
  WatchDecoder decoder(cap);
  while (!stream.empty()) {
    std::size_t n = stream.size();
    if (max_chunk != 0) {
      seed = seed * 1103515245u + 12345u;
      n = std::min<std::size_t>(n, 1 + (seed >> 16) % max_chunk);
    }
    if (!decoder.feed(stream.substr(0, n), d.events)) {
      d.ok = false;
      return d;
    }
    stream.remove_prefix(n);
  }
  d.at_boundary = decoder.at_boundary();
  return d;
}

[[noreturn]] void fail(const char* what, const Decoded& whole, const Decoded& split) {
  (void)std::fprintf(stderr,
                     "%s: whole ok=%d events=%zu boundary=%d; split ok=%d events=%zu boundary=%d\n",
                     what, whole.ok, whole.events.size(), whole.at_boundary, split.ok,
                     split.events.size(), split.at_boundary);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static constexpr std::size_t kCaps[] = {64, 512, 4096, kstack::kube::kMaxWatchEventBytes};
  const std::size_t cap = kCaps[data[0] & 3];
  const std::size_t max_chunk = std::size_t{1} << ((data[0] >> 2) & 7);  // 1..128
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Decoded whole = decode(stream, cap, 0, 0);
  const Decoded split = decode(stream, cap, data[0], max_chunk);

  // An event over the cap may be refused earlier when split (the cap is checked per chunk,
  // before the rest of the event is parsed), so only "error or not" must agree, and the
  // events decoded before the error.
  if (whole.ok != split.ok) fail("whole and split disagree on failure", whole, split);
  if (whole.events.size() != split.events.size()) fail("event counts differ", whole, split);
  for (std::size_t i = 0; i < whole.events.size(); ++i) {
    if (whole.events[i].type != split.events[i].type ||
        whole.events[i].object != split.events[i].object) {
      fail("events differ", whole, split);
    }
    (void)boost::json::serialize(whole.events[i].object);
  }
  if (whole.ok && whole.at_boundary != split.at_boundary) fail("boundaries differ", whole, split);
  return 0;
}
