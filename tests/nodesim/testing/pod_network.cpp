// The test's network namespace (see pod_network.h).
#include "tests/nodesim/testing/pod_network.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace kstack::testenv::e2e {
namespace {

constexpr const char* kInsideMarker = "KSTACK_E2E_POD_NETWORK";

// argv of this process (static initializers have no argc/argv).
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t start = 0; start < all.size();) {
    const auto end = all.find('\0', start);
    args.push_back(all.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return args;
}

}  // namespace

bool in_pod_network() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the marker is only set before any thread starts
  return std::getenv(kInsideMarker) != nullptr;
}

std::string enter_pod_network() {
  if (in_pod_network()) return {};
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "cannot read /proc/self/exe: " + ec.message();
  std::vector<std::string> argv = {"/usr/bin/unshare"};
  if (::geteuid() != 0) argv.insert(argv.end(), {"--user", "--map-root-user"});
  // The binary and its arguments are the script's positional parameters, never its text.
  argv.insert(argv.end(),
              {"--net", "--", "/bin/sh", "-c",
               std::string("PATH=\"$PATH:/usr/sbin:/sbin\" && ip link set lo up && ip addr add ") +
                   kPodNetwork + " dev lo && exec \"$0\" \"$@\"",
               self.string()});
  const auto args = own_arguments();
  if (args.size() > 1) argv.insert(argv.end(), args.begin() + 1, args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  ::setenv(kInsideMarker, "1", 1);  // NOLINT(concurrency-mt-unsafe): one thread
  ::execv(raw[0], raw.data());
  return std::string("cannot run /usr/bin/unshare: ") + std::strerror(errno);
}

}  // namespace kstack::testenv::e2e
