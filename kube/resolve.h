// Host name lookup with a deadline and cancellation, shared by the HTTPS transport and the exec
// WebSocket client. getaddrinfo can be neither bounded nor cancelled, so it runs on a short-lived
// detached thread that may outlive the wait; the caller returns at the deadline or on cancel.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "kube/error.h"
#include "kube/transport.h"

namespace kstack::kube {

// Errors: kCancelled ("cancelled"), kTimeout ("resolve <authority>: timed out"), kTransport
// ("resolve <authority>: <reason>" or "...: no addresses").
Result<std::vector<boost::asio::ip::tcp::endpoint>> resolve_host(
    const std::string& host, std::uint16_t port, const std::string& authority,
    std::chrono::steady_clock::time_point deadline, const CancelToken& cancel);

}  // namespace kstack::kube
