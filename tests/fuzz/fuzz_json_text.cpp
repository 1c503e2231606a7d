// Fuzzes kube::parse_json_text against kube::parse_json (Boost.JSON's parser with exact
// numbers): for every input both refuse it, or both give the same DOM — the same kinds (an
// int64 is not a uint64 or a double) and the same values, member order included.
// Input: byte 0 picks the nesting limit (1..64), the rest is the text.
//
// The same text is also parsed with members skipped (kube::JsonSkips), against the whole
// parse: the same refusal at the same byte, or its DOM with those members erased.
//
// One known difference, left out of the comparison: an exponent within a text's length of
// INT_MAX. Boost.JSON refuses such a number or not (exponent_overflow) by how many of its
// digits it kept in its 64-bit mantissa, which even depends on where the number sits in its
// buffer; parse_json_text reads it by its value (0 when it is too close to zero, refused when
// too large), as Go's strconv does. Both refuse an exponent beyond INT_MAX.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/json/parse_options.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "kube/json_parser.h"
#include "tests/fuzz/same_json.h"

namespace json = boost::json;
using kstack::testing::same_json;

namespace {

// Whether `text` has an exponent (e/E, a sign, digits) within `text.size()` of INT_MAX.
bool exponent_near_int_max(std::string_view text) {
  const long long limit = 2147483647LL - static_cast<long long>(text.size()) - 16;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != 'e' && text[i] != 'E') continue;
    std::size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    long long exponent = 0;
    for (; j < text.size() && text[j] >= '0' && text[j] <= '9'; ++j) {
      exponent = std::min(exponent * 10 + (text[j] - '0'), 1LL << 40);
    }
    if (exponent >= limit) return true;
  }
  return false;
}

// The same text with members skipped (kube::JsonSkips; keys short enough for the fuzzer to
// make): refused with the same error at the same byte, or the whole DOM with them erased.
void check_skipping(std::string_view text, std::size_t depth, boost::system::error_code ec,
                    std::size_t offset, const json::value& whole) {
  static const kstack::kube::JsonSkips skips{{"a"}, {"b", "c"}, {"b", "b", "a"}, {"\xc3\xa9"}};
  boost::system::error_code skip_ec;
  std::size_t skip_offset = 0;
  const json::value got =
      kstack::kube::parse_json_text(text, skip_ec, skip_offset, {}, depth, skips);
  if (skip_ec != ec || (ec && skip_offset != offset)) {
    (void)std::fprintf(stderr, "skipping: %s at byte %zu; whole: %s at byte %zu\n",
                       skip_ec ? skip_ec.message().c_str() : "ok", skip_offset,
                       ec ? ec.message().c_str() : "ok", offset);
    std::abort();
  }
  if (ec) return;
  json::value expected = whole;
  kstack::testing::erase_skipped(expected, skips.root());
  if (!same_json(expected, got)) {
    (void)std::fprintf(stderr, "whole, erased: %s\nskipping: %s\n",
                       json::serialize(expected).c_str(), json::serialize(got).c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t depth = 1 + data[0] % 64;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  json::parse_options options;
  options.max_depth = depth;
  boost::system::error_code boost_ec;
  const json::value expected = kstack::kube::parse_json(text, boost_ec, {}, options);

  boost::system::error_code ec;
  std::size_t offset = 0;
  const json::value got = kstack::kube::parse_json_text(text, ec, offset, {}, depth);

  if (exponent_near_int_max(text)) return 0;
  if (bool(boost_ec) != bool(ec)) {
    (void)std::fprintf(stderr, "parse_json: %s; parse_json_text: %s at byte %zu\n",
                       boost_ec ? boost_ec.message().c_str() : "ok",
                       ec ? ec.message().c_str() : "ok", offset);
    std::abort();
  }
  if (ec) {
    if (offset > text.size()) std::abort();
    // A number out of range is the one error callers tell apart; both must see it as such.
    if ((ec == kstack::kube::number_out_of_range()) !=
        (boost_ec == kstack::kube::number_out_of_range())) {
      (void)std::fprintf(stderr, "out of range: parse_json %s, parse_json_text %s\n",
                         boost_ec.message().c_str(), ec.message().c_str());
      std::abort();
    }
    check_skipping(text, depth, ec, offset, got);
    return 0;
  }
  if (!same_json(expected, got)) {
    (void)std::fprintf(stderr, "parse_json: %s\nparse_json_text: %s\n",
                       json::serialize(expected).c_str(), json::serialize(got).c_str());
    std::abort();
  }
  check_skipping(text, depth, ec, offset, got);
  return 0;
}
