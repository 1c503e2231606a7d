// pods/exec through the real kube-apiserver into a simulated node's sandbox: kubectl (v5,
// WebSocket) for stdout/stderr/exit code, literal arguments and stdin; a minimal v4 client
// for the kubelet's exact status payloads; the endpoint's refusals, straight to the node.
#include <map>
#include <memory>
#include <random>

#include <arpa/inet.h>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

std::string percent_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// What a WebSocket exec returned: the HTTP status of the upgrade, the chosen subprotocol and
// the payload received on each channel.
struct WsExec {
  int http_status = 0;
  std::string protocol;
  std::map<int, std::string> channels;
  std::string body;  // when the upgrade was refused
};

// A deliberately small WebSocket client (RFC 6455 over OpenSSL, no stdin) that speaks the
// given subprotocols to the API server, as kstack's own exec client does.
tl::expected<WsExec, std::string> websocket_exec(
    const ControlPlane& cp, const std::string& ns, const std::string& pod,
    const std::vector<std::string>& argv, const std::string& protocols,
    const std::string& streams = "&stdout=true&stderr=true") {
  auto colon = cp.server().rfind(':');
  const int port = std::stoi(cp.server().substr(colon + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return tl::unexpected(std::string("connect failed"));
  }
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  SSL_set_fd(ssl.get(), fd);
  if (SSL_connect(ssl.get()) != 1) {
    ::close(fd);
    return tl::unexpected(std::string("TLS handshake failed"));
  }
  std::string target = fmt::format("/api/v1/namespaces/{}/pods/{}/exec?container=app", ns, pod);
  for (const auto& a : argv) target += "&command=" + percent_encode(a);
  target += streams;
  std::string request = fmt::format(
      "GET {} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n"
      "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: {}\r\n\r\n",
      target, port, cp.admin_token(), protocols);
  SSL_write(ssl.get(), request.data(), static_cast<int>(request.size()));

  std::string in;
  auto fill = [&](std::size_t n) {
    char buf[16384];
    while (in.size() < n) {
      int r = SSL_read(ssl.get(), buf, sizeof buf);
      if (r <= 0) return false;
      in.append(buf, static_cast<std::size_t>(r));
    }
    return true;
  };
  WsExec result;
  std::size_t header_end = std::string::npos;
  while ((header_end = in.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(in.size() + 1)) break;
  }
  if (header_end == std::string::npos) {
    ::close(fd);
    return tl::unexpected("no HTTP response: " + in);
  }
  std::string headers = in.substr(0, header_end);
  in.erase(0, header_end + 4);
  result.http_status = std::stoi(headers.substr(9, 3));
  for (std::string_view name : {"Sec-Websocket-Protocol: ", "Sec-WebSocket-Protocol: "}) {
    auto p = headers.find(name);
    if (p != std::string::npos) {
      result.protocol = headers.substr(p + name.size(), headers.find("\r\n", p) - p - name.size());
    }
  }
  if (result.http_status != 101) {
    fill(in.size() + 1);
    result.body = in;
    ::close(fd);
    return result;
  }
  for (;;) {  // server frames are unmasked
    if (!fill(2)) break;
    const int opcode = static_cast<unsigned char>(in[0]) & 0x0F;
    std::uint64_t len = static_cast<unsigned char>(in[1]) & 0x7F;
    std::size_t header = 2;
    if (len == 126 || len == 127) {
      header += len == 126 ? 2 : 8;
      if (!fill(header)) break;
      std::uint64_t n = 0;
      for (std::size_t i = 2; i < header; ++i) n = (n << 8) | static_cast<unsigned char>(in[i]);
      len = n;
    }
    if (!fill(header + len)) break;
    std::string payload = in.substr(header, len);
    in.erase(0, header + len);
    if (opcode == 2 && !payload.empty()) {
      result.channels[static_cast<unsigned char>(payload[0])] += payload.substr(1);
    } else if (opcode == 8) {
      const unsigned char close[6] = {0x88, 0x80, 0, 0, 0, 0};  // masked, empty, zero mask
      SSL_write(ssl.get(), close, sizeof close);
      break;
    }
  }
  ::close(fd);
  return result;
}

class Exec : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    NodeSimulatorOptions options;
    options.node_name = "exec-node";
    auto sim = NodeSimulator::start(control_plane(), options);
    ASSERT_TRUE(sim) << sim.error();
    simulator() = std::move(*sim);
    auto client = admin();
    ns() = make_namespace(*client, "exec");
    json::value pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"shell"},
        "spec":{"containers":[{"name":"app","image":"busybox",
                               "env":[{"name":"GREETING","value":"hello"}]}]}})");
    ASSERT_TRUE(client->create(kube::resources::kPods, ns(), pod));
    auto ready =
        wait_for_object(*client, kube::resources::kPods, ns(), "shell", running_and_ready, 120s);
    ASSERT_TRUE(ready) << ready.error();
  }
  static void TearDownTestSuite() { simulator().reset(); }
  static std::unique_ptr<NodeSimulator>& simulator() {
    static std::unique_ptr<NodeSimulator> sim;
    return sim;
  }
  static std::string& ns() {
    static std::string name;
    return name;
  }
  // curl straight to the node's endpoint (self-signed certificate): {HTTP status, body}.
  static std::pair<int, std::string> direct(const std::string& path, bool upgrade = false) {
    std::vector<std::string> cmd = {"curl", "-sk", "-o", "-", "-w", "\n%{http_code}"};
    if (upgrade) {
      cmd.insert(cmd.end(), {"-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H",
                             "Sec-WebSocket-Version: 13", "-H",
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="});
    }
    cmd.push_back(fmt::format("https://127.0.0.1:{}{}", simulator()->exec_port(), path));
    auto r = run_command(cmd);
    if (!r) return {0, r.error()};
    auto nl = r->out.rfind('\n');
    return {std::atoi(r->out.c_str() + nl + 1), r->out.substr(0, nl)};
  }
};

TEST_F(Exec, KubectlGetsStdoutStderrAndTheExitCode) {
  auto r = kubectl_exec(control_plane(), ns(), "shell", "app",
                        {"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, "out\n");
  EXPECT_NE(r.err.find("err\n"), std::string::npos) << r.err;
}

TEST_F(Exec, ArgumentsReachTheCommandLiterally) {
  auto r =
      kubectl_exec(control_plane(), ns(), "shell", "app",
                   {"printf", "[%s]\\n", "; rm -rf /", "$(id)", "`id`", "a b", "*", "$GREETING"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[; rm -rf /]\n[$(id)]\n[`id`]\n[a b]\n[*]\n[$GREETING]\n");
  auto env = kubectl_exec(control_plane(), ns(), "shell", "app", {"sh", "-c", "echo $GREETING"});
  EXPECT_EQ(env.out, "hello\n");
}

TEST_F(Exec, StdinIsStreamedUntilTheClientClosesIt) {
  std::string input(3 << 20, 'x');
  std::mt19937 rng(7);
  for (auto& c : input) c = static_cast<char>('a' + rng() % 26);
  auto r =
      kubectl_exec(control_plane(), ns(), "shell", "app", {"sh", "-c", "wc -c; echo done"}, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, fmt::format("{}\ndone\n", input.size()));
}

TEST_F(Exec, BackgroundProcessesOutliveTheExecAsInAContainer) {
  // How kstack starts `startscript --configure` in the background (docs/spec.md §5).
  auto started = kubectl_exec(control_plane(), ns(), "shell", "app",
                              {"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo started"});
  EXPECT_EQ(started.exit_code, 0) << started.err;
  EXPECT_EQ(started.out, "started\n");
  auto alive = kubectl_exec(control_plane(), ns(), "shell", "app", {"pgrep", "-x", "-c", "sleep"});
  // The sandbox's own sleep and the background one (or two, when kubectl_exec had to run the
  // command again after kubectl lost its first frames).
  EXPECT_GE(std::atoi(alive.out.c_str()), 2) << alive.out;
  // The command runs in the sandbox's pid namespace: small pids, not the host's.
  auto pid = kubectl_exec(control_plane(), ns(), "shell", "app", {"sh", "-c", "echo $$"});
  EXPECT_LT(std::atoi(pid.out.c_str()), 1000) << pid.out;
}

TEST_F(Exec, V4ClientsGetTheKubeletsStatusPayloads) {
  auto failed =
      websocket_exec(control_plane(), ns(), "shell", {"sh", "-c", "echo out; echo err >&2; exit 3"},
                     "v4.channel.k8s.io, channel.k8s.io");
  ASSERT_TRUE(failed) << failed.error();
  ASSERT_EQ(failed->http_status, 101) << failed->body;
  EXPECT_EQ(failed->protocol, "v4.channel.k8s.io");
  EXPECT_EQ(failed->channels[1], "out\n");
  EXPECT_EQ(failed->channels[2], "err\n");
  auto status = json::parse(failed->channels[3]);
  EXPECT_EQ(status.at("status"), "Failure");
  EXPECT_EQ(status.at("reason"), "NonZeroExitCode");
  EXPECT_EQ(status.at("details").at("causes").at(0).at("reason"), "ExitCode");
  EXPECT_EQ(status.at("details").at("causes").at(0).at("message"), "3");

  auto ok = websocket_exec(control_plane(), ns(), "shell", {"true"}, "v4.channel.k8s.io");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->channels[3], R"({"metadata":{},"status":"Success"})");

  auto v1 =
      websocket_exec(control_plane(), ns(), "shell", {"sh", "-c", "exit 2"}, "channel.k8s.io");
  ASSERT_TRUE(v1) << v1.error();
  EXPECT_EQ(v1->protocol, "channel.k8s.io");
  EXPECT_EQ(v1->channels[3].rfind("command terminated with non-zero exit code", 0), 0u)
      << v1->channels[3];
}

TEST_F(Exec, ATerminalMergesStderrIntoStdout) {
  auto r = websocket_exec(control_plane(), ns(), "shell",
                          {"sh", "-c", "test -t 0 && test -t 1 && echo terminal; echo err >&2"},
                          "v4.channel.k8s.io", "&stdin=true&stdout=true&tty=true");
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->http_status, 101) << r->body;
  EXPECT_NE(r->channels[1].find("terminal"), std::string::npos) << r->channels[1];
  EXPECT_NE(r->channels[1].find("err"), std::string::npos) << r->channels[1];
  EXPECT_TRUE(r->channels[2].empty());
  EXPECT_EQ(r->channels[3], R"({"metadata":{},"status":"Success"})");
}

TEST_F(Exec, TheEndpointRefusesUnknownPodsContainersAndPlainRequests) {
  auto pod = direct("/exec/" + ns() + "/nope/app?command=ls&output=1", true);
  EXPECT_EQ(pod.first, 404) << pod.second;
  auto container = direct("/exec/" + ns() + "/shell/nope?command=ls&output=1", true);
  EXPECT_EQ(container.first, 404) << container.second;
  EXPECT_NE(container.second.find("container not found"), std::string::npos);
  auto plain = direct("/exec/" + ns() + "/shell/app?command=ls&output=1");
  EXPECT_EQ(plain.first, 400) << plain.second;
  auto no_stream = direct("/exec/" + ns() + "/shell/app?command=ls", true);
  EXPECT_EQ(no_stream.first, 400) << no_stream.second;
  EXPECT_EQ(direct("/healthz").first, 200);
}

}  // namespace
}  // namespace kstack::testenv::e2e
