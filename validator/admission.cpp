// The AdmissionReview envelope (admission.k8s.io/v1 and v1beta1): decoding a review into an
// AdmissionRequest and encoding the AdmissionResponse back, in the request's own apiVersion
// with its uid echoed, as the API server requires. The body size is bounded by the server.
#include "validator/admission.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "catalog/model.h"
#include "kube/json_member.h"
#include "kube/json_parser.h"

namespace kstack::validator {

namespace json = boost::json;

// AdmissionResponse::deny is in admission_types.cpp (kstack_admission_types).

namespace {

constexpr std::string_view kV1 = "admission.k8s.io/v1";
constexpr std::string_view kV1beta1 = "admission.k8s.io/v1beta1";
constexpr std::string_view kKind = "AdmissionReview";
// Kubernetes objects nest deeper than Boost.JSON's default of 32 (pod templates in a Stack).
constexpr std::size_t kMaxJsonDepth = 128;
constexpr std::size_t kMaxQuotedChars = 64;  // of a wrong value quoted in an error
constexpr std::size_t kMinArenaBytes = 4096;
// A review's DOM takes 2-3 bytes of arena per byte of text (the bench's Stack reviews: 2.7),
// and the decoded Stack adds its JSON members: room for both in the first block, so that the
// arena makes one allocation per request, not two.
constexpr std::size_t kArenaBytesPerBodyByte = 3;
constexpr std::size_t kMaxInitialArenaBytes = 1u << 20;  // grows beyond this as needed

tl::unexpected<kube::Error> bad_request(std::string message) {
  return kube::make_error(kube::ErrorKind::kBadRequest, "AdmissionReview: " + std::move(message));
}

// Appends rather than `"\"" + s`: gcc 12 -O3 reports a false -Wrestrict on the latter.
std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(std::min(s.size(), kMaxQuotedChars) + 5);
  out += '"';
  out.append(s.substr(0, kMaxQuotedChars));
  if (s.size() > kMaxQuotedChars) out += "...";
  out += '"';
  return out;
}

std::string_view type_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "unknown";
}

// The DOM of one review lives in one arena (a monotonic resource, freed at once with the
// request): a Stack review is hundreds of small allocations. The values do not own the arena:
// with a shared (reference-counted) resource every value built, copied or destroyed would
// count references atomically, and destroying the DOM would visit every value.
// The body is whole in memory, so kube::parse_json_text reads it (faster than the stream parser
// on the escaped JSON kubectl's last-applied-configuration carries: kube/json_text.cpp). Numbers
// are parsed exactly (kube/json_parser.h), so that a patch quoting one gives the API server the
// number it sent, and one beyond double's range is refused: it would be echoed as `Infinity`, which
// is not JSON, and the API server's Go encoder never writes one.
// The members no rule reads are parsed (a review is refused for them as for any other part)
// but left out of the DOM: managedFields, as large as the object itself once several managers
// wrote it (server-side apply lists every field); kubectl's last-applied-configuration, the
// whole object again as escaped JSON (no rule reads annotations other than kstack.io/ ones, and
// no patch rewrites the annotations); and the parts of the request decode_request does not take.
const kube::JsonSkips& unread_members() {
  static const kube::JsonSkips skips{
      {"request", "object", "metadata", "managedFields"},
      {"request", "oldObject", "metadata", "managedFields"},
      {"request", "object", "metadata", "annotations", catalog::kLastAppliedAnnotation},
      {"request", "oldObject", "metadata", "annotations", catalog::kLastAppliedAnnotation},
      {"request", "requestKind"},
      {"request", "requestResource"},
      {"request", "requestSubResource"},
      {"request", "options"},
      {"request", "userInfo", "uid"},
      {"request", "userInfo", "groups"},
      {"request", "userInfo", "extra"},
  };
  return skips;
}

kube::Result<json::value> parse(std::string_view body, json::monotonic_resource& arena) {
  boost::system::error_code ec;
  std::size_t at = 0;
  json::value v = kube::parse_json_text(body, ec, at, json::storage_ptr(&arena), kMaxJsonDepth,
                                        unread_members());
  if (!ec) return v;
  if (ec == kube::number_out_of_range()) {
    return bad_request("the number ending at byte " + std::to_string(at) +
                       " is beyond the range of a double");
  }
  if (ec == json::error::extra_data) {
    return bad_request("unexpected data after the JSON value at byte " + std::to_string(at));
  }
  return bad_request("body is not JSON at byte " + std::to_string(at) + ": " +
                     (body.empty() ? std::string("empty body") : ec.message()));
}

