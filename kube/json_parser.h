// JSON parsing with exact numbers. Boost.JSON 1.81 converts a decimal number to double
// inexactly (1.2E85 becomes 1.2000000000000002E85, whose own text parses to yet another
// double) and the result even depends on how the number's text sits in the input buffer: a
// watch event fed whole and fed in chunks gave two different doubles. These parsers take the
// DOM from Boost.JSON but convert every non-integer number from its complete text with
// std::from_chars (correctly rounded, as Go's encoding/json on the API server's side), so
// the value is the same whatever the chunking and re-serializes to text that parses back to
// it. A number beyond double's range is refused (number_out_of_range()): Boost.JSON would
// make it infinity, which serializes as the non-JSON `Infinity`, and no API server sends one
// (Go's decoder refuses it too). One too close to zero becomes 0, as in Go.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/parse_options.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

namespace kstack::kube {

// boost::json::stream_parser's contract (write_some stops after one complete value; done,
// finish, release, reset), with exact numbers.
class JsonStreamParser {
 public:
  explicit JsonStreamParser(const boost::json::parse_options& options = {});
  ~JsonStreamParser();
  JsonStreamParser(JsonStreamParser&&) noexcept;
  JsonStreamParser& operator=(JsonStreamParser&&) noexcept;

  // Parses a prefix of `bytes`, returns how many bytes it used; on a malformed input (or a
  // number out of range) sets `ec` and the parser must be reset before it is used again.
  std::size_t write_some(std::string_view bytes, boost::system::error_code& ec);
  // Tells the parser the input ended (a bare number at the end completes here).
  void finish(boost::system::error_code& ec);
  // True once one complete value has been parsed.
  bool done() const;
  // The parsed value; only after done().
  boost::json::value release();
  // Starts over; the next value is allocated from `storage`.
  void reset(boost::json::storage_ptr storage = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// boost::json::parse with exact numbers: one JSON text, nothing but whitespace after it.
boost::json::value parse_json(std::string_view text, boost::system::error_code& ec,
                              boost::json::storage_ptr storage = {},
                              const boost::json::parse_options& options = {});

// One whole JSON text, as parse_json gives it (the same DOM, exact numbers, refused where it
// refuses), with strings scanned in blocks: escaped JSON inside a string (kubectl's
// last-applied-configuration) reads in half the time, a Stack review 10-15 % faster, other
// text as fast (kube/json_text.cpp says why). Nesting deeper than `max_depth` is refused. On an
// error, `offset` is the byte where the text went wrong (or its end, when it ended early). One
// difference from parse_json: a number with an exponent close to INT_MAX (within its count of
// digits) is read by its value (0, or refused as out of range), where Boost.JSON's answer depends
// on how many digits it kept; an exponent beyond INT_MAX is refused by both (exponent_overflow).
boost::json::value parse_json_text(std::string_view text, boost::system::error_code& ec,
                                   std::size_t& offset, boost::json::storage_ptr storage = {},
                                   std::size_t max_depth = 32);

// Object members a parse leaves out of its DOM, each named by the keys that lead to it from the
// root object: {"request", "options"} is the root's request.options. Such a member is still
// parsed and checked as the rest of the text (a text is refused, and at the same byte, whether
// or not it is skipped), but nothing of it is built: a reader that never looks at a large part
// of its input (an admission review's managedFields) does not pay for its DOM. Paths go through
// objects only; keys are compared unescaped.
class JsonSkips {
 public:
  struct Node {
    std::string name;
    bool skip = false;           // this member is left out
    std::vector<Node> children;  // members below it that are
  };

  JsonSkips(std::initializer_list<std::initializer_list<std::string_view>> paths);
  const Node& root() const { return root_; }

 private:
  Node root_;
};

// parse_json_text, with the members `skips` names left out of the DOM.
boost::json::value parse_json_text(std::string_view text, boost::system::error_code& ec,
                                   std::size_t& offset, boost::json::storage_ptr storage,
                                   std::size_t max_depth, const JsonSkips& skips);

// The error a number beyond the range of a double gives.
boost::system::error_code number_out_of_range();

namespace detail {
// For a number's text std::from_chars found out of a double's range: whether it is too large
// (rather than too close to zero, which reads as 0).
bool number_too_large(std::string_view text);
}  // namespace detail

}  // namespace kstack::kube
