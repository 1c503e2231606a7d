// Cluster DNS: dnsmasq plus the Endpoints watcher writing its hosts file (see cluster_dns.h).
#include "tests/nodesim/testing/cluster_dns.h"

#include <chrono>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

namespace kstack::testenv::e2e {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

const kube::ResourceType kEndpoints{"", "v1", "endpoints", "Endpoints", true};
constexpr const char* kHeadlessLabel = "service.kubernetes.io/headless";

std::string str_of(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

std::string key_of(const json::value& object) {
  return str_of(object, "/metadata/namespace") + "/" + str_of(object, "/metadata/name");
}

}  // namespace

std::vector<std::string> dns_records(const json::value& endpoints) {
  boost::system::error_code ec;
  const auto* labels = endpoints.find_pointer("/metadata/labels", ec);
  if (labels == nullptr || !labels->is_object() || !labels->get_object().contains(kHeadlessLabel)) {
    return {};
  }
  const std::string service = fmt::format("{}.{}.svc.{}", str_of(endpoints, "/metadata/name"),
                                          str_of(endpoints, "/metadata/namespace"), kClusterDomain);
  std::vector<std::string> lines;
  const auto* subsets = endpoints.find_pointer("/subsets", ec);
  if (subsets == nullptr || !subsets->is_array()) return lines;
  for (const auto& subset : subsets->get_array()) {
    // Only `addresses`: the endpoints controller puts not-ready pods there itself when the
    // Service has publishNotReadyAddresses.
    const auto* addresses = subset.find_pointer("/addresses", ec);
    if (addresses == nullptr || !addresses->is_array()) continue;
    for (const auto& address : addresses->get_array()) {
      const auto ip = str_of(address, "/ip");
      if (ip.empty()) continue;
      lines.push_back(ip + " " + service);
      if (auto hostname = str_of(address, "/hostname"); !hostname.empty()) {
        lines.push_back(ip + " " + hostname + "." + service);
      }
    }
  }
  return lines;
}

tl::expected<std::unique_ptr<ClusterDns>, std::string> ClusterDns::start(
    std::shared_ptr<kube::Client> client, const fs::path& work_dir) {
  std::unique_ptr<ClusterDns> dns(new ClusterDns());
  dns->client_ = std::move(client);
  dns->hosts_dir_ = work_dir / "cluster-dns";
  std::error_code ec;
  fs::create_directories(dns->hosts_dir_, ec);
  if (ec) return tl::unexpected("create " + dns->hosts_dir_.string() + ": " + ec.message());
  dns->write_hosts();  // before dnsmasq reads the directory
  // Authoritative for cluster.local only (nothing forwarded: the pod network has no uplink);
  // no caching of answers by clients (TTL 0) and no negative cache, so changes show at once.
  const std::vector<std::string> argv = {"/usr/sbin/dnsmasq",
                                         "--keep-in-foreground",
                                         "--log-facility=-",
                                         "--conf-file=/dev/null",
                                         "--user=root",
                                         "--pid-file",
                                         fmt::format("--listen-address={}", kClusterDnsAddress),
                                         "--bind-interfaces",
                                         "--port=53",
                                         "--no-resolv",
                                         "--no-hosts",
                                         "--no-negcache",
                                         "--local-ttl=0",
                                         fmt::format("--local=/{}/", kClusterDomain),
                                         "--hostsdir=" + dns->hosts_dir_.string()};
  auto child = spawn("dnsmasq", argv, work_dir / "dnsmasq.log");
  if (!child)
    return tl::unexpected("starting dnsmasq (apt-get install dnsmasq-base): " + child.error());
  dns->dnsmasq_ = std::move(*child);
  dns->watcher_ = std::thread([d = dns.get()] { d->watch(); });
  return dns;
}

ClusterDns::~ClusterDns() {
  stopping_ = true;
  cancel_.cancel();
  if (watcher_.joinable()) watcher_.join();
  dnsmasq_.stop(std::chrono::seconds(5));
}

void ClusterDns::write_hosts() {
  std::string text = "# kstack e2e cluster DNS: headless Services' Endpoints\n";
  for (const auto& [key, lines] : records_) {
    for (const auto& line : lines) text += line + "\n";
  }
  // Written aside, then renamed in: dnsmasq (inotify) never reads half a file.
  const auto tmp = hosts_dir_.parent_path() / "cluster-dns.hosts.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
  }
  std::error_code ec;
  fs::rename(tmp, hosts_dir_ / "cluster.hosts", ec);
  if (ec) std::cerr << "kstack e2e: cluster DNS: " << ec.message() << "\n";
}

void ClusterDns::watch() {
  while (!stopping_) {
    auto list = client_->list(kEndpoints, "");
    if (!list) {
      if (stopping_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // pacing retries
      continue;
    }
    records_.clear();
    for (const auto& item : list->at("items").as_array()) {
      if (auto lines = dns_records(item); !lines.empty()) records_[key_of(item)] = lines;
    }
    write_hosts();
    kube::WatchOptions options;
    options.resource_version = str_of(*list, "/metadata/resourceVersion");
    options.timeout_seconds = 300;
    (void)client_->watch(
        kEndpoints, "", options,
        [this](kube::WatchEvent&& event) {
          if (event.type == kube::WatchEvent::Type::kBookmark) return !stopping_;
          const auto key = key_of(event.object);
          auto lines = event.type == kube::WatchEvent::Type::kDeleted ? std::vector<std::string>{}
                                                                      : dns_records(event.object);
          if (lines.empty()) {
            if (records_.erase(key) == 0) return !stopping_.load();
          } else {
            if (records_[key] == lines) return !stopping_.load();
            records_[key] = std::move(lines);
          }
          write_hosts();
          return !stopping_.load();
        },
        cancel_);
  }
}

}  // namespace kstack::testenv::e2e
