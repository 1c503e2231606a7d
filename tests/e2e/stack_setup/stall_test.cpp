// Setup steps run on the setup executor, not on the reconcile workers (docs/reconciler.md): with
// one worker, a Stack whose http package server accepts the download and never answers does not
// hold up another Stack, which is set up and Ready while the first still waits on its package.
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "catalog/model.h"
#include "tests/e2e/setup/package_fixture.h"
#include "tests/e2e/stack_setup/fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using catalog::resources::kAppTypes;
using catalog::resources::kStacks;
using executor::testing::sha256_hex;

// Accepts connections on 127.0.0.1 and never answers: each stays open, unread, until the server
// is destroyed (which closes them, so the fetch fails at once and nothing waits for its timeout).
class StalledServer {
 public:
  StalledServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error(
          fmt::format("stalled server: {}", std::system_category().message(errno)));
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~StalledServer() {
    ::shutdown(listener_, SHUT_RDWR);  // wakes the blocked accept()
    thread_.join();
    ::close(listener_);
    for (int fd : held_) ::close(fd);
  }
  StalledServer(const StalledServer&) = delete;
  StalledServer& operator=(const StalledServer&) = delete;

  std::string url(std::string_view path) const {
    return fmt::format("http://127.0.0.1:{}{}", port_, path);
  }
  // Waits until a client has connected.
  bool wait_connected(std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return !held_.empty(); });
  }
  // The first connection is still open at the client's end: its fetch still waits.
  bool first_still_open() const {
    std::lock_guard lock(mu_);
    if (held_.empty()) return false;
    char byte;
    // 0 = the client closed it; -1 with EAGAIN = open, nothing more to read.
    const auto n = ::recv(held_.front(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return true;  // the request is there, unread
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

 private:
  void accept_loop() {
    for (;;) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        return;
      }
      std::lock_guard lock(mu_);
      held_.push_back(fd);
      cv_.notify_all();
    }
  }

  int listener_ = -1;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> held_;
  std::thread thread_;
};

class Stall : public StackSetupTest {
 protected:
  void adjust_controller(reconciler::ControllerOptions& options) override {
    // One worker: on a controller that ran setup on its workers, the stalled download would
    // hold it, and nothing else would be reconciled until the fetch timed out — which is set
    // past the test's wait for the second Stack.
    options.workers = 1;
    options.setup.fetch_timeout = kConvergeTimeout + std::chrono::seconds(120);
  }
};

TEST_F(Stall, AStackWhosePackageServerStallsDoesNotDelayAnotherStacksSetup) {
  StalledServer stalled;
  const auto sha = sha256_hex(setup_package());
  create_package_configmap("pkg", "setup.tgz", setup_package());
  const auto start = std::chrono::steady_clock::now();
  create(kAppTypes, logapp(ns_, "stalled", stalled.url("/setup.tgz"), sha));
  create(kStacks, logapp_stack(ns_, "stalled", "stalled", 1));
  ASSERT_TRUE(stalled.wait_connected(kConvergeTimeout))
      << "the stalled Stack's member never asked for its package\n"
      << describe_stack(*client_, ns_, "stalled");
  const auto stalled_since = std::chrono::steady_clock::now();

  const auto second_created = std::chrono::steady_clock::now();
  create(kAppTypes, logapp(ns_, "quick", "configmap://pkg/setup.tgz", sha));
  create(kStacks, logapp_stack(ns_, "quick", "quick", 1));
  auto quick = wait_quiet("quick");
  ASSERT_TRUE(quick) << quick.error();
  const double quick_ready = seconds_since(second_created);

  // The order of events: the second Stack is Ready while the first still waits on the same
  // download (its connection open, its member not set up).
  EXPECT_TRUE(stalled.first_still_open()) << "the stalled download ended before";
  auto first = client_->get(kStacks, ns_, "stalled");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(stack_ready(*first));
  const auto members = status_members(*first, "worker");
  ASSERT_EQ(members.count("stalled-worker-0"), 1u) << json::serialize(*first);
  EXPECT_EQ(str_at(members.at("stalled-worker-0"), "/state"), "creating");
  std::cout << fmt::format(
      "[ stall ] second Stack Ready {:.1f} s after its creation; the first stalled on its "
      "package for {:.1f} s so far (created {:.1f} s ago), still not Ready\n",
      quick_ready, seconds_since(stalled_since), seconds_since(start));
}

}  // namespace
}  // namespace kstack::testenv::e2e
