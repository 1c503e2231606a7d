// AppType role probes (docs/api.md "Probes"): decoding `spec.roles[].readinessProbe`,
// `livenessProbe` and `startupProbe`, and the core/v1 Probe kstack puts on the member's
// container. Unlike the rest of the AppType decoder this checks values too (ranges, exactly
// one handler, unknown fields refused): a probe is copied into every member's pod, and one
// the API server would refuse must be refused when the AppType is written, not when a Stack's
// StatefulSet is.
#pragma once

#include <optional>
#include <string_view>

#include <boost/json/object.hpp>

#include "catalog/decode_detail.h"
#include "catalog/model.h"

namespace kstack::catalog {

inline constexpr std::string_view kReadinessProbe = "readinessProbe";
inline constexpr std::string_view kLivenessProbe = "livenessProbe";
inline constexpr std::string_view kStartupProbe = "startupProbe";

// The probe at `role[key]` (absent or null: nullopt). Errors name `<role_path>.<key>...`.
std::optional<Probe> decode_probe(const boost::json::object& role, std::string_view key,
                                  std::string_view role_path, detail::Decoder& d);

// A named port must be one the role's container declares: the id of one of its services with
// an endpoint (kstack names container ports after them). Errors name the port's field.
void check_probe_ports(const AppType& app, FieldErrors& errors);

// The core/v1 Probe for the container (only the fields the AppType sets).
boost::json::object probe_json(const Probe& probe);

}  // namespace kstack::catalog
