// Quantity parsing after k8s.io/apimachinery/pkg/api/resource: <sign><digits>[.<digits>]
// followed by a binary suffix (Ki..Ei), a decimal suffix (n u m "" k M G T P E) or a decimal
// exponent (e3, E-2). Values are computed exactly and rounded up, as Quantity.Value() does.
#include "tests/nodesim/quantity.h"

#include <cctype>
#include <string>

namespace kstack::nodesim {
namespace {

struct Suffix {
  std::string_view text;
  int base10;  // power of ten
  int base2;   // power of two
};

constexpr Suffix kSuffixes[] = {
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},    {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
};

std::optional<std::int64_t> parse_scaled(std::string_view text, int extra_base10) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  std::int64_t mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool in_fraction = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) break;
    if (mantissa > (INT64_MAX - 9) / 10) return std::nullopt;
    mantissa = mantissa * 10 + (c - '0');
    ++digits;
    if (in_fraction) ++fraction_digits;
  }
  if (digits == 0) return std::nullopt;
  std::string_view rest = text.substr(i);
  int base10 = 0;
  int base2 = 0;
  if (!rest.empty() && (rest[0] == 'e' || rest[0] == 'E') && rest.size() > 1) {
    std::size_t j = 1;
    bool neg_exp = false;
    if (rest[j] == '+' || rest[j] == '-') neg_exp = rest[j++] == '-';
    if (j >= rest.size()) return std::nullopt;
    int exp = 0;
    for (; j < rest.size(); ++j) {
      if (std::isdigit(static_cast<unsigned char>(rest[j])) == 0) return std::nullopt;
      exp = exp * 10 + (rest[j] - '0');
      if (exp > 100) return std::nullopt;
    }
    base10 = neg_exp ? -exp : exp;
  } else {
    bool found = false;
    for (const auto& s : kSuffixes) {
      if (rest == s.text) {
        base10 = s.base10;
        base2 = s.base2;
        found = true;
        break;
      }
    }
    if (!found) return std::nullopt;
  }
  std::int64_t value = mantissa;
  if (base2 > 0 && __builtin_mul_overflow(value, std::int64_t{1} << base2, &value)) {
    return std::nullopt;
  }
  int scale = base10 - fraction_digits + extra_base10;
  for (; scale > 0; --scale) {
    if (__builtin_mul_overflow(value, std::int64_t{10}, &value)) return std::nullopt;
  }
  if (scale < 0) {
    std::int64_t divisor = 1;
    for (; scale < 0 && divisor <= INT64_MAX / 10; ++scale) divisor *= 10;
    if (scale < 0) {
      value = value > 0 ? 1 : 0;  // smaller than any representable unit: rounds up to one
    } else {
      value = value / divisor + (value % divisor != 0 ? 1 : 0);
    }
  }
  return negative ? -value : value;
}

}  // namespace

std::optional<std::int64_t> parse_quantity(std::string_view text) { return parse_scaled(text, 0); }

std::optional<std::int64_t> parse_quantity_milli(std::string_view text) {
  return parse_scaled(text, 3);
}

}  // namespace kstack::nodesim
