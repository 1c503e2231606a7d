// Kubernetes resource quantities ("100m", "0.5", "128Mi", "1e3", "2G") as exact integers.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kstack::nodesim {

// The quantity's value rounded up to an integer (memory, storage, pods). nullopt when the
// text is not a quantity or overflows int64.
std::optional<std::int64_t> parse_quantity(std::string_view text);
// The value times 1000, rounded up (CPU in millicores).
std::optional<std::int64_t> parse_quantity_milli(std::string_view text);

}  // namespace kstack::nodesim
