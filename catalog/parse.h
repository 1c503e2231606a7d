// Decoding kstack objects from JSON (boost::json) and YAML text, and writing them back.
//
// Two flavours: parse_* is strict and returns a Result whose error (kInvalid, 422) carries
// every field problem as a cause; decode_* is tolerant and always returns a model, appending
// problems to `errors` and leaving the offending field at its zero value. The admission rules
// use decode_* so that type errors are reported together with every other violation.
// Only the shape is checked here (types, required fields of the JSON structure); what the
// values mean is validator/rules' business — except role probes, checked whole here
// (catalog/probe.h), since kstack copies them into pods as they are.
#pragma once

#include <string_view>

#include <boost/json/value.hpp>

#include "catalog/field_error.h"
#include "catalog/model.h"
#include "kube/error.h"

namespace kstack::catalog {

AppType decode_apptype(const boost::json::value& object, FieldErrors& errors);
Stack decode_stack(const boost::json::value& object, FieldErrors& errors);
// kCopy keeps a copy of the object in `raw`; kBorrow only points `borrowed` at it, makes the
// model's JSON members (a role's env, affinity, tolerations) views of the object's own, and
// puts its other JSON values (an AppType role's minAvailable) in the object's storage, for a
// caller that keeps the object and its storage alive as long as the result and its copies
// (the admission webhook: the request's arena), saving a copy of every object decoded and of
// those members. to_json reads either.
enum class DecodeSource { kCopy, kBorrow };
AppType decode_apptype(const boost::json::value& object, FieldErrors& errors, DecodeSource source);
Stack decode_stack(const boost::json::value& object, FieldErrors& errors, DecodeSource source);
// The part of a Stack the admission webhook reads of the stored one on an UPDATE: metadata's
// name and namespace, spec.app, appCatalog, namingScheme, paused, stopped and each role's id,
// members and storage, decoded as decode_stack decodes them (kBorrow); nothing else (no
// status). The rules decode the whole Stack only for the updates that read more of it.
Stack decode_stack_outline(const boost::json::value& object, FieldErrors& errors);
KStackConfig decode_kstack_config(const boost::json::value& object, FieldErrors& errors);
// `status` is the value of the object's status field; errors are reported under `path`.
StackStatus decode_stack_status(const boost::json::value& status, FieldErrors& errors,
                                std::string_view path = "status");

kube::Result<AppType> parse_apptype(const boost::json::value& object);
kube::Result<Stack> parse_stack(const boost::json::value& object);
kube::Result<KStackConfig> parse_kstack_config(const boost::json::value& object);

// One YAML document (see catalog/yaml.h for multi-document text) decoded as the given kind.
kube::Result<AppType> parse_apptype_yaml(std::string_view yaml);
kube::Result<Stack> parse_stack_yaml(std::string_view yaml);
kube::Result<KStackConfig> parse_kstack_config_yaml(std::string_view yaml);

// Serialisation. Spec-carrying kinds give back the object they were decoded from (unknown
// fields included); the status is built from the model, as the operator owns all of it.
inline const boost::json::value& to_json(const AppType& a) {
  return a.borrowed != nullptr ? *a.borrowed : a.raw;
}
inline const boost::json::value& to_json(const Stack& s) {
  return s.borrowed != nullptr ? *s.borrowed : s.raw;
}
inline const boost::json::value& to_json(const KStackConfig& c) { return c.raw; }
boost::json::value to_json(const StackStatus& status);

}  // namespace kstack::catalog
