// Does the live object already hold what kstack wants? kstack owns only the fields it sets;
// the API server adds defaults (StatefulSet updateStrategy, Service sessionAffinity, container
// terminationMessagePath, ...) and canonicalises quantities ("0.5" -> "500m"). Comparing the
// desired object as a *subset* of the live one, with quantities compared by value, is what
// keeps a stable Stack at zero writes and stops hot loops on differences kstack cannot fix.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "informer/packed.h"

namespace kstack::executor {

// True when every field of `desired` is present in `live` with an equal value: objects
// recursively (extra live keys ignored, except in label-selector maps — `selector`,
// `matchLabels`, `nodeSelector` — where an extra key changes what is selected), arrays element
// by element with the same length, scalars equal — and strings under `resources`/`storage`
// keys compared as quantities.
// Each takes the live object as a DOM or as cached (packed).
bool covers(const boost::json::value& live, const boost::json::value& desired);
bool covers(const informer::PackedValue& live, const boost::json::value& desired);

// One field of a desired object replaced for a comparison: `path` names it by keys from the
// root (each must be an object key in `desired`), `value` is what it should hold.
struct Override {
  std::span<const std::string_view> path;
  const boost::json::value* value = nullptr;
};

// covers(live, desired) as if `desired` held each override's value at its path, without
// copying `desired` to set them (a StatefulSet's replicas and partition, which a pass decides
// on top of the desired object). False also when an override's path is not in `desired`: the
// caller then builds the object and compares it whole.
bool covers(const boost::json::value& live, const boost::json::value& desired,
            std::span<const Override> overrides);
bool covers(const informer::PackedValue& live, const boost::json::value& desired,
            std::span<const Override> overrides);

// The first path where `live` does not cover `desired` ("" when it does), for logs/events.
std::string first_difference(const boost::json::value& live, const boost::json::value& desired);
std::string first_difference(const informer::PackedValue& live, const boost::json::value& desired);

// The RFC 6901 pointer of the innermost list or selector map holding the first difference
// ("" when that difference is inside neither; nullopt when `live` covers `desired`).
// Server-side apply cannot take entries another field manager added to a list kstack sets (an
// env var, a port edited by kubectl) or keys added to a selector; the executor replaces such a
// list or map as a whole.
std::optional<std::string> differing_list(const boost::json::value& live,
                                          const boost::json::value& desired);
std::optional<std::string> differing_list(const informer::PackedValue& live,
                                          const boost::json::value& desired);

}  // namespace kstack::executor
