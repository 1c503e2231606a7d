// The flags of `kstack operator`, each with an environment variable (KSTACK_*) as fallback, as
// `kstack operator --help` lists them. Durations are Go-style ("500ms", "15s", "5m", "1h");
// a bare number is seconds.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "cmd/operator.h"

namespace CLI {
class App;
}

namespace kstack::cmd {

// Adds the `operator` subcommand to `app`, bound to `options`.
CLI::App* add_operator_command(CLI::App& app, OperatorOptions& options);

// "250ms", "15s", "5m", "1h", "1m30s" or a bare number of seconds; nullopt when malformed or
// negative.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace kstack::cmd
