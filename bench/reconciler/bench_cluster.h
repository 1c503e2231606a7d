// Shared by the reconciler benchmarks (converge_bench.cpp, resync_bench.cpp): the test control
// plane with kstack's CRDs, clients on it, the bench's AppType and Stacks, creating many objects
// from a few threads, and waiting with a watch (never sleeping) until a set of objects is in
// the state a figure is measured up to.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>
#include <sys/types.h>
#include <tl/expected.hpp>

#include "kube/client.h"
#include "tests/testenv/control_plane.h"

namespace kstack::bench {

// The checkout the benchmark was built from (deploy/crds lives there).
std::filesystem::path default_source_dir();

// `kubectl apply -k <dir>` and waits until its CRDs are Established.
tl::expected<void, std::string> install_crds(const testenv::ControlPlane& cp,
                                             const std::filesystem::path& dir);

// A test control plane (default options) with the CRDs of <source>/deploy/crds Established.
tl::expected<std::unique_ptr<testenv::ControlPlane>, std::string> start_with_crds(
    const std::filesystem::path& source);

// An admin client; qps 0 = no client-side rate limit. With event_qps, Events have a token
// bucket of their own (kube::Config::event_qps), as the operator's client has.
std::shared_ptr<kube::Client> admin_client(const testenv::ControlPlane& cp, double qps = 0,
                                           int burst = 0,
                                           std::optional<double> event_qps = std::nullopt,
                                           int event_burst = 0);

std::string str_at(const boost::json::value& v, std::string_view pointer);
void drop_managed_fields(boost::json::value& object);  // as the informers do

// Creates a namespace; with `for_pods`, waits until its default ServiceAccount has its token
// Secret (the controller-manager's doing; pods are refused before that in 1.20).
tl::expected<void, std::string> create_namespace(kube::Client& client, const std::string& name,
                                                 bool for_pods);

// What the benches create: an AppType "bench" with `roles` roles (the first `ported_roles` with
// a port, hence a Service per member; optional storage; no setup package) and Stacks of it with
// `members` members per role.
struct Shape {
  int roles = 3;
  int members = 3;
  int ported_roles = 3;
  bool storage = false;
};
inline constexpr std::string_view kAppName = "bench";
boost::json::value apptype_object(const std::string& ns, const Shape& shape);
boost::json::value stack_object(const std::string& ns, const std::string& name, const Shape& shape);
std::string stack_name(int index);  // "s-0007"

struct Creation {
  kube::ResourceType type;
  boost::json::value object;  // metadata.namespace says where
};
// POSTs every object from `threads` threads; returns the stored objects (managedFields
// dropped) in the order given, or the first error.
tl::expected<std::vector<boost::json::value>, std::string> create_all(
    kube::Client& client, const std::vector<Creation>& objects, int threads);

// Lists, then watches objects of `type` in `ns` until `done(matching, total)` holds, where
// `matching` counts the objects for which `match` is true. Returns when it first held (the
// list's or the watch event's arrival time). On timeout the error tells the last counts;
// `cancel` ends the wait early (with an error).
using Match = std::function<bool(const boost::json::value&)>;
tl::expected<std::chrono::steady_clock::time_point, std::string> wait_for(
    kube::Client& client, const kube::ResourceType& type, const std::string& ns,
    const std::string& label_selector, const Match& match,
    const std::function<bool(std::size_t matching, std::size_t total)>& done,
    std::chrono::seconds timeout, const kube::CancelToken& cancel = {});

// phase Running and condition Ready=True.
bool pod_ready(const boost::json::value& pod);

// Requests by {verb, code} between two snapshots of a client's counters.
using RequestCounts = std::map<kube::RequestMetrics::Key, std::uint64_t>;
RequestCounts difference(const RequestCounts& after, const RequestCounts& before);
std::uint64_t total(const RequestCounts& counts);
// Everything but GET, LIST and WATCH.
std::uint64_t writes(const RequestCounts& counts);
std::uint64_t count_verb(const RequestCounts& counts, std::string_view verb);

double seconds(std::chrono::steady_clock::duration d);
// User + system CPU seconds a process has used so far (/proc/<pid>/stat); 0 if unknown.
double cpu_seconds(pid_t pid);

}  // namespace kstack::bench
