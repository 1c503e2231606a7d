// parse_json_text: one whole JSON text, parsed by recursive descent into Boost.JSON's own DOM
// builder (json::value_stack).
//
// Why not boost::json::basic_parser, which kube::JsonStreamParser wraps: that parser is made
// to resume anywhere in a stream, and after the first escape in a string it copies every
// following byte singly into a small buffer, checking at each for the end of its input. An
// admission review carries `kubectl.kubernetes.io/last-applied-configuration`, the whole object
// again as escaped JSON (a `\"` every few bytes), and that one string cost a third of a Stack
// review's parse (2.6 of 7.9 us; callgrind: 16 instructions per byte). With the whole text in
// memory there is nothing to resume, so strings are scanned 16 bytes at a time for the bytes
// that need a look (quote, backslash, control, non-ASCII) and copied in runs between escapes.
// The DOM and the numbers are the same as parse_json's (exact doubles, the same integer kinds),
// and so is what is refused; tests/fuzz/fuzz_json_text.cpp checks both against parse_json.
// Measured on the bench's reviews (one thread, a fresh arena each): Stack CREATE 7.9 -> 6.9 us,
// UPDATE 14.8 -> 12.7 us, an AppType (no escapes) 5.2 -> 5.4 us; the rest of the time is the
// DOM (value_stack, objects, the arena), the same for both. Over TLS, the webhook's CPU per
// Stack review fell 3.5 us (docs/benchmarks.md).
// Members a caller never reads (JsonSkips: the webhook's managedFields) are parsed by the same
// code with kBuild false, so that they are checked as strictly and cost no DOM: instructions
// per review decode, callgrind, Stack CREATE 9.5k fewer (-7 %), UPDATE 14.4k (-6 %).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include <boost/json/error.hpp>
#include <boost/json/value_stack.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kube/json_parser.h"

namespace kstack::kube {

namespace json = boost::json;
using boost::system::error_code;

namespace {

constexpr std::size_t kScratchBytes = 4096;  // the value stack's initial storage

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A byte a string's fast scan stops at: '"', '\\', a control character, or one not ASCII.
bool needs_look(unsigned char c) { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80; }

// The first byte in [p, end) that needs a look, or end.
const char* scan_string(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed compare: bytes >= 0x80 are negative, so "< 0x20" catches them with the controls.
    const __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_cmplt_epi8(v, space));
    const int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p != end && !needs_look(static_cast<unsigned char>(*p))) ++p;
  return p;
}

// Which bytes of a 64-byte block an escape's backslash precedes, from the block's backslashes
// (bit i: byte i) and `carry`, whether its first byte is escaped (an odd run of backslashes ended
// the block before); `carry` becomes the same for the next block. A byte is escaped when the run
// of backslashes just before it is of odd length. Adding a run's first bit to the run carries
// past its end: the bit after a run starting at an even place lands on an odd place exactly
// when the run is odd, and the other way round for runs starting at odd places.
std::uint64_t escaped_bytes(std::uint64_t backslashes, bool& carry) {
  constexpr std::uint64_t kEven = 0x5555555555555555ULL;
  const std::uint64_t first = carry ? 1 : 0;
  const std::uint64_t b = backslashes & ~first;  // an escaped backslash escapes nothing
  const std::uint64_t starts = b & ~(b << 1);
  std::uint64_t after_even = 0;
  std::uint64_t after_odd = 0;
  __builtin_add_overflow(b, starts & kEven, &after_even);
  // A run starting at an odd place and reaching the block's end is odd: the next block's first
  // byte is escaped.
  carry = __builtin_add_overflow(b, starts & ~kEven, &after_odd);
  return (after_even & ~b & ~kEven) | (after_odd & ~b & kEven) | first;
}

// The length of the well-formed UTF-8 sequence at p (its first byte >= 0x80), or 0 if there is
// none (Unicode's table 3-7: no overlong forms, no surrogates, nothing beyond U+10FFFF).
std::size_t utf8_length(const char* p, const char* end) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(p[i]); };
  const auto cont = [&](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return p + i < end && b(i) >= lo && b(i) <= hi;
  };
  const unsigned c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c >= 0xE1 && c <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Writes code point `cp` as UTF-8 at `out`; returns the end.
