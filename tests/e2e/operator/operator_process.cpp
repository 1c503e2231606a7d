// Helpers of the operator e2e tests (see operator_process.h).
#include "tests/e2e/operator/operator_process.h"

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/nodesim/testing/e2e.h"
#include "validator/certs.h"

#ifndef KSTACK_BINARY
#error "KSTACK_BINARY must name the kstack executable"
#endif

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const kube::ResourceType kMutating{"admissionregistration.k8s.io", "v1",
                                   "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
                                   false};

bool is_service_account_token(const json::value& secret) {
  return str_at(secret, "/type") == "kubernetes.io/service-account-token" &&
         str_at(secret, "/metadata/annotations/kubernetes.io~1service-account.name") ==
             kServiceAccount &&
         !str_at(secret, "/data/token").empty();
}

int connect_to(const std::string& ip, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

tl::expected<std::string, std::string> service_account_token() {
  static std::mutex mu;
  static std::string token;
  std::lock_guard lock(mu);
  if (!token.empty()) return token;
  auto& cp = control_plane();
  const auto deploy = std::filesystem::path(KSTACK_SOURCE_DIR) / "deploy";
  for (const char* file : {"namespace.yaml", "rbac.yaml"}) {
    auto applied = cp.kubectl({"apply", "-f", (deploy / file).string()});
    if (!applied.ok()) return tl::unexpected(fmt::format("deploy/{}: {}", file, applied.err));
  }
  // Kubernetes 1.20: the controller-manager's token controller (it runs with
  // --service-account-private-key-file) creates Secret kstack-token-* for the ServiceAccount.
  auto secrets = wait_for(
      *admin(), kube::resources::kSecrets, "kstack-system", "",
      [](const Objects& o) {
        return std::any_of(o.begin(), o.end(),
                           [](const auto& s) { return is_service_account_token(s.second); });
      },
      60s);
  if (!secrets)
    return tl::unexpected("no token Secret for ServiceAccount kstack: " + secrets.error());
  for (const auto& [name, secret] : *secrets) {
    if (!is_service_account_token(secret)) continue;
    auto decoded = validator::base64_decode(str_at(secret, "/data/token"));
    if (!decoded) return tl::unexpected("Secret " + name + ": token is not base64");
    token = *decoded;
  }
  return token;
}

tl::expected<std::filesystem::path, std::string> service_account_kubeconfig(
    const std::string& server) {
  auto token = service_account_token();
  if (!token) return tl::unexpected(token.error());
  auto& cp = control_plane();
  const std::string url = server.empty() ? cp.server() : server;
  // Written once per server: a running operator may re-read its file at any time.
  static std::mutex mu;
  static std::map<std::string, std::filesystem::path> written;
  std::lock_guard lock(mu);
  if (auto it = written.find(url); it != written.end()) return it->second;
  const auto path = cp.work_dir() / fmt::format("kstack-sa-{}.kubeconfig", written.size());
  std::ofstream out(path);
  out << fmt::format(R"(apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: {}
    certificate-authority-data: {}
users:
- name: kstack
  user:
    token: {}
contexts:
- name: kstack
  context: {{cluster: e2e, user: kstack, namespace: kstack-system}}
current-context: kstack
)",
                     url, validator::base64_encode(cp.ca_pem()), *token);
  out.close();
  if (!out) return tl::unexpected("cannot write " + path.string());
  written[url] = path;
  return path;
}

std::shared_ptr<kube::Client> service_account_client() {
  auto token = service_account_token();
  if (!token) throw std::runtime_error(token.error());
  kube::Config c;
  c.server = control_plane().server();
  c.ca_pem = control_plane().ca_pem();
  c.credentials = kube::static_token(*token);
  c.source = "e2e: ServiceAccount kstack-system/kstack";
  auto client = kube::Client::create(std::move(c));
  if (!client) throw std::runtime_error(client.error().to_string());
  return *client;
}

std::optional<HttpAnswer> http_get(std::uint16_t port, const std::string& path) {
  return http_get("127.0.0.1", port, path);
}

