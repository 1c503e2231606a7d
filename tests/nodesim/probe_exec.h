// exec probes: the probe's command run inside the container's sandbox (as an exec is), its
// output discarded, killed at the probe's timeout.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "tests/nodesim/process.h"

namespace kstack::nodesim {

// Success: the command exited 0 within `timeout`; else its exit code, or the timeout.
tl::expected<void, std::string> run_exec_probe(const ExecTarget& target,
                                               const std::vector<std::string>& command,
                                               std::chrono::milliseconds timeout);

}  // namespace kstack::nodesim
