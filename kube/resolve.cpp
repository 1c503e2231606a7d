#include "kube/resolve.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>

namespace kstack::kube {

Result<std::vector<boost::asio::ip::tcp::endpoint>> resolve_host(
    const std::string& host, std::uint16_t port, const std::string& authority,
    std::chrono::steady_clock::time_point deadline, const CancelToken& cancel) {
  using Tcp = boost::asio::ip::tcp;
  struct Lookup {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    bool cancelled = false;
    boost::system::error_code ec;
    std::vector<Tcp::endpoint> endpoints;
  };
  auto lookup = std::make_shared<Lookup>();
  std::thread([lookup, host, port = std::to_string(port)] {
    boost::asio::io_context ioc;
    Tcp::resolver resolver(ioc);
    boost::system::error_code ec;
    const auto results = resolver.resolve(host, port, Tcp::resolver::numeric_service, ec);
    std::lock_guard lock(lookup->mu);
    for (const auto& entry : results) lookup->endpoints.push_back(entry.endpoint());
    lookup->ec = ec;
    lookup->done = true;
    lookup->cv.notify_all();
  }).detach();
  const std::uint64_t action = cancel.add_action([lookup] {
    std::lock_guard lock(lookup->mu);
    lookup->cancelled = true;
    lookup->cv.notify_all();
  });
  std::unique_lock lock(lookup->mu);
  const bool finished =
      lookup->cv.wait_until(lock, deadline, [&] { return lookup->done || lookup->cancelled; });
  const bool was_cancelled = lookup->cancelled;
  auto endpoints = lookup->endpoints;
  const auto ec = lookup->ec;
  lock.unlock();  // before remove_action: the action takes lookup->mu under the token's lock
  cancel.remove_action(action);

  const std::string where = "resolve " + authority + ": ";
  if (was_cancelled) return make_error(ErrorKind::kCancelled, "cancelled");
  if (!finished) return make_error(ErrorKind::kTimeout, where + "timed out");
  if (ec) return make_error(ErrorKind::kTransport, where + ec.message());
  if (endpoints.empty()) return make_error(ErrorKind::kTransport, where + "no addresses");
  return endpoints;
}

}  // namespace kstack::kube