std::optional<HttpAnswer> http_get(const std::string& ip, std::uint16_t port,
                                   const std::string& path) {
  const int fd = connect_to(ip, port);
  if (fd < 0) return std::nullopt;
  const std::string request =
      fmt::format("GET {} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\n\r\n", path, ip, port);
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string response;
  char buf[16384];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, n);
  ::close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody" (Connection: close, so the body runs to the end).
  const auto header_end = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 ", 0) != 0 || header_end == std::string::npos) return std::nullopt;
  HttpAnswer answer;
  answer.status = std::atoi(response.substr(9, 3).c_str());
  answer.body = response.substr(header_end + 4);
  return answer;
}

std::optional<double> metric_sum(std::string_view exposition, std::string_view name,
                                 const std::vector<std::string>& labels) {
  std::optional<double> sum;
  std::istringstream lines{std::string(exposition)};
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#' || line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    const auto close = line.find('}');
    const std::string label_text =
        next == '{' && close != std::string::npos ? line.substr(name.size(), close) : "";
    bool match = true;
    for (const auto& l : labels) match = match && label_text.find(l) != std::string::npos;
    if (!match) continue;
    const auto space = line.rfind(' ');
    sum = sum.value_or(0) + std::stod(line.substr(space + 1));
  }
  return sum;
}

long process_status_kib(int pid, std::string_view field) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(std::string(field) + ":", 0) == 0) {
      return std::atol(line.c_str() + field.size() + 1);
    }
  }
  return 0;
}

OperatorFlags with_default_lease(OperatorFlags flags) {
  flags.lease_duration = "15s";
  flags.renew_deadline = "10s";
  flags.retry_period = "2s";
  return flags;
}

tl::expected<OperatorProcess, std::string> OperatorProcess::start(const OperatorFlags& flags,
                                                                  const std::string& name) {
  OperatorProcess p;
  std::string kubeconfig = flags.kubeconfig;
  if (kubeconfig.empty()) {
    auto path = service_account_kubeconfig();
    if (!path) return tl::unexpected(path.error());
    kubeconfig = path->string();
  }
  p.webhook_port_ = flags.webhook_port != 0 ? flags.webhook_port : free_port();
  p.metrics_port_ = free_port();
  p.probe_port_ = free_port();
  std::vector<std::string> argv = {KSTACK_BINARY,
                                   "operator",
                                   "--kubeconfig=" + kubeconfig,
                                   "--namespace=kstack-system",
                                   "--bind-address=127.0.0.1",
                                   fmt::format("--webhook-port={}", p.webhook_port_),
                                   fmt::format("--metrics-port={}", p.metrics_port_),
                                   fmt::format("--probe-port={}", p.probe_port_),
                                   "--webhook-url-host=127.0.0.1",
                                   std::string("--webhook=") + (flags.webhook ? "true" : "false"),
                                   "--lease-duration=" + flags.lease_duration,
                                   "--renew-deadline=" + flags.renew_deadline,
                                   "--retry-period=" + flags.retry_period,
                                   "--poll-interval-ms=500",
                                   "--log-level=debug"};
  argv.insert(argv.end(), flags.extra.begin(), flags.extra.end());
  static int runs = 0;
  const auto log = control_plane().work_dir() / fmt::format("kstack-{}-{}.log", name, runs++);
  p.started_at_ = std::chrono::steady_clock::now();
  auto child = spawn("kstack-" + name, argv, log);
  if (!child) return tl::unexpected(child.error());
  p.process_ = std::move(*child);
  return p;
}

tl::expected<std::chrono::milliseconds, std::string> OperatorProcess::wait_ready(
    std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last = "no answer";
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_.running()) {
      return tl::unexpected(
          fmt::format("the operator {}:\n{}", process_.how_it_ended(), log_tail()));
    }
    if (auto r = http_get(probe_port_, "/readyz"); r) {
      if (r->status == 200) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - started_at_);
      }
      last = fmt::format("{} {}", r->status, r->body);
    }
    // An external process's state, with no event to wait on: polled, as a kubelet probe would.
    std::this_thread::sleep_for(20ms);
  }
  return tl::unexpected(fmt::format("/readyz not 200 within {} s (last: {}):\n{}", timeout.count(),
                                    last, log_tail()));
}

