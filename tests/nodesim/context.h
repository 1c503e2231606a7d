// What the simulator's parts share: options, the node's identity, the API client, the
// informer caches, the runtime and the "node lost" switch. Owned by Simulator.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "informer/informer.h"
#include "informer/work_queue.h"
#include "kube/client.h"
#include "tests/nodesim/fit.h"
#include "tests/nodesim/runtime.h"

namespace kstack::nodesim {

// Names on API objects.
inline constexpr const char* kProvisionerName = "kstack.io/nodesim";
inline constexpr const char* kNodeLabel = "kstack.io/nodesim";  // "true" on simulated nodes
inline constexpr const char* kInstanceAnnotation = "kstack.io/nodesim-instance";
inline constexpr const char* kControlPortAnnotation = "kstack.io/nodesim-control-port";
inline constexpr const char* kPvNodeAnnotation = "kstack.io/nodesim-node";
inline constexpr const char* kProvisionedByAnnotation = "pv.kubernetes.io/provisioned-by";
inline constexpr const char* kDefaultClassAnnotation =
    "storageclass.kubernetes.io/is-default-class";
inline constexpr const char* kDefaultSchedulerName = "default-scheduler";
inline constexpr const char* kKubeletVersion = "v1.20.2";

// Defaults, as a kubelet's (nodeLeaseDurationSeconds 40, renew interval 10 s).
inline constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{10'000};
inline constexpr int kLeaseDurationSeconds = 40;

struct Options {
  std::string kubeconfig;  // "" = KUBECONFIG / ~/.kube/config
  std::string node_name;
  std::filesystem::path state_dir;
  int port = 0;          // HTTPS exec endpoint; 0 = any free port
  int control_port = 0;  // plain-HTTP test controls; 0 = any free port
  std::map<std::string, std::string> labels;
  std::string cpu = "8";
  std::string memory = "16Gi";
  int pods = 110;
  std::chrono::milliseconds heartbeat_interval = kDefaultHeartbeatInterval;
  std::string storage_class = "standard";  // "" = create none
  std::string instance_id;                 // annotation kInstanceAnnotation, for launchers
  std::string bwrap = "/usr/bin/bwrap";
  int kubelet_workers = 4;
  // Exec subprotocols served, comma-separated (exec_protocol.h); "" = all of them.
  std::string exec_protocols;
  // Run containers' httpGet readiness probes against the pod IP and report Ready from them
  // (default: containers are ready once running). For processes a test runs on a pod's IP.
  bool http_probes = false;
  // Pod IPs: the .2 to .254 of this /24 (validated by main). The default is loopback, which
  // the API server refuses in Endpoints; the e2e launcher gives each node a /24 that is local
  // in the test's pod network (tests/nodesim/testing/pod_network.h).
  std::string pod_cidr = "127.0.0.0/24";
  // The cluster DNS server's IPv4 address for the sandboxes' /etc/resolv.conf (with the
  // cluster.local search path); "" = a copy of the host's.
  std::string cluster_dns;
  // Registered images: reference -> build context directory (--image=<ref>=<dir>,
  // image.h). A container whose image is not here runs as if images did not exist.
  std::map<std::string, std::filesystem::path> images;
};

namespace resources {
// storage.k8s.io/v1 StorageClass (kube/resource.h lists what kstack itself uses).
inline const kube::ResourceType kStorageClasses{"storage.k8s.io", "v1", "storageclasses",
                                                "StorageClass", false};
}  // namespace resources

inline informer::WorkQueueOptions queue_options(std::string name) {
  informer::WorkQueueOptions o;
  o.name = std::move(name);
  return o;
}

struct Context {
  Options options;
  NodeInfo node;
  std::shared_ptr<kube::Client> client;
  informer::Informer* pods = nullptr;  // all namespaces
  informer::Informer* claims = nullptr;
  informer::Informer* volumes = nullptr;
  informer::Informer* classes = nullptr;
  informer::Informer* nodes = nullptr;  // where unpinned claims go (provisioner.h)
  Runtime* runtime = nullptr;
  ImageSet images;  // options.images, read at start
  // Heartbeats stopped (POST /heartbeats/stop): the node is "lost", so its kubelet and
  // scheduler stop writing to the API too, as a partitioned node would.
  std::atomic<bool> lost{false};

  std::filesystem::path volumes_dir() const { return options.state_dir / "volumes"; }
};

}  // namespace kstack::nodesim
