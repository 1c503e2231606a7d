// Times as the API server writes them (metav1.Time): RFC 3339.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace kstack::kube {

// 2006-01-02T15:04:05(.999999999)?(Z|+07:00); nullopt for anything else. Fractions of a second
// are accepted and dropped.
std::optional<std::chrono::sys_seconds> parse_rfc3339(std::string_view text);

}  // namespace kstack::kube