char* append_utf8(char* out, unsigned cp) {
  if (cp < 0x80) {
    *out++ = static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out++ = static_cast<char>(0xC0 | (cp >> 6));
    *out++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out++ = static_cast<char>(0xE0 | (cp >> 12));
    *out++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out++ = static_cast<char>(0xF0 | (cp >> 18));
    *out++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out++ = static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

using Skip = JsonSkips::Node;

// The member of `node` named `key`, or null.
const Skip* find_member(const Skip& node, std::string_view key) {
  for (const Skip& child : node.children) {
    if (child.name == key) return &child;
  }
  return nullptr;
}

class TextParser {
 public:
  TextParser(std::string_view text, json::storage_ptr storage, std::size_t max_depth,
             const Skip* skips)
      : skips_(skips),
        begin_(text.data()),
        p_(text.data()),
        end_(text.data() + text.size()),
        depth_(max_depth),
        stack_({}, scratch_, sizeof scratch_) {
    stack_.reset(std::move(storage));
  }

  json::value run(error_code& ec, std::size_t& offset) {
    skip_space();
    if (value<true>(skips_)) {
      skip_space();
      if (p_ == end_) return stack_.release();
      ec_ = json::error::extra_data;
    }
    ec = ec_;
    offset = static_cast<std::size_t>(p_ - begin_);
    return nullptr;
  }

 private:
  bool fail(error_code ec) {
    ec_ = ec;
    return false;
  }
  bool fail(json::error e) { return fail(error_code(e)); }
  // Ran out of text where more was needed.
  bool incomplete() {
    p_ = end_;
    return fail(json::error::incomplete);
  }

  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // One value; `kBuild` false inside a skipped member: parsed and checked alike, nothing
  // pushed. `node`: the skipped members below this value, when it is an object (null: none).
  template <bool kBuild>
  bool value(const Skip* node) {
    if (p_ == end_) return incomplete();
    switch (*p_) {
      case '{':
        return object<kBuild>(node);
      case '[':
        return array<kBuild>();
      case '"': {
        std::string_view s;
        if (!string<kBuild>(s, false)) return false;
        if constexpr (kBuild) stack_.push_string(s);
        return true;
      }
      case 't':
        return literal("true") && (!kBuild || (stack_.push_bool(true), true));
      case 'f':
        return literal("false") && (!kBuild || (stack_.push_bool(false), true));
      case 'n':
        return literal("null") && (!kBuild || (stack_.push_null(), true));
      default:
        if (*p_ == '-' || is_digit(*p_)) return number<kBuild>();
        return fail(json::error::syntax);
    }
  }

  bool literal(std::string_view word) {
    for (char c : word) {
      if (p_ == end_) return incomplete();
      if (*p_ != c) return fail(json::error::syntax);
      ++p_;
    }
    return true;
  }

  bool enter() {
    if (depth_ == 0) return fail(json::error::too_deep);
    --depth_;
    ++p_;
    skip_space();
    return true;
  }

  template <bool kBuild>
  bool object(const Skip* node) {
    if (!enter()) return false;
    std::size_t n = 0;
    if (p_ != end_ && *p_ == '}') {
      ++p_;
    } else {
      for (;;) {
        if (p_ == end_) return incomplete();
        if (*p_ != '"') return fail(json::error::syntax);
        std::string_view key;
        if (!string<kBuild>(key, true)) return false;
        skip_space();
        if (p_ == end_) return incomplete();
        if (*p_ != ':') return fail(json::error::syntax);
        ++p_;
        skip_space();
        // `key` still holds: nothing but the colon and spaces was read since.
        if constexpr (kBuild) {
          const Skip* child = nullptr;
          if (node != nullptr) [[unlikely]]
            child = find_member(*node, key);
          if (child != nullptr && child->skip) [[unlikely]] {
            if (!value<false>(nullptr)) return false;
          } else {
            stack_.push_key(key);
            if (!value<true>(child)) return false;
            ++n;
          }
        } else if (!value<false>(nullptr)) {
          return false;
        }
        skip_space();
        if (p_ == end_) return incomplete();
        if (*p_ == '}') {
          ++p_;
          break;
        }
        if (*p_ != ',') return fail(json::error::syntax);
        ++p_;
        skip_space();
      }
    }
    if (n > json::object::max_size()) return fail(json::error::object_too_large);
    if constexpr (kBuild) stack_.push_object(n);
    ++depth_;
    return true;
  }

  template <bool kBuild>
  bool array() {
    if (!enter()) return false;
    std::size_t n = 0;
    if (p_ != end_ && *p_ == ']') {
      ++p_;
    } else {
      for (;;) {
        if (!value<kBuild>(nullptr)) return false;
        ++n;
        skip_space();
        if (p_ == end_) return incomplete();
        if (*p_ == ']') {
          ++p_;
          break;
        }
        if (*p_ != ',') return fail(json::error::syntax);
        ++p_;
        skip_space();
      }
    }
    if (n > json::array::max_size()) return fail(json::error::array_too_large);
    if constexpr (kBuild) stack_.push_array(n);
    ++depth_;
    return true;
  }

  // At the opening quote: the string's value in `out` (a view of the text itself when it has no
  // escapes; else of `unescaped_`, valid until the next escaped string). At its first escape
  // it moves to escaped_string(). `key` only picks the error for one too long.
  template <bool kKeep = true>
  bool string(std::string_view& out, bool key) {
    ++p_;
    const char* const start = p_;
    for (;;) {
      const char* q = scan_string(p_, end_);
      if (q == end_) return incomplete();
      const auto c = static_cast<unsigned char>(*q);
      if (c == '"') {
        p_ = q + 1;
        return checked_size(out = std::string_view(start, static_cast<std::size_t>(q - start)),
                            key);
      }
      if (c == '\\') {
        p_ = q;
        if constexpr (!kKeep) return skip_escaped_string(key);
        return escaped_string(out, key, start);
      }
      p_ = q;
      if (!utf8()) return false;
    }
  }

  // The rest of a string in a skipped member from its first backslash (at p_): checked as
  // escaped_string() checks it, nothing written, 64 bytes at a time while a block holds only
  // plain bytes and the escapes \" \\ \/ \b \f \n \r \t. Which bytes are escaped follows from
  // the backslashes alone (escaped_bytes), so a block of escaped JSON (kubectl's
  // last-applied-configuration: an escape every few bytes) costs the same few dozen
  // instructions as a block without escapes. From a block holding anything else before the
  // string's end (\u, a control or non-ASCII byte, an escape JSON does not have), or the text's
  // last 63 bytes, escaped_string() goes on, at the block's start (or the backslash before it
  // whose escape the block begins with), so it refuses what it refuses at the same byte.
  bool skip_escaped_string(bool key) {
#if defined(__SSE2__)
    // A string is at most the text's length: within json::string's limit unless the text is
    // beyond it, where escaped_string() tells.
    if (static_cast<std::size_t>(end_ - p_) <= json::string::max_size()) {
      const char* p = p_;
      bool carry = false;
      const __m128i quote = _mm_set1_epi8('"');
      const __m128i backslash = _mm_set1_epi8('\\');
      const __m128i space = _mm_set1_epi8(0x20);
      while (end_ - p >= 64) {
        std::uint64_t quotes = 0;
        std::uint64_t backslashes = 0;
        std::uint64_t look = 0;
        for (int i = 0; i < 4; ++i) {
          const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
          const auto bits = [&](__m128i m) {
            return static_cast<std::uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(m)))
                   << (16 * i);
          };
          quotes |= bits(_mm_cmpeq_epi8(v, quote));
          backslashes |= bits(_mm_cmpeq_epi8(v, backslash));
          // Signed: bytes >= 0x80 are negative, caught with the controls.
          look |= bits(_mm_cmplt_epi8(v, space));
        }
        const bool carry_in = carry;
        const std::uint64_t escaped = escaped_bytes(backslashes, carry);
        const std::uint64_t ends = quotes & ~escaped;
        // The bytes up to the string's end (all of them when it does not end here).
        const std::uint64_t mine = ends == 0 ? ~0ULL : (ends ^ (ends - 1));
        bool plain = (look & mine) == 0;
        // Escaped JSON's escapes are \" and \\; the few others are looked at one by one.
        for (std::uint64_t other = escaped & ~(quotes | backslashes) & mine; plain && other != 0;
             other &= other - 1) {
          const char c = p[__builtin_ctzll(other)];
          plain = c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't';
        }
        if (!plain) {
          carry = carry_in;
          break;
        }
        if (ends != 0) {
          p_ = p + __builtin_ctzll(ends) + 1;
          return true;
        }
        p += 64;
      }
      p_ = carry ? p - 1 : p;
    }
#endif
    std::string_view ignored;
    return escaped_string(ignored, key, p_);
  }

  // The rest of a string from its first backslash: unescaped into `unescaped_`, which has room
  // for the whole rest of the text (unescaping never lengthens it) and 16 bytes more, so that
  // each 16-byte block is stored whole before its stop byte is looked for; a run between two
  // escapes costs one block or a few rather than a call and a copy of its own.
  bool escaped_string(std::string_view& result, bool key, const char* start) {
    const auto room = static_cast<std::size_t>(end_ - start) + 16;
    if (unescaped_size_ < room) {
      unescaped_ = std::make_unique_for_overwrite<char[]>(room);
      unescaped_size_ = room;
    }
    char* const out_begin = unescaped_.get();
    const auto prefix = static_cast<std::size_t>(p_ - start);
    std::memcpy(out_begin, start, prefix);
    char* out = out_begin + prefix;
    // The loop works on locals: `out` is a char*, which may alias anything, so a store through it
    // would make the compiler reload the members `p_` and `end_` after every byte it writes.
    // `p_` is brought up to date before each call that reads it (escape, utf8, incomplete).
    const char* p = p_;
    const char* const end = end_;
    for (;;) {
#if defined(__SSE2__)
      const __m128i quote = _mm_set1_epi8('"');
      const __m128i backslash = _mm_set1_epi8('\\');
      const __m128i space = _mm_set1_epi8(0x20);
      bool stopped = false;  // at a stop byte, found in a block
      // A block and the one after it in the text: every run between the block's escapes is
      // copied by a 16-byte load and store of its own, at a place in the block its masks give,
      // so the escapes of one block do not wait for one another (escaped JSON has one every
      // few bytes; a loop that starts again at each escape's end waits for the position it
      // has just computed before it can read on: perf, ~15 cycles an escape). A \" or \\ is
      // told by the masks; whatever else stops the scan (a quote, another escape, a control or
      // non-ASCII byte) is handled below, at p.
      while (end - p >= 32) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const auto quotes = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)));
        const auto backslashes =
            static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash)));
        auto stops = quotes | backslashes |
                     static_cast<unsigned>(_mm_movemask_epi8(_mm_cmplt_epi8(v, space)));
        if (stops == 0) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
          p += 16;
          out += 16;
          continue;
        }
        unsigned from = 0;  // the block's first byte not yet copied
        do {
          const auto k = static_cast<unsigned>(__builtin_ctz(stops));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + from)));
          out += k - from;
          // (The masks hold 16 bits: for k = 15 the escape's second byte is in the next block.)
          if (((backslashes >> k) & 1) == 0 || (((quotes | backslashes) >> k >> 1) & 1) == 0) {
            p += k;
            stopped = true;
            break;
          }
          *out++ = ((quotes >> k >> 1) & 1) != 0 ? '"' : '\\';
          from = k + 2;
          stops &= ~0u << from;
        } while (stops != 0);
        if (stopped) break;
        // The rest of the block (p + from + 16 <= p + 32 <= end).
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + from)));
        out += 16 - from;
        p += 16;
      }
      // The text's last 31 bytes or fewer, a block at a time (or byte by byte, below).
      while (!stopped && end - p >= 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
        const __m128i hit =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                         _mm_cmplt_epi8(v, space));
        const auto mask = static_cast<unsigned>(_mm_movemask_epi8(hit));
        if (mask != 0) {
          const auto n = static_cast<unsigned>(__builtin_ctz(mask));
          p += n;
          out += n;
          stopped = true;
          break;
        }
        p += 16;
        out += 16;
      }
      if (!stopped)
