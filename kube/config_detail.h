// Helpers shared by config.cpp, credentials.cpp and exec_plugin.cpp; not part of kube's API.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "kube/error.h"

namespace kstack::kube::detail {

// Credential files (tokens, CA bundles, certificates, keys) larger than this are refused.
inline constexpr std::size_t kMaxCredentialFileBytes = 1u << 20;

// strerror_r, thread-safe.
std::string errno_message(int err);

// The whole file, or a kConfig error "cannot read <path>: <reason>" / "<path> is larger than
// <max_bytes> bytes".
Result<std::string> read_file_limited(const std::filesystem::path& path, std::size_t max_bytes);

// `text` without leading and trailing ASCII whitespace.
std::string_view trim(std::string_view text);

}  // namespace kstack::kube::detail
