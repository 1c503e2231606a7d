#include "cmd/cluster_info.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include "kube/client.h"
#include "kube/config.h"

namespace kstack::cmd {

int cluster_info(const ClusterInfoOptions& options) {
  kube::LoadOptions load;
  load.kubeconfig = options.kubeconfig;
  load.context = options.context;
  auto config = kube::load_default(load);
  if (!config) {
    fmt::print(stderr, "kstack: {}\n", config.error().to_string());
    return 1;
  }
  auto client = kube::Client::create(*config);
  if (!client) {
    fmt::print(stderr, "kstack: {}\n", client.error().to_string());
    return 1;
  }
  fmt::print("server:  {}\nconfig:  {}\n", config->server, config->source);
  auto version = (*client)->raw("GET", "/version");
  if (!version) {
    fmt::print(stderr, "kstack: {}\n", version.error().to_string());
    return 1;
  }
  if (version->status != 200) {
    fmt::print(stderr, "kstack: GET /version: {}\n",
               kube::error_from_response(version->status, version->body).to_string());
    return 1;
  }
  boost::system::error_code ec;
  auto v = boost::json::parse(version->body, ec);
  const auto* git = !ec && v.is_object() ? v.get_object().if_contains("gitVersion") : nullptr;
  if (git != nullptr && git->is_string()) {
    fmt::print("version: {}\n", std::string_view(git->get_string()));
  }
  auto ready = (*client)->raw("GET", "/readyz?verbose");
  if (!ready) {
    fmt::print(stderr, "kstack: {}\n", ready.error().to_string());
    return 1;
  }
  fmt::print("readyz:  HTTP {}\n{}", ready->status, ready->body);
  return ready->status == 200 ? 0 : 2;
}

}  // namespace kstack::cmd