#endif
      {
        while (p != end && !needs_look(static_cast<unsigned char>(*p))) *out++ = *p++;
        if (p == end) {
          p_ = p;
          return incomplete();
        }
      }
      const auto c = static_cast<unsigned char>(*p);
      if (c == '\\') {
        // Escaped JSON in a string is mostly \" and \\: those without a call.
        if (end - p >= 2 && (p[1] == '"' || p[1] == '\\')) {
          *out++ = p[1];
          p += 2;
          continue;
        }
        p_ = p + 1;
        if (!escape(out)) return false;
        p = p_;
        continue;
      }
      if (c == '"') {
        p_ = p + 1;
        result = std::string_view(out_begin, static_cast<std::size_t>(out - out_begin));
        return checked_size(result, key);
      }
      p_ = p;
      if (!utf8()) return false;
      out = std::copy(p, p_, out);
      p = p_;
    }
  }

  // At a byte that is a control character or not ASCII: past it if it begins a well-formed
  // UTF-8 sequence.
  bool utf8() {
    if (static_cast<unsigned char>(*p_) < 0x20) return fail(json::error::syntax);
    const std::size_t n = utf8_length(p_, end_);
    if (n == 0) return fail(json::error::syntax);
    p_ += n;
    return true;
  }

  bool checked_size(std::string_view s, bool key) {
    if (s.size() <= json::string::max_size()) return true;
    return fail(key ? json::error::key_too_large : json::error::string_too_large);
  }

  // After a backslash: writes what the escape stands for at `out` and moves it past that.
  bool escape(char*& out) {
    if (p_ == end_) return incomplete();
    const char c = *p_++;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        *out++ = c;
        return true;
      case 'b':
        *out++ = '\b';
        return true;
      case 'f':
        *out++ = '\f';
        return true;
      case 'n':
        *out++ = '\n';
        return true;
      case 'r':
        *out++ = '\r';
        return true;
      case 't':
        *out++ = '\t';
        return true;
      case 'u':
        break;
      default:
        --p_;
        return fail(json::error::syntax);
    }
    unsigned first = 0;
    if (!hex4(first)) return false;
    if (first < 0xD800 || first > 0xDFFF) {
      out = append_utf8(out, first);
      return true;
    }
    if (first > 0xDBFF) return fail(json::error::illegal_leading_surrogate);
    // A leading surrogate: a trailing one must follow as another \u escape.
    if (end_ - p_ < 2) return incomplete();
    if (p_[0] != '\\' || p_[1] != 'u') return fail(json::error::syntax);
    p_ += 2;
    unsigned second = 0;
    if (!hex4(second)) return false;
    if (second < 0xDC00 || second > 0xDFFF) return fail(json::error::illegal_trailing_surrogate);
    out = append_utf8(out, ((first - 0xD800) << 10) + (second - 0xDC00) + 0x10000);
    return true;
  }

  bool hex4(unsigned& out) {
    for (int i = 0; i < 4; ++i) {
      if (p_ == end_) return incomplete();
      const int d = hex_value(*p_);
      if (d < 0) return fail(json::error::expected_hex_digit);
      out = out * 16 + static_cast<unsigned>(d);
      ++p_;
    }
    return true;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? ; integers that fit 64 bits are int64 (or
  // uint64 beyond int64), as Boost.JSON makes them; every other number is the double its text
  // denotes, correctly rounded (std::from_chars), as parse_json.
  template <bool kBuild>
  bool number() {
    const char* const start = p_;
    const bool negative = *p_ == '-';
    if (negative) {
      ++p_;
      if (p_ == end_) return incomplete();
      if (!is_digit(*p_)) return fail(json::error::syntax);
    }
    std::uint64_t mantissa = 0;
    bool overflow = false;
    if (*p_ == '0') {
      ++p_;
    } else {
      for (; p_ != end_ && is_digit(*p_); ++p_) {
        const auto d = static_cast<std::uint64_t>(*p_ - '0');
        if (mantissa > (std::numeric_limits<std::uint64_t>::max() - d) / 10) overflow = true;
        mantissa = mantissa * 10 + d;
      }
    }
    bool integer = true;
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ == end_) return incomplete();
      if (!is_digit(*p_)) return fail(json::error::syntax);
      while (p_ != end_ && is_digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_) return incomplete();
      if (!is_digit(*p_)) return fail(json::error::syntax);
      // An exponent beyond INT_MAX is refused whatever its sign, as Boost.JSON refuses it.
      std::int64_t exponent = 0;
      for (; p_ != end_ && is_digit(*p_); ++p_) {
        exponent = exponent * 10 + (*p_ - '0');
        if (exponent > std::numeric_limits<int>::max()) return fail(json::error::exponent_overflow);
      }
    }
    if (integer && !overflow) {
      constexpr auto kInt64Max =
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
      if (!negative) {
        if constexpr (!kBuild) return true;
        if (mantissa <= kInt64Max) {
          stack_.push_int64(static_cast<std::int64_t>(mantissa));
        } else {
          stack_.push_uint64(mantissa);
        }
        return true;
      }
      if (mantissa <= kInt64Max + 1) {
        // -(2^63) has no positive int64; the unsigned negation is its two's complement.
        if constexpr (kBuild) stack_.push_int64(static_cast<std::int64_t>(~mantissa + 1));
        return true;
      }
    }
    const std::string_view text(start, static_cast<std::size_t>(p_ - start));
    double exact = 0;
    const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), exact);
    if (err == std::errc::result_out_of_range) {
      if (detail::number_too_large(text)) return fail(number_out_of_range());
      exact = negative ? -0.0 : 0.0;
    } else if (err != std::errc() || end != text.data() + text.size()) {
      return fail(json::error::syntax);  // not expected for text of JSON's number grammar
    }
    if constexpr (kBuild) stack_.push_double(exact);
    return true;
  }

  const Skip* const skips_;  // the root's skipped members, or null
  const char* const begin_;
  const char* p_;
  const char* const end_;
  std::size_t depth_;
  error_code ec_;
  std::unique_ptr<char[]> unescaped_;  // see escaped_string()
  std::size_t unescaped_size_ = 0;
  unsigned char scratch_[kScratchBytes];
  json::value_stack stack_;
};

}  // namespace

