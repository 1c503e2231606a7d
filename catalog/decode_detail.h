// Helpers shared by the decoders of the three kinds (not part of the catalog's public API).
// Each reader looks up one field of a JSON object, checks its type and, when the type is
// wrong, records a FieldError naming the path and leaves the result empty: decoding goes on,
// so one pass reports every problem.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "catalog/field_error.h"
#include "catalog/model.h"

namespace kstack::catalog::detail {

class Decoder {
 public:
  // `borrowed`: the object decoded, when the model borrows it (DecodeSource::kBorrow, as the
  // admission webhook does with its request arena). Then opaque() takes views of its members
  // and int_or_string() puts its values in the object's own storage (a bump allocation there,
  // and freeing it is nothing). Else (null) the model's members own their copies.
  explicit Decoder(FieldErrors& errors, const boost::json::value* borrowed = nullptr)
      : errors_(errors),
        storage_(borrowed != nullptr ? borrowed->storage() : boost::json::storage_ptr()),
        borrow_(borrowed != nullptr) {}

  void error(std::string field, std::string reason);

  // Absent and JSON null are "not set" (as in Kubernetes); `required` reports them.
  const boost::json::object* object(const boost::json::object& parent, std::string_view key,
                                    std::string_view path, bool required = false);
  const boost::json::array* array(const boost::json::object& parent, std::string_view key,
                                  std::string_view path, bool required = false);
  std::optional<std::string> string(const boost::json::object& parent, std::string_view key,
                                    std::string_view path, bool required = false);
  // Integers; a double with an integral value (3.0, from YAML or JavaScript) is accepted.
  std::optional<std::int64_t> integer(const boost::json::object& parent, std::string_view key,
                                      std::string_view path, bool required = false);
  std::optional<bool> boolean(const boost::json::object& parent, std::string_view key,
                              std::string_view path);
  std::optional<std::vector<std::string>> strings(const boost::json::object& parent,
                                                  std::string_view key, std::string_view path);
  // map[string]string (labels, annotations, configMeta, nodeSelector).
  StringMap string_map(const boost::json::object& parent, std::string_view key,
                       std::string_view path);
  // ResourceList: quantities may be written as strings or as JSON numbers (`cpu: 2`).
  StringMap quantity_map(const boost::json::object& parent, std::string_view key,
                         std::string_view path);
  // IntOrString (as a PodDisruptionBudget's minAvailable): an int64 or a string value, null
  // when absent. Doubles with an integral value are accepted as integers.
  void int_or_string(boost::json::value& into, const boost::json::object& parent,
                     std::string_view key, std::string_view path);
  // Any JSON value of the given shape (kept opaque): array or object; null when absent. A view
  // of the object's own member when the decoder borrows (see the constructor), else a copy.
  void opaque(JsonMember& into, const boost::json::object& parent, std::string_view key,
              std::string_view path, boost::json::kind expected);

 private:
  // Replaces `member`, storage included (assigning would keep the member's storage and copy).
  static void place(boost::json::value& member, boost::json::value&& v);

  FieldErrors& errors_;
  boost::json::storage_ptr storage_;
  bool borrow_;
};

// The value of a present, non-null field; nullptr otherwise.
const boost::json::value* present(const boost::json::object& parent, std::string_view key);

// Text of a JSON number as Kubernetes would print it in a quantity (2, 0.5, 1e+21).
std::string number_text(const boost::json::value& v);

// Reports `kind` when it is present and not `kind` (objects without kind are accepted).
void check_kind(const boost::json::object& object, std::string_view kind, Decoder& d);

// metadata of any object (errors under "metadata").
ObjectMeta decode_metadata(const boost::json::value& object, Decoder& d);
// Its name and namespace only.
ObjectMeta decode_name(const boost::json::value& object, Decoder& d);

}  // namespace kstack::catalog::detail
