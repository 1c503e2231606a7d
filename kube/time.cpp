#include "kube/time.h"

#include <charconv>

namespace kstack::kube {
namespace {

bool parse_digits(std::string_view text, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > text.size()) return false;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  return std::from_chars(text.data() + pos, text.data() + pos + count, out).ec == std::errc{};
}

}  // namespace

std::optional<std::chrono::sys_seconds> parse_rfc3339(std::string_view text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!parse_digits(text, 0, 4, year) || text.size() < 20 || text[4] != '-' ||
      !parse_digits(text, 5, 2, month) || text[7] != '-' || !parse_digits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't') || !parse_digits(text, 11, 2, hour) || text[13] != ':' ||
      !parse_digits(text, 14, 2, minute) || text[16] != ':' || !parse_digits(text, 17, 2, second) ||
      hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok()) return std::nullopt;
  std::size_t pos = 19;
  if (text[pos] == '.') {  // fractional seconds: precision below a second does not matter here
    ++pos;
    const std::size_t digits_start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    if (pos == digits_start) return std::nullopt;
  }
  std::chrono::seconds offset{0};
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh = 0, om = 0;
    if (!parse_digits(text, pos + 1, 2, oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !parse_digits(text, pos + 4, 2, om)) {
      return std::nullopt;
    }
    offset = std::chrono::hours(oh) + std::chrono::minutes(om);
    if (text[pos] == '-') offset = -offset;
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  const auto local = std::chrono::sys_days(date) + std::chrono::hours(hour) +
                     std::chrono::minutes(minute) + std::chrono::seconds(second);
  return std::chrono::sys_seconds(local - offset);
}

}  // namespace kstack::kube
