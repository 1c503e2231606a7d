// The objects kstack's reconciler makes for a Stack (3 StatefulSets, headless and member
// Services, member claims and pods: bench/reconciler/live_objects.h), to create in the test
// control plane for the memory benchmarks. Server-set fields are dropped for the POST; the
// status of a converged cluster (Running pods, Bound claims, ready StatefulSets) is PUT to the
// status subresource afterwards, so that the cached objects have their real size. The control
// plane runs no controller-manager: nothing deletes or changes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "catalog/model.h"
#include "kube/client.h"

namespace kstack::bench {

struct OwnedObject {
  kube::ResourceType type;
  boost::json::value object;  // to POST
  boost::json::value status;  // to PUT to /status after; null: none
};

// For a Stack as the API server stored it. `serial` numbers the synthetic uids.
tl::expected<std::vector<OwnedObject>, std::string> owned_objects(
    const boost::json::value& stored_stack, const catalog::AppType& app, std::uint64_t& serial);

// Creates them (and PUTs their status) from `threads` threads; the first error, if any.
tl::expected<void, std::string> create_owned(kube::Client& client,
                                             const std::vector<OwnedObject>& objects, int threads);

// The ServiceAccount "default" (pods need it; no controller-manager makes it here).
tl::expected<void, std::string> create_default_service_account(kube::Client& client,
                                                               const std::string& ns);

}  // namespace kstack::bench
