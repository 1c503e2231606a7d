// Kubernetes resource quantities (apimachinery resource.Quantity): "500m", "1Gi", "2",
// "1e3", "1.5G", "100n". Parsed into an exact fixed-point value (nano-units in 128 bits),
// so comparisons are exact; the minResources/minStorage rules rely on that ("1Gi" >
// "1G", "0.5" == "500m"). Like Kubernetes, precision below 1n is rounded up.
#pragma once

#include <compare>
#include <cstdint>
#include <string_view>

#include "kube/error.h"

namespace kstack::catalog {

// GCC/Clang's 128-bit integer; __extension__ keeps -Wpedantic quiet about it.
__extension__ typedef __int128 Int128;

class Quantity {
 public:
  Quantity() = default;

  // Grammar: [+-] digits[.digits] suffix, suffix one of "" n u m k M G T P E (decimal SI),
  // Ki Mi Gi Ti Pi Ei (binary SI) or e<int>/E<int> (decimal exponent). Errors (kInvalid)
  // say what is wrong; magnitudes beyond ~1e27 units are refused as too large.
  static kube::Result<Quantity> parse(std::string_view text);

  int sign() const { return nanos_ > 0 ? 1 : (nanos_ < 0 ? -1 : 0); }
  bool is_zero() const { return nanos_ == 0; }
  // Rounded up to whole units / milli-units (Quantity.Value(), MilliValue()), saturating.
  std::int64_t value() const;
  std::int64_t milli_value() const;

  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    if (a.nanos_ < b.nanos_) return std::strong_ordering::less;
    if (a.nanos_ > b.nanos_) return std::strong_ordering::greater;
    return std::strong_ordering::equal;
  }

 private:
  // value × 10^9. The text it was parsed from is not kept: an admission request's rules parse
  // a dozen quantities, each text was copied three times (parse, result, list), and a message
  // quotes the text it parsed anyway.
  Int128 nanos_ = 0;
};

}  // namespace kstack::catalog
