// Fuzzes kube::error_from_response: any HTTP status and any body (a metav1.Status or not)
// must map to a typed Error with a message, and the Error must format.
// Input: 2 bytes of HTTP status (mod 1000), 1 byte of Retry-After, then the body.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "kube/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const int http_status = ((data[0] << 8) | data[1]) % 1000;
  std::optional<std::chrono::seconds> retry_after;
  if (data[2] != 0) retry_after = std::chrono::seconds(data[2] - 1);
  const std::string_view body(reinterpret_cast<const char*>(data) + 3, size - 3);

  const kstack::kube::Error e = kstack::kube::error_from_response(http_status, body, retry_after);
  const std::string text = e.to_string();
  (void)e.retryable();
  if (e.message.empty() || text.empty() || kstack::kube::to_string(e.kind).empty() ||
      (retry_after && e.retry_after != retry_after)) {
    (void)std::fprintf(stderr, "bad error: kind %d status %d message \"%s\"\n",
                       static_cast<int>(e.kind), e.http_status, e.message.c_str());
    std::abort();
  }
  return 0;
}