namespace {

json::value parse(std::string_view text, error_code& ec, std::size_t& offset,
                  json::storage_ptr storage, std::size_t max_depth, const Skip* skips) {
  ec = {};
  offset = 0;
  TextParser parser(text, std::move(storage), max_depth, skips);
  return parser.run(ec, offset);
}

}  // namespace

json::value parse_json_text(std::string_view text, error_code& ec, std::size_t& offset,
                            json::storage_ptr storage, std::size_t max_depth) {
  return parse(text, ec, offset, std::move(storage), max_depth, nullptr);
}

json::value parse_json_text(std::string_view text, error_code& ec, std::size_t& offset,
                            json::storage_ptr storage, std::size_t max_depth,
                            const JsonSkips& skips) {
  return parse(text, ec, offset, std::move(storage), max_depth, &skips.root());
}

JsonSkips::JsonSkips(std::initializer_list<std::initializer_list<std::string_view>> paths) {
  for (const auto& path : paths) {
    Node* node = &root_;
    for (std::string_view key : path) {
      auto child = std::ranges::find(node->children, key, &Node::name);
      node = child != node->children.end()
                 ? &*child
                 : &node->children.emplace_back(Node{std::string(key), false, {}});
    }
    if (node != &root_) node->skip = true;
  }
}

}  // namespace kstack::kube
