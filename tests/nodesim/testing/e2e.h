// For e2e test binaries with simulated nodes: link `kstack_nodesim_gtest` (it brings main()).
// The binary's control plane runs the controller-manager with a short node-monitor grace
// period, so that a node whose heartbeats stop is NotReady within seconds (a kubelet-like
// default of 40 s would make node-loss tests slow). Plus helpers: admin client, namespaces,
// waiting on watches (never sleeping), kubectl exec over WebSocket. A binary may add users,
// CRDs (installed before the controller-manager starts) and shared simulated nodes to its
// environment with ConfigureEnvironment.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>
#include <gtest/gtest.h>
#include <tl/expected.hpp>

#include "kube/client.h"
#include "tests/nodesim/testing/appdef_images.h"
#include "tests/testenv/control_plane.h"
#include "tests/testenv/node_simulator.h"

namespace kstack::testenv::e2e {

// kube-controller-manager flags of the e2e control plane (with the launcher's 2 s heartbeats).
inline const std::vector<std::string>& controller_manager_args() {
  static const std::vector<std::string> args = {"--node-monitor-period=1s",
                                                "--node-monitor-grace-period=10s"};
  return args;
}

// What an e2e binary adds to its control plane. Set it before main() runs, from a static
// initializer (see ConfigureEnvironment); Environment::SetUp reads it once.
struct EnvironmentOptions {
  std::vector<TestUser> users;  // besides alice and bob (tests/testenv/environment.h)
  // Kustomization directories with CRDs (e.g. <source>/deploy/crds), applied with
  // `kubectl apply -k` before kube-controller-manager starts, and waited for until discovery
  // serves them: its garbage collector then knows the kinds from the start, so objects owned
  // by custom resources are collected at once (see ControlPlane::Options).
  std::vector<std::filesystem::path> crd_dirs;
  // Simulated nodes started after the control plane and stopped before it, shared by the
  // binary's tests (node_simulator(i)); each from `node` with node_name "<node_name>-<i>",
  // and every appdefs image (appdef_images()) added to `node.images`.
  int node_simulators = 0;
  NodeSimulatorOptions node;
  // kube-apiserver flags (ControlPlane::Options::apiserver_extra_args).
  std::vector<std::string> apiserver_extra_args;
};
EnvironmentOptions& environment_options();

// `const ConfigureEnvironment kConfigure([](EnvironmentOptions& o) { ... });` at namespace
// scope in a test binary.
struct ConfigureEnvironment {
  explicit ConfigureEnvironment(const std::function<void(EnvironmentOptions&)>& configure) {
    configure(environment_options());
  }
};

// Applies the kustomization in `dir` and waits until its CRDs are Established and listed by
// discovery.
tl::expected<void, std::string> install_crds(const ControlPlane& cp,
                                             const std::filesystem::path& dir);

class Environment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;
};

// The binary's control plane; throws std::logic_error when it did not start.
ControlPlane& control_plane();
// The i-th simulated node of EnvironmentOptions::node_simulators; throws std::logic_error
// when there is none.
NodeSimulator& node_simulator(std::size_t index = 0);
std::shared_ptr<kube::Client> admin();

// A fresh namespace "<prefix>-<random>".
std::string make_namespace(kube::Client& client, std::string_view prefix);

std::string str_at(const boost::json::value& v, std::string_view pointer);
// "True"/"False"/"Unknown" of status.conditions[type], "" when absent.
std::string condition(const boost::json::value& object, std::string_view type);

// phase Running and condition Ready True.
bool running_and_ready(const boost::json::value& pod);

using Objects = std::map<std::string, boost::json::value>;  // by name

// Lists, then watches objects of `type` in `ns` (optionally by label selector) until `done`
// holds for the current set; returns that set. On timeout the error shows the last state.
tl::expected<Objects, std::string> wait_for(kube::Client& client, const kube::ResourceType& type,
                                            const std::string& ns,
                                            const std::string& label_selector,
                                            const std::function<bool(const Objects&)>& done,
                                            std::chrono::seconds timeout);
// The same for one named object (absent objects never satisfy `done`).
tl::expected<boost::json::value, std::string> wait_for_object(
    kube::Client& client, const kube::ResourceType& type, const std::string& ns,
    const std::string& name, const std::function<bool(const boost::json::value&)>& done,
    std::chrono::seconds timeout);

// Until the named object does not exist.
tl::expected<void, std::string> wait_for_absent(kube::Client& client,
                                                const kube::ResourceType& type,
                                                const std::string& ns, const std::string& name,
                                                std::chrono::seconds timeout);

// The exec subprotocol kube::exec negotiates with a simulator started with default options:
// its first choice (kube/exec.h) among default_exec_protocols() (KSTACK_NODESIM_EXEC_PROTOCOLS;
// ctest runs some binaries against v4-only and channel.k8s.io-only nodes), "" if none.
std::string expected_exec_protocol();

// A kubectl that speaks WebSocket exec (v5.channel.k8s.io, kubectl >= 1.30): $KSTACK_WS_KUBECTL,
// else the newest /usr/lib/google-cloud-sdk/bin/kubectl.1.3x, else `kubectl` from PATH. The
// testenv's kubectl 1.20 only speaks SPDY, which no simulator serves.
std::filesystem::path websocket_kubectl();

// kubectl exec [-i] -n ns pod -c container -- argv... (input given => -i).
CommandResult kubectl_exec(const ControlPlane& cp, const std::string& ns, const std::string& pod,
                           const std::string& container, const std::vector<std::string>& argv,
                           const std::optional<std::string>& input = std::nullopt);

}  // namespace kstack::testenv::e2e
