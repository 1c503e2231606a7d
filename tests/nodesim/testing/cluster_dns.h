// Cluster DNS for the e2e binaries' pod network (docs/nodesim.md): dnsmasq, from Debian, serves
// cluster.local on kClusterDnsAddress:53 from a hosts directory it re-reads on change (inotify),
// and a watcher keeps one hosts file there equal to the cluster's headless Services: for each
// address of their Endpoints (ready pods, plus not-ready ones with publishNotReadyAddresses, as
// the endpoints controller lists them) `<service>.<ns>.svc.cluster.local`, and with the
// address's hostname (a pod's spec.hostname with spec.subdomain = the Service)
// `<hostname>.<service>.<ns>.svc.cluster.local` — the records kube-dns/CoreDNS serve.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "kube/client.h"
#include "tests/nodesim/testing/pod_network.h"
#include "tests/testenv/process.h"

namespace kstack::testenv::e2e {

inline constexpr const char* kClusterDomain = "cluster.local";

// The hosts-file lines ("<ip> <name>") of one Endpoints object (pure): none unless the
// object carries the endpoints controller's `service.kubernetes.io/headless` label.
std::vector<std::string> dns_records(const boost::json::value& endpoints);

class ClusterDns {
 public:
  // Starts dnsmasq (logging into `work_dir`/dnsmasq.log) and the watcher; returns once the
  // first hosts file is written. Needs the pod network (kClusterDnsAddress local).
  static tl::expected<std::unique_ptr<ClusterDns>, std::string> start(
      std::shared_ptr<kube::Client> client, const std::filesystem::path& work_dir);
  ~ClusterDns();
  ClusterDns(const ClusterDns&) = delete;
  ClusterDns& operator=(const ClusterDns&) = delete;

 private:
  ClusterDns() = default;
  void watch();
  void write_hosts();

  std::shared_ptr<kube::Client> client_;
  std::filesystem::path hosts_dir_;
  ChildProcess dnsmasq_;
  std::map<std::string, std::vector<std::string>> records_;  // by "<ns>/<name>"
  std::atomic<bool> stopping_{false};
  kube::CancelToken cancel_;
  std::thread watcher_;
};

}  // namespace kstack::testenv::e2e