// Moves an embedded object out of the review, keeping its arena: move-assigning into a value
// of another memory resource would copy it, so `to` is rebuilt from the moved value.
void take_object(json::object& from, std::string_view key, json::value& to) {
  json::value* v = from.if_contains(key);
  if (v == nullptr || !v->is_object()) return;
  std::destroy_at(&to);
  std::construct_at(&to, std::move(*v));
}

// Reads the optional members of one JSON object, each checked for its type; the first problem
// is kept (with its path) and later reads become no-ops.
class Reader {
 public:
  // `path` (a literal) names the object in messages.
  Reader(const json::object& object, std::string_view path) : object_(object), path_(path) {}

  // A string member; `required` makes absence (or null) an error.
  std::string string(std::string_view key, bool required = false) {
    const json::value* v = find(key, required);
    if (v == nullptr) return {};
    if (!v->is_string()) return wrong(key, *v, "a string"), std::string{};
    return std::string(v->get_string());
  }

  bool boolean(std::string_view key) {
    const json::value* v = find(key, false);
    if (v == nullptr) return false;
    if (!v->is_bool()) return wrong(key, *v, "a boolean"), false;
    return v->get_bool();
  }

  // An object member: null when absent or null.
  const json::object* object(std::string_view key, bool required = false) {
    const json::value* v = find(key, required);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) return wrong(key, *v, "an object"), nullptr;
    return &v->get_object();
  }

  // Checks an embedded Kubernetes object: an object, null or absent.
  void object_or_null(std::string_view key) {
    const json::value* v = find(key, false);
    if (v != nullptr && !v->is_object()) wrong(key, *v, "an object");
  }

  std::string at(std::string_view key) const {
    std::string out(path_);
    if (!out.empty()) out += '.';
    out += key;
    return out;
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }

 private:
  const json::value* find(std::string_view key, bool required) {
    if (!ok()) return nullptr;
    const json::value* v = kube::member(object_, key);
    if (v == nullptr || v->is_null()) {
      if (required) fail("missing " + at(key));
      return nullptr;
    }
    return v;
  }
  void wrong(std::string_view key, const json::value& v, std::string_view expected) {
    fail(at(key) + " is " + std::string(type_name(v)) + ", not " + std::string(expected));
  }

  const json::object& object_;
  std::string_view path_;
  std::string error_;
};

kube::Result<AdmissionRequest> decode_request(json::object& req, std::string api_version) {
  AdmissionRequest out;
  out.api_version = std::move(api_version);
  Reader r(req, "request");
  out.uid = r.string("uid", true);
  if (r.ok() && out.uid.empty()) r.fail("request.uid is empty");
  if (const json::object* kind = r.object("kind", true)) {
    Reader k(*kind, "request.kind");
    out.group = k.string("group");
    out.version = k.string("version");
    out.kind = k.string("kind", true);
    if (k.ok() && out.kind.empty()) k.fail("request.kind.kind is empty");
    r.fail(k.error());
  }
  if (const json::object* resource = r.object("resource")) {
    Reader res(*resource, "request.resource");
    out.resource = res.string("resource");
    r.fail(res.error());
  }
  out.sub_resource = r.string("subResource");
  out.operation = r.string("operation", true);
  if (r.ok() && out.operation.empty()) r.fail("request.operation is empty");
  out.name = r.string("name");
  out.namespace_name = r.string("namespace");
  if (const json::object* user = r.object("userInfo")) {
    Reader u(*user, "request.userInfo");
    out.username = u.string("username");
    r.fail(u.error());
  }
  out.dry_run = r.boolean("dryRun");
  r.object_or_null("object");
  r.object_or_null("oldObject");
  if (!r.ok()) return bad_request(r.error());
  take_object(req, "object", out.object);
  take_object(req, "oldObject", out.old_object);
  return out;
}

constexpr std::array<char, 64> kBase64Alphabet = {
    'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O', 'P',
    'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z', 'a', 'b', 'c', 'd', 'e', 'f',
    'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 's', 't', 'u', 'v',
    'w', 'x', 'y', 'z', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '+', '/'};

