#include "catalog/quantity.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include <fmt/format.h>

namespace kstack::catalog {

namespace {

constexpr std::size_t kMaxSignificantDigits = 36;  // 10^36 < 2^127 ≈ 1.7e38
constexpr int kMaxExponent = 1000;                 // beyond this nothing fits anyway

tl::unexpected<kube::Error> bad(std::string_view text, std::string_view why) {
  return kube::make_error(kube::ErrorKind::kInvalid, fmt::format("quantity \"{}\" {}", text, why));
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

struct Suffix {
  int decimal_exponent = 0;
  int binary_exponent = 0;
};

// Returns false when the suffix is not one Kubernetes accepts.
bool parse_suffix(std::string_view s, Suffix& out) {
  if (s.empty()) return true;
  if (s.size() == 1) {
    constexpr std::string_view kDecimal = "numkMGTPE";
    constexpr int kExponent[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    const auto at = kDecimal.find(s[0]);
    if (at == std::string_view::npos) return false;
    out.decimal_exponent = kExponent[at];
    return true;
  }
  if (s.size() == 2 && s[1] == 'i') {
    constexpr std::string_view kBinary = "KMGTPE";  // Ki = 2^10 ... Ei = 2^60
    const auto at = kBinary.find(s[0]);
    if (at == std::string_view::npos) return false;
    out.binary_exponent = 10 * static_cast<int>(at + 1);
    return true;
  }
  // Decimal exponent: e or E, optional sign, at least one digit ("E" alone is exa, above).
  if (s[0] != 'e' && s[0] != 'E') return false;
  std::size_t i = 1;
  bool negative = false;
  if (s[i] == '+' || s[i] == '-') negative = s[i++] == '-';
  if (i >= s.size()) return false;
  int value = 0;
  for (; i < s.size(); ++i) {
    if (!is_digit(s[i])) return false;
    value = value * 10 + (s[i] - '0');
    if (value > kMaxExponent) value = kMaxExponent + 1;  // clamp; refused as too large later
  }
  out.decimal_exponent = negative ? -value : value;
  return true;
}

constexpr Int128 kInt128Max =
    (static_cast<Int128>(INT64_MAX) << 64) | static_cast<Int128>(UINT64_MAX);

// 10^0 .. 10^38 (10^38 < 2^127 - 1 < 10^39).
constexpr auto kPow10 = [] {
  std::array<Int128, 39> p{};
  p[0] = 1;
  for (std::size_t i = 1; i < p.size(); ++i) p[i] = p[i - 1] * 10;
  return p;
}();

// The largest value that may be multiplied by 10^i (a 128-bit division is a library call).
constexpr auto kMaxBeforePow10 = [] {
  std::array<Int128, kPow10.size()> m{};
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = kInt128Max / kPow10[i];
  return m;
}();

// v × 2^bits × 10^exp10 for non-negative v, bits and exp10; false when it exceeds Int128. One
// comparison and one multiplication each, where a step-by-step checked multiply would take a
// library call (__muloti4) per factor, ~40 of them for "16Gi".
bool scale_checked(Int128& v, int bits, int exp10) {
  if (v == 0) return true;
  if (bits > 0) {
    if (bits >= 127 || v > (kInt128Max >> bits)) return false;
    v <<= bits;
  }
  if (exp10 > 0) {
    if (exp10 >= static_cast<int>(kPow10.size())) return false;
    const auto e = static_cast<std::size_t>(exp10);
    if (v > kMaxBeforePow10[e]) return false;
    v *= kPow10[e];
  }
  return true;
}

std::int64_t saturate(Int128 v) {
  constexpr auto kMax = static_cast<Int128>(INT64_MAX);
  constexpr auto kMin = static_cast<Int128>(INT64_MIN);
  if (v > kMax) return INT64_MAX;
  if (v < kMin) return INT64_MIN;
  return static_cast<std::int64_t>(v);
}

// Ceiling division of a value by a positive divisor (towards +infinity).
Int128 div_ceil(Int128 v, Int128 d) {
  Int128 q = v / d;
  if (v % d != 0 && v > 0) ++q;
  return q;
}

}  // namespace

kube::Result<Quantity> Quantity::parse(std::string_view text) {
  if (text.empty()) return bad(text, "is empty");
  std::size_t i = 0;
  bool negative = false;
  if (text[i] == '+' || text[i] == '-') negative = text[i++] == '-';

  // The digits are read where they stand (integer part, then fraction): a webhook request
  // parses a dozen quantities, and a copy of them cost as much as the rest.
  const std::size_t int_begin = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  const std::size_t int_digits = i - int_begin;
  std::size_t frac_begin = i;
  if (i < text.size() && text[i] == '.') {
    frac_begin = ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
  }
  const std::size_t frac_digits = i - frac_begin;
  if (int_digits + frac_digits == 0) return bad(text, "must start with a number");

  Suffix suffix;
  if (!parse_suffix(text.substr(i), suffix)) {
    return bad(text, "has an unknown suffix (use n, u, m, k, M, G, T, P, E, Ki..Ei or e<n>)");
  }

  // value = digits × 10^(exp10) × 2^bin; stored as nanos, hence the +9.
  int exp10 = suffix.decimal_exponent - static_cast<int>(frac_digits) + 9;
  const auto digit = [&](std::size_t k) {  // the k-th digit, the dot left out
    return text[k < int_digits ? int_begin + k : frac_begin + (k - int_digits)];
  };
  std::size_t first = 0;
  std::size_t last = int_digits + frac_digits;
  while (first != last && digit(first) == '0') ++first;
  Quantity q;
  if (first == last) return q;  // zero in any spelling
  while (last - first > 1 && digit(last - 1) == '0') {
    --last;
    ++exp10;
  }
  if (last - first > kMaxSignificantDigits) return bad(text, "has too many significant digits");
  if (suffix.decimal_exponent > kMaxExponent || suffix.decimal_exponent < -kMaxExponent) {
    return bad(text, "has an exponent out of range");
  }

  Int128 v = 0;
  for (std::size_t k = first; k != last; ++k) v = v * 10 + (digit(k) - '0');
  if (!scale_checked(v, suffix.binary_exponent, std::max(exp10, 0))) {
    return bad(text, "is too large");
  }
  if (exp10 < -38) {
    v = 1;  // a positive value far below 1n rounds up to 1n, as Kubernetes does
  } else if (exp10 < 0) {
    v = div_ceil(v, kPow10[static_cast<std::size_t>(-exp10)]);
  }
  // Kubernetes itself caps at about 2^63 milli-units; 1e36 nanos leaves room for any real
  // quantity while keeping the arithmetic far from overflow.
  constexpr Int128 kLimit = static_cast<Int128>(1'000'000'000'000'000'000) *
                            static_cast<Int128>(1'000'000'000'000'000'000);
  if (v > kLimit) return bad(text, "is too large");
  q.nanos_ = negative ? -v : v;
  return q;
}

std::int64_t Quantity::value() const { return saturate(div_ceil(nanos_, 1'000'000'000)); }

std::int64_t Quantity::milli_value() const { return saturate(div_ceil(nanos_, 1'000'000)); }

}  // namespace kstack::catalog
