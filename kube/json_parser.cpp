#include "kube/json_parser.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <system_error>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

namespace kstack::kube {

namespace json = boost::json;
using boost::system::error_code;

namespace {

// Boost.System's way of giving an error_code its own message. error_category's destructor is
// not virtual by design (categories are static objects, never deleted through a base pointer).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class NumberCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "kstack.json"; }
  std::string message(int /*code*/) const override { return "number beyond the range of a double"; }
};
#pragma GCC diagnostic pop

constexpr std::size_t kScratchBytes = 4096;  // the value stack's initial storage

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Boost.JSON's own DOM builder (boost/json/detail/handler.hpp), except for doubles: the text
// of each number is collected (it may arrive in parts) and converted exactly.
struct Handler {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  json::value_stack stack;
  std::string number;  // the parts of the number being parsed

  Handler(unsigned char* scratch, std::size_t size) : stack({}, scratch, size) {}

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return true; }
  bool on_object_end(std::size_t n, error_code&) { return stack.push_object(n), true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t n, error_code&) { return stack.push_array(n), true; }
  bool on_key_part(json::string_view s, std::size_t, error_code&) {
    return stack.push_chars(s), true;
  }
  bool on_key(json::string_view s, std::size_t, error_code&) { return stack.push_key(s), true; }
  bool on_string_part(json::string_view s, std::size_t, error_code&) {
    return stack.push_chars(s), true;
  }
  bool on_string(json::string_view s, std::size_t, error_code&) {
    return stack.push_string(s), true;
  }
  bool on_number_part(json::string_view s, error_code&) {
    number.append(s.data(), s.size());
    return true;
  }
  // Integers that fit 64 bits are exact in Boost.JSON already.
  bool on_int64(std::int64_t i, json::string_view, error_code&) {
    number.clear();
    return stack.push_int64(i), true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, error_code&) {
    number.clear();
    return stack.push_uint64(u), true;
  }
  bool on_double(double inexact, json::string_view s, error_code& ec);
  bool on_bool(bool b, error_code&) { return stack.push_bool(b), true; }
  bool on_null(error_code&) { return stack.push_null(), true; }
  bool on_comment_part(json::string_view, error_code&) { return true; }
  bool on_comment(json::string_view, error_code&) { return true; }
};

bool Handler::on_double(double inexact, json::string_view s, error_code& ec) {
  number.append(s.data(), s.size());
  double exact = 0;
  const auto [end, err] = std::from_chars(number.data(), number.data() + number.size(), exact);
  if (err == std::errc::result_out_of_range) {
    if (detail::number_too_large(number)) {
      ec = number_out_of_range();
      return false;
    }
    exact = number.starts_with('-') ? -0.0 : 0.0;
  } else if (err != std::errc() || end != number.data() + number.size()) {
    // Not expected for text Boost.JSON accepted as a number; its own value is the fallback.
    exact = inexact;
  }
  number.clear();
  stack.push_double(exact);
  return true;
}

}  // namespace

namespace detail {

// A number std::from_chars found out of range has a decimal magnitude (the place of its first
// non-zero digit plus its exponent) beyond ±300, so the sign of that magnitude alone decides.
bool number_too_large(std::string_view text) {
  constexpr long long kSaturated = 1'000'000'000'000'000;  // beyond any count of digits
  std::size_t i = text.starts_with('-') ? 1 : 0;
  long long place = 0;  // digits before the point from the first non-zero one, or minus the
                        // zeros after the point before it
  bool nonzero = false;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    nonzero = nonzero || text[i] != '0';
    if (nonzero) ++place;
  }
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && is_digit(text[i]); ++i) {
      if (nonzero) continue;
      if (text[i] == '0') {
        --place;
      } else {
        nonzero = true;
      }
    }
  }
  long long exponent = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      exponent = std::min(exponent * 10 + (text[i] - '0'), kSaturated);
    }
  }
  return place + (negative ? -exponent : exponent) > 0;
}

}  // namespace detail

struct JsonStreamParser::Impl {
  explicit Impl(const json::parse_options& options) : parser(options, scratch, sizeof scratch) {}

  unsigned char scratch[kScratchBytes];
  json::basic_parser<Handler> parser;
};

JsonStreamParser::JsonStreamParser(const json::parse_options& options)
    : impl_(std::make_unique<Impl>(options)) {
  reset();
}

JsonStreamParser::~JsonStreamParser() = default;
JsonStreamParser::JsonStreamParser(JsonStreamParser&&) noexcept = default;
JsonStreamParser& JsonStreamParser::operator=(JsonStreamParser&&) noexcept = default;

std::size_t JsonStreamParser::write_some(std::string_view bytes, error_code& ec) {
  return impl_->parser.write_some(true, bytes.data(), bytes.size(), ec);
}

void JsonStreamParser::finish(error_code& ec) { impl_->parser.write_some(false, nullptr, 0, ec); }

bool JsonStreamParser::done() const { return impl_->parser.done(); }

json::value JsonStreamParser::release() { return impl_->parser.handler().stack.release(); }

void JsonStreamParser::reset(json::storage_ptr storage) {
  impl_->parser.reset();
  impl_->parser.handler().stack.reset(std::move(storage));
  impl_->parser.handler().number.clear();
}

json::value parse_json(std::string_view text, error_code& ec, json::storage_ptr storage,
                       const json::parse_options& options) {
  JsonStreamParser parser(options);
  parser.reset(std::move(storage));
  const std::size_t used = parser.write_some(text, ec);
  if (ec) return nullptr;
  // Only whitespace may follow the value: write_some stops at the first byte that is not.
  if (used != text.size()) {
    ec = json::error::extra_data;
    return nullptr;
  }
  parser.finish(ec);
  if (ec) return nullptr;
  return parser.release();
}

error_code number_out_of_range() {
  static const NumberCategory category;
  return {1, category};
}

}  // namespace kstack::kube