// Standard base64 with padding: what the API server expects for `response.patch`.
std::string base64(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto byte = [&](std::size_t at) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(in[at]));
  };
  for (; i + 3 <= in.size(); i += 3) {
    const std::uint32_t n = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kBase64Alphabet[n >> 18 & 63];
    out += kBase64Alphabet[n >> 12 & 63];
    out += kBase64Alphabet[n >> 6 & 63];
    out += kBase64Alphabet[n & 63];
  }
  if (const std::size_t rest = in.size() - i; rest > 0) {
    const std::uint32_t n = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += kBase64Alphabet[n >> 18 & 63];
    out += kBase64Alphabet[n >> 12 & 63];
    out += rest == 2 ? kBase64Alphabet[n >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

// `s` as a JSON string, quotes included, escaped as Boost.JSON's serializer escapes it: `"`,
// `\\` and control characters; other bytes as they are (the strings come from the parsed review
// or from kstack's own messages).
void append_json_string(std::string& out, std::string_view s) {
  constexpr std::string_view kHex = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet appended
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s, run, i - run);
    run = i + 1;
    out += '\\';
    switch (c) {
      case '"':
      case '\\':
        out += static_cast<char>(c);
        break;
      case '\b':
        out += 'b';
        break;
      case '\f':
        out += 'f';
        break;
      case '\n':
        out += 'n';
        break;
      case '\r':
        out += 'r';
        break;
      case '\t':
        out += 't';
        break;
      default:
        out += "u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
  }
  out.append(s, run);
  out += '"';
}

}  // namespace

kube::Result<AdmissionRequest> decode_review(std::string_view body) {
  auto arena = std::make_shared<json::monotonic_resource>(
      std::clamp(body.size() * kArenaBytesPerBodyByte, kMinArenaBytes, kMaxInitialArenaBytes));
  auto parsed = parse(body, *arena);
  if (!parsed) return tl::unexpected(parsed.error());
  if (!parsed->is_object()) {
    return bad_request("body is " + std::string(type_name(*parsed)) + ", not an object");
  }
  json::object& review = parsed->get_object();
  Reader r(review, "");
  const std::string api_version = r.string("apiVersion");
  const std::string kind = r.string("kind");
  if (!r.ok()) return bad_request(r.error());
  if (api_version.empty()) return bad_request("missing apiVersion");
  if (api_version != kV1 && api_version != kV1beta1) {
    return bad_request("wrong apiVersion " + quoted(api_version) + ", expected " +
                       std::string(kV1) + " or " + std::string(kV1beta1));
  }
  if (kind != kKind) {
    return bad_request("kind must be AdmissionReview, not " + quoted(kind));
  }
  if (!r.object("request")) {
    return bad_request(r.ok() ? std::string("missing request") : r.error());
  }
  auto request = decode_request(review.at("request").get_object(), api_version);
  if (request) request->arena = std::move(arena);
  return request;
}

std::string encode_review(const AdmissionRequest& request, const AdmissionResponse& response) {
  // Written straight into one string rather than built as a DOM and serialized: the answer has
  // one fixed shape, and the DOM (a dozen members, each looked up on insertion) cost as much as
  // the rest of an allow-all answer's encoding (callgrind: 5.1k instructions, now ~1k).
  const std::optional<std::string> patch =
      response.patch && !response.patch->empty()
          ? std::optional<std::string>(base64(json::serialize(*response.patch)))
          : std::nullopt;
  std::size_t size = 160 + request.uid.size() + response.reason.size() +
                     response.message.size() * 2 + (patch ? patch->size() : 0);
  for (const auto& w : response.warnings) size += w.size() + 3;
  std::string out;
  out.reserve(size);
  out += R"({"apiVersion":)";
  append_json_string(out,
                     request.api_version.empty() ? kV1 : std::string_view(request.api_version));
  out += R"(,"kind":"AdmissionReview","response":{"uid":)";
  append_json_string(out, request.uid);
  out += response.allowed ? R"(,"allowed":true)" : R"(,"allowed":false)";
  if (!response.allowed || response.code != 0 || !response.message.empty()) {
    out += R"(,"status":{)";
    const std::size_t open = out.size();
    const auto member = [&](std::string_view name) {
      if (out.size() != open) out += ',';
      out += name;
    };
    if (!response.allowed) member(R"("status":"Failure")");
    if (response.code != 0) {
      member(R"("code":)");
      out += std::to_string(response.code);
    }
    if (!response.reason.empty()) {
      member(R"("reason":)");
      append_json_string(out, response.reason);
    }
    if (!response.message.empty()) {
      member(R"("message":)");
      append_json_string(out, response.message);
    }
    out += '}';
  }
  if (patch) {
    out += R"(,"patchType":"JSONPatch","patch":")";
    out += *patch;  // base64: nothing to escape
    out += '"';
  }
  if (!response.warnings.empty()) {
    out += R"(,"warnings":[)";
    for (std::size_t i = 0; i < response.warnings.size(); ++i) {
      if (i != 0) out += ',';
      append_json_string(out, response.warnings[i]);
    }
    out += ']';
  }
  out += "}}";
  return out;
}

}  // namespace kstack::validator