std::string OperatorProcess::metrics() {
  auto r = http_get(metrics_port_, "/metrics");
  return r && r->status == 200 ? r->body : std::string();
}

int OperatorProcess::leader_status() {
  auto v = metric_sum(metrics(), "leader_election_master_status");
  return v ? static_cast<int>(*v) : -1;
}

std::string OperatorProcess::log_tail(int lines) const { return tail_file(log(), lines); }

tl::expected<void, std::string> register_webhook(std::uint16_t port) {
  auto c = admin();
  for (const auto* type : {&validator::kValidatingWebhookConfigurations, &kMutating}) {
    const auto name = type == &kMutating ? validator::kDefaultMutatingWebhookConfigurationName
                                         : validator::kDefaultValidatingWebhookConfigurationName;
    auto removed = c->remove(*type, "", name);
    if (!removed && !removed.error().is(kube::ErrorKind::kNotFound)) {
      return tl::unexpected("delete " + std::string(name) + ": " + removed.error().to_string());
    }
    if (port == 0) continue;
    validator::WebhookConfigurationOptions wc;
    wc.url_base = fmt::format("https://127.0.0.1:{}", port);
    auto created = c->create(*type, "",
                             type == &kMutating ? validator::mutating_webhook_configuration(wc)
                                                : validator::validating_webhook_configuration(wc));
    if (!created)
      return tl::unexpected("create " + std::string(name) + ": " + created.error().to_string());
  }
  return {};
}

tl::expected<void, std::string> wait_ca_bundle(std::chrono::seconds timeout) {
  for (const auto* type : {&validator::kValidatingWebhookConfigurations, &kMutating}) {
    const auto name = type == &kMutating ? validator::kDefaultMutatingWebhookConfigurationName
                                         : validator::kDefaultValidatingWebhookConfigurationName;
    auto filled = wait_for_object(
        *admin(), *type, "", name,
        [](const json::value& c) {
          return !str_at(c, "/webhooks/0/clientConfig/caBundle").empty();
        },
        timeout);
    if (!filled)
      return tl::unexpected(std::string(name) + ": caBundle not written: " + filled.error());
  }
  return {};
}

tl::expected<std::string, std::string> webhook_ca_pem() {
  auto secret =
      admin()->get(kube::resources::kSecrets, "kstack-system", validator::kDefaultTlsSecretName);
  if (!secret) return tl::unexpected(secret.error().to_string());
  auto ca = validator::base64_decode(str_at(*secret, "/data/ca.crt"));
  if (!ca || ca->empty())
    return tl::unexpected(std::string("Secret kstack-webhook-tls has no ca.crt"));
  return *ca;
}

tl::expected<json::value, std::string> post_admission_review(std::uint16_t port,
                                                             const std::string& path,
                                                             const std::string& ca_pem,
                                                             const json::value& review) {
  const auto ca_file = control_plane().work_dir() / fmt::format("webhook-ca-{}.pem", port);
  std::ofstream(ca_file) << ca_pem;
  auto r = run_command({"curl", "-sS", "--max-time", "10", "--cacert", ca_file.string(), "-H",
                        "Content-Type: application/json", "--data-binary", "@-",
                        fmt::format("https://127.0.0.1:{}{}", port, path)},
                       {}, json::serialize(review));
  if (!r) return tl::unexpected(r.error());
  if (!r->ok()) return tl::unexpected(fmt::format("curl: exit {}: {}", r->exit_code, r->err));
  boost::system::error_code ec;
  auto answer = json::parse(r->out, ec);
  if (ec) return tl::unexpected("not JSON: " + r->out);
  return answer;
}

json::value lease() {
  auto l = admin()->get(kube::resources::kLeases, "kstack-system", kLeaseName);
  return l ? *l : json::value(nullptr);
}

}  // namespace kstack::testenv::e2e
