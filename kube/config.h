// Client configuration, loaded as kubectl does it: --kubeconfig, KUBECONFIG (merged list),
// ~/.kube/config, contexts; or in-cluster from the pod's service account.
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

#include "kube/error.h"

namespace kstack::kube {

// Supplies the bearer token for each request; thread-safe. Implementations: a fixed token,
// a token file re-read periodically, an exec credential plugin (cached until it expires).
class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // The token to send now; an empty string means "send no Authorization header".
  virtual Result<std::string> bearer_token() = 0;
  // Called after a 401 so that the next bearer_token() fetches fresh credentials.
  virtual void invalidate() {}
};

using Clock = std::function<std::chrono::steady_clock::time_point()>;

// How often a token file is re-read (client-go re-reads at most once a minute).
inline constexpr std::chrono::seconds kTokenFileRereadPeriod{60};
inline constexpr double kDefaultQps = 50;  // kstack's default (client-go: 5)
inline constexpr int kDefaultBurst = 100;  // kstack's default (client-go: 10)

std::shared_ptr<CredentialSource> static_token(std::string token);
// Re-reads `path` when the last read is older than `period` (and after invalidate()).
std::shared_ptr<CredentialSource> token_file(std::filesystem::path path,
                                             std::chrono::seconds period = kTokenFileRereadPeriod,
                                             Clock clock = {});

// users[].user.exec of a kubeconfig (client.authentication.k8s.io/v1 or v1beta1).
struct ExecPluginConfig {
  std::string api_version;  // client.authentication.k8s.io/v1
  std::string command;      // resolved relative to the kubeconfig's directory if it has a '/'
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;
  bool provide_cluster_info = false;
  std::string interactive_mode;  // Never | IfAvailable | Always; kstack never has a terminal
};
std::shared_ptr<CredentialSource> exec_plugin(ExecPluginConfig config, std::string server,
                                              Clock clock = {});

struct Config {
  std::string server;  // https://host:port (optionally with a path prefix)
  std::string ca_pem;  // certificate-authority(-data); empty = system trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string client_cert_pem;                    // client-certificate(-data)
  std::string client_key_pem;                     // client-key(-data)
  std::shared_ptr<CredentialSource> credentials;  // null = no bearer token
  std::string username, password;                 // basic auth, rarely used
  std::string namespace_name = "default";         // context namespace or in-cluster namespace
  std::string context_name;                       // empty for in-cluster
  std::string source;                             // where it came from, for messages
  double qps = kDefaultQps;
  int burst = kDefaultBurst;
  // Requests on Events (core/v1 and events.k8s.io) take their tokens from a bucket of their
  // own when set (<= 0: unlimited), so that a burst of Events never delays the object writes
  // behind it; controller-runtime's recorder does the same by posting through a client of its
  // own. Unset: one bucket for every request.
  std::optional<double> event_qps;
  int event_burst = kDefaultBurst;
  // Per-request deadline (kubectl's --request-timeout); unset = the transport's default.
  // Watches are not bounded by it (they have their own idle timeout).
  std::optional<std::chrono::milliseconds> request_timeout;
  std::string user_agent = "kstack";
};

struct LoadOptions {
  std::optional<std::string> kubeconfig;  // --kubeconfig: only this file, KUBECONFIG ignored
  std::optional<std::string> context;     // --context
  std::optional<std::string> namespace_override;
  // Environment lookup, injectable for tests (defaults to std::getenv).
  std::function<std::optional<std::string>(std::string_view)> getenv;
  Clock clock;  // for the token sources; default steady_clock
};

// kubeconfig files only (explicit path, else KUBECONFIG's ':'-separated list merged with
// first-wins per map key, else ~/.kube/config). Errors name the file and the field.
Result<Config> load_kubeconfig(const LoadOptions& options = {});

struct InClusterOptions {
  std::filesystem::path service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  std::function<std::optional<std::string>(std::string_view)> getenv;
  Clock clock;
};
// KUBERNETES_SERVICE_HOST/PORT, the service account token (re-read) and CA.
Result<Config> load_in_cluster(const InClusterOptions& options = {});

// kubectl's order: explicit --kubeconfig, KUBECONFIG, ~/.kube/config, then in-cluster.
Result<Config> load_default(const LoadOptions& options = {});

}  // namespace kstack::kube
