// Tests for kube/config.h: kubeconfig loading and merging, in-cluster configuration, token
// file re-reading and the exec credential plugin. Every test works in a fresh temp dir.
#include "kube/config.h"

#include <fstream>
#include <map>
#include <sstream>

#include <boost/json.hpp>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

namespace kstack::kube {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Placeholder PEM contents are enough: config.cpp passes certificates through unparsed.
constexpr std::string_view kCaPem = "CA-PEM\n";
constexpr std::string_view kCaPemBase64 = "Q0EtUEVNCg==";  // "CA-PEM\n"
constexpr std::string_view kCertBase64 = "Q0VSVC1QRU0=";   // "CERT-PEM"
constexpr std::string_view kKeyBase64 = "S0VZLVBFTQ==";    // "KEY-PEM"

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kstack-config-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path write(const fs::path& relative, std::string_view content) {
    fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    return path;
  }

  fs::path write_script(const fs::path& relative, std::string_view body) {
    fs::path path = write(relative, "#!/bin/sh\n" + std::string(body));
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  LoadOptions options() {
    LoadOptions o;
    o.getenv = [this](std::string_view name) -> std::optional<std::string> {
      const auto it = env_.find(std::string(name));
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
    o.clock = [this] { return now_; };
    return o;
  }

  LoadOptions explicit_file(const fs::path& path) {
    LoadOptions o = options();
    o.kubeconfig = path.string();
    return o;
  }

  fs::path dir_;
  std::map<std::string, std::string> env_;
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::time_point{} + 1000h;
};

// A kubeconfig with one cluster "c", user "u" and contexts "dev" (current) and "prod".
std::string simple_kubeconfig() {
  return R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c
  cluster:
    server: https://dev.example:6443
    certificate-authority-data: )" +
         std::string(kCaPemBase64) + R"(
    tls-server-name: api.dev
- name: p
  cluster:
    server: https://prod.example
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: dev-token
contexts:
- name: dev
  context: {cluster: c, user: u, namespace: team-a}
- name: prod
  context: {cluster: p, user: u}
)";
}

std::string token_of(const Config& config) {
  if (!config.credentials) return "<none>";
  auto token = config.credentials->bearer_token();
  return token ? *token : "<error: " + token.error().message + ">";
}

#define ASSERT_OK(result) ASSERT_TRUE(result) << (result).error().message

TEST_F(ConfigTest, SingleFileGivesServerCaTokenNamespaceAndSource) {
  const auto path = write("config", simple_kubeconfig());
  auto config = load_kubeconfig(explicit_file(path));
  ASSERT_OK(config);
  EXPECT_EQ(config->server, "https://dev.example:6443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->tls_server_name, "api.dev");
  EXPECT_FALSE(config->insecure_skip_tls_verify);
  EXPECT_EQ(token_of(*config), "dev-token");
  EXPECT_EQ(config->namespace_name, "team-a");
  EXPECT_EQ(config->context_name, "dev");
  EXPECT_EQ(config->source, "kubeconfig " + path.string() + " (context \"dev\")");
}

TEST_F(ConfigTest, ContextOptionOverridesCurrentContextAndNamespaceDefaultsToDefault) {
  const auto path = write("config", simple_kubeconfig());
  LoadOptions o = explicit_file(path);
  o.context = "prod";
  auto config = load_kubeconfig(o);
  ASSERT_OK(config);
  EXPECT_EQ(config->server, "https://prod.example");
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->namespace_name, "default");
  EXPECT_EQ(config->context_name, "prod");
}

TEST_F(ConfigTest, NamespaceOverrideWinsOverTheContextNamespace) {
  LoadOptions o = explicit_file(write("config", simple_kubeconfig()));
  o.namespace_override = "mine";
  auto config = load_kubeconfig(o);
  ASSERT_OK(config);
  EXPECT_EQ(config->namespace_name, "mine");
}

TEST_F(ConfigTest, MissingContextErrorNamesTheContextAndTheFiles) {
  const auto a = write("a", simple_kubeconfig());
  const auto b = write("b", "clusters: []\n");
  env_["KUBECONFIG"] = a.string() + ":" + b.string();
  LoadOptions o = options();
  o.context = "staging";
  auto config = load_kubeconfig(o);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kConfig);
  EXPECT_EQ(config.error().message, "context \"staging\" not found in kubeconfig files [" +
                                        a.string() + ", " + b.string() + "]");
}

TEST_F(ConfigTest, NoCurrentContextAndNoContextOptionIsAnError) {
  auto config = load_kubeconfig(explicit_file(write("config", "clusters: []\n")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("no context selected"), std::string::npos);
}

TEST_F(ConfigTest, KubeconfigEnvMergesFilesAndTheFirstFileDefiningANameWins) {
  const auto first = write("one/config", R"(
clusters:
- name: shared
  cluster: {server: https://first}
users:
- name: shared
  user: {token: first-token}
)");
  const auto second = write("two/config", R"(
current-context: ctx
clusters:
- name: shared
  cluster: {server: https://second}
users:
- name: shared
  user: {token: second-token}
contexts:
- name: ctx
  context: {cluster: shared, user: shared}
)");
  env_["KUBECONFIG"] = first.string() + ":" + second.string();
  auto config = load_kubeconfig(options());
  ASSERT_OK(config);
  EXPECT_EQ(config->server, "https://first");
  EXPECT_EQ(token_of(*config), "first-token");
  EXPECT_EQ(config->context_name, "ctx");
  EXPECT_EQ(config->source,
            "kubeconfig [" + first.string() + ", " + second.string() + "] (context \"ctx\")");
}

TEST_F(ConfigTest, CurrentContextComesFromTheFirstFileThatSetsIt) {
  const auto none = write("none", "clusters: []\n");
  const auto empty = write("empty", "current-context: \"\"\n");
  const auto sets = write("sets", simple_kubeconfig());  // current-context: dev
  const auto later = write("later", "current-context: prod\n");
  env_["KUBECONFIG"] =
      none.string() + ":" + empty.string() + ":" + sets.string() + ":" + later.string();
  auto config = load_kubeconfig(options());
  ASSERT_OK(config);
  EXPECT_EQ(config->context_name, "dev");
}

TEST_F(ConfigTest, MissingFilesAndEmptyEntriesInKubeconfigEnvAreIgnored) {
  const auto path = write("config", simple_kubeconfig());
  env_["KUBECONFIG"] = "::" + (dir_ / "missing").string() + "::" + path.string() + ":";
  auto config = load_kubeconfig(options());
  ASSERT_OK(config);
  EXPECT_EQ(config->server, "https://dev.example:6443");
}

TEST_F(ConfigTest, KubeconfigEnvWithNoExistingFileIsAnErrorSayingWhatWasTried) {
  env_["KUBECONFIG"] = (dir_ / "missing").string();
  auto config = load_kubeconfig(options());
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("KUBECONFIG=" + (dir_ / "missing").string()),
            std::string::npos);
}

TEST_F(ConfigTest, ExplicitKubeconfigIgnoresKubeconfigEnv) {
  const auto explicit_path = write("explicit", simple_kubeconfig());
  env_["KUBECONFIG"] = write("env", "current-context: nope\n").string();
  auto config = load_kubeconfig(explicit_file(explicit_path));
  ASSERT_OK(config);
  EXPECT_EQ(config->context_name, "dev");
}

TEST_F(ConfigTest, MissingExplicitKubeconfigIsAnErrorNamingThePath) {
  auto config = load_kubeconfig(explicit_file(dir_ / "nope"));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find((dir_ / "nope").string()), std::string::npos);
}

TEST_F(ConfigTest, WithoutKubeconfigEnvTheHomeKubeConfigIsUsed) {
  write("home/.kube/config", simple_kubeconfig());
  env_["HOME"] = (dir_ / "home").string();
  auto config = load_kubeconfig(options());
  ASSERT_OK(config);
  EXPECT_EQ(config->context_name, "dev");
}

TEST_F(ConfigTest, RelativeCertificatePathsResolveAgainstTheFileThatDefinesThem) {
  write("certs/ca.crt", "CA FROM FILE");
  write("certs/client.crt", "CERT FROM FILE");
  write("certs/client.key", "KEY FROM FILE");
  write("certs/token", "  file-token\n");
  const auto defining = write("certs/kubeconfig", R"(
clusters:
- name: c
  cluster: {server: https://x, certificate-authority: ca.crt}
users:
- name: cert
  user: {client-certificate: ./client.crt, client-key: client.key}
- name: tok
  user: {tokenFile: token}
)");
  const auto selecting = write("elsewhere/config", R"(
current-context: ctx
contexts:
- name: ctx
  context: {cluster: c, user: cert}
- name: tok
  context: {cluster: c, user: tok}
)");
  env_["KUBECONFIG"] = selecting.string() + ":" + defining.string();
  auto config = load_kubeconfig(options());
  ASSERT_OK(config);
  EXPECT_EQ(config->ca_pem, "CA FROM FILE");
  EXPECT_EQ(config->client_cert_pem, "CERT FROM FILE");
  EXPECT_EQ(config->client_key_pem, "KEY FROM FILE");
  EXPECT_EQ(config->credentials, nullptr);

  LoadOptions o = options();
  o.context = "tok";
  config = load_kubeconfig(o);
  ASSERT_OK(config);
  EXPECT_EQ(token_of(*config), "file-token");
}

TEST_F(ConfigTest, DataFieldsWinOverFileFields) {
  const auto path = write("config", R"(
current-context: ctx
clusters:
- name: c
  cluster:
    server: https://x
    certificate-authority: does-not-exist.crt
    certificate-authority-data: )" + std::string(kCaPemBase64) +
                                        R"(
users:
- name: u
  user:
    client-certificate: missing.crt
    client-certificate-data: )" + std::string(kCertBase64) +
                                        R"(
    client-key: missing.key
    client-key-data: )" + std::string(kKeyBase64) +
                                        R"(
contexts:
- name: ctx
  context: {cluster: c, user: u}
)");
  auto config = load_kubeconfig(explicit_file(path));
  ASSERT_OK(config);
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->client_cert_pem, "CERT-PEM");
  EXPECT_EQ(config->client_key_pem, "KEY-PEM");
}

TEST_F(ConfigTest, InvalidBase64ErrorNamesTheFileTheEntryAndTheField) {
  const auto path = write("config", R"(
current-context: ctx
clusters:
- name: c
  cluster: {server: https://x}
users:
- name: alice
  user: {token: t}
- name: bob
  user:
    client-certificate-data: )" + std::string(kCertBase64) +
                                        R"(
    client-key-data: "not*base64!"
contexts:
- name: ctx
  context: {cluster: c, user: bob}
)");
  auto config = load_kubeconfig(explicit_file(path));
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kConfig);
  EXPECT_EQ(config.error().message, "kubeconfig " + path.string() +
                                        ": users[1] (\"bob\"): client-key-data: invalid base64");
}

TEST_F(ConfigTest, Base64PaddingIsHandledAndMalformedPaddingRejected) {
  const auto with_ca_data = [&](std::string_view data) {
    return load_kubeconfig(explicit_file(write("config", R"(
current-context: ctx
clusters:
- name: c
  cluster: {server: https://x, certificate-authority-data: ")" +
                                                             std::string(data) + R"("}
contexts:
- name: ctx
  context: {cluster: c}
)")));
  };
  const std::map<std::string, std::string> valid{
      {"YQ==", "a"}, {"YWI=", "ab"}, {"YWJj", "abc"}, {"YWJj\nZA==", "abcd"}};
  for (const auto& [encoded, decoded] : valid) {
    auto config = with_ca_data(encoded);
    ASSERT_OK(config);
    EXPECT_EQ(config->ca_pem, decoded) << encoded;
  }
  for (const std::string_view bad : {"YQ=", "Y===", "YQ=a", "YW=j", "YWJj-_==", "===="}) {
    auto config = with_ca_data(bad);
    ASSERT_FALSE(config) << bad;
    EXPECT_NE(config.error().message.find("certificate-authority-data: invalid base64"),
              std::string::npos);
  }
}

TEST_F(ConfigTest, EmptyServerErrorNamesTheClusterAndTheContext) {
  auto config = load_kubeconfig(explicit_file(write("config", R"(
current-context: dev
clusters:
- name: c
  cluster: {certificate-authority-data: )" + std::string(kCaPemBase64) +
                                                                  R"(}
contexts:
- name: dev
  context: {cluster: c}
)")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("cluster \"c\" (context \"dev\"): server is empty"),
            std::string::npos)
      << config.error().message;
}

TEST_F(ConfigTest, ContextNamingAMissingUserIsAnError) {
  auto config = load_kubeconfig(explicit_file(write("config", R"(
current-context: dev
clusters: [{name: c, cluster: {server: https://x}}]
contexts: [{name: dev, context: {cluster: c, user: ghost}}]
)")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("user \"ghost\" not found"), std::string::npos);
}

TEST_F(ConfigTest, AuthProviderIsRejectedNamingTheProvider) {
  auto config = load_kubeconfig(explicit_file(write("config", R"(
current-context: dev
clusters: [{name: c, cluster: {server: https://x}}]
users: [{name: g, user: {auth-provider: {name: gcp, config: {}}}}]
contexts: [{name: dev, context: {cluster: c, user: g}}]
)")));
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kConfig);
  EXPECT_NE(config.error().message.find("users[0] (\"g\"): auth-provider: provider \"gcp\" is "
                                        "not supported"),
            std::string::npos)
      << config.error().message;
}

TEST_F(ConfigTest, YamlSyntaxErrorNamesTheFileAndTheLine) {
  const auto path = write("config", "clusters:\n- name: c\n  cluster: {server: [\n");
  auto config = load_kubeconfig(explicit_file(path));
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kConfig);
  EXPECT_NE(config.error().message.find("kubeconfig " + path.string() + " (line "),
            std::string::npos)
      << config.error().message;
}

TEST_F(ConfigTest, WrongFieldTypeErrorNamesTheFieldAndTheLine) {
  auto config = load_kubeconfig(explicit_file(write("config", R"(current-context: dev
clusters:
- name: c
  cluster:
    server: [https://x]
contexts: [{name: dev, context: {cluster: c}}]
)")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("clusters[0] (\"c\"): server: expected a string (line 5)"),
            std::string::npos)
      << config.error().message;
}

TEST_F(ConfigTest, KubeconfigLargerThanFourMebibytesIsRefused) {
  const auto path = write("config", "# " + std::string(4u << 20, 'x') + "\n");
  auto config = load_kubeconfig(explicit_file(path));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("larger than"), std::string::npos);
}

TEST_F(ConfigTest, InClusterUsesServiceEnvTokenCaAndNamespace) {
  write("sa/token", "sa-token\n");
  write("sa/ca.crt", kCaPem);
  write("sa/namespace", "kstack-system\n");
  env_["KUBERNETES_SERVICE_HOST"] = "10.0.0.1";
  env_["KUBERNETES_SERVICE_PORT"] = "443";
  InClusterOptions o;
  o.service_account_dir = dir_ / "sa";
  o.getenv = options().getenv;
  auto config = load_in_cluster(o);
  ASSERT_OK(config);
  EXPECT_EQ(config->server, "https://10.0.0.1:443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(token_of(*config), "sa-token");
  EXPECT_EQ(config->namespace_name, "kstack-system");
  EXPECT_EQ(config->source, "in-cluster");
}

TEST_F(ConfigTest, InClusterBracketsAnIpv6HostAndDefaultsTheNamespace) {
  write("sa/token", "t");
  write("sa/ca.crt", kCaPem);
  env_["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  env_["KUBERNETES_SERVICE_PORT"] = "6443";
  InClusterOptions o;
  o.service_account_dir = dir_ / "sa";
  o.getenv = options().getenv;
  auto config = load_in_cluster(o);
  ASSERT_OK(config);
  EXPECT_EQ(config->server, "https://[fd00::1]:6443");
  EXPECT_EQ(config->namespace_name, "default");
}

TEST_F(ConfigTest, InClusterErrorsNameTheMissingVariableOrFile) {
  InClusterOptions o;
  o.service_account_dir = dir_ / "sa";
  o.getenv = options().getenv;
  auto config = load_in_cluster(o);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"),
            std::string::npos);

  env_["KUBERNETES_SERVICE_HOST"] = "10.0.0.1";
  env_["KUBERNETES_SERVICE_PORT"] = "443";
  write("sa/ca.crt", kCaPem);
  config = load_in_cluster(o);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find((dir_ / "sa" / "token").string()), std::string::npos)
      << config.error().message;
}

TEST_F(ConfigTest, LoadDefaultPrefersKubeconfigAndListsWhatItTriedWhenNothingIsFound) {
  env_["HOME"] = (dir_ / "home").string();
  auto config = load_default(options());
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kConfig);
  EXPECT_NE(config.error().message.find((dir_ / "home" / ".kube" / "config").string()),
            std::string::npos);
  EXPECT_NE(config.error().message.find("in-cluster"), std::string::npos);

  // A kubeconfig wins over in-cluster even when the service env is there.
  env_["KUBERNETES_SERVICE_HOST"] = "10.0.0.1";
  env_["KUBERNETES_SERVICE_PORT"] = "443";
  write("home/.kube/config", simple_kubeconfig());
  config = load_default(options());
  ASSERT_OK(config);
  EXPECT_EQ(config->context_name, "dev");
}

TEST_F(ConfigTest, TokenFileIsReReadAfterThePeriodOrAfterInvalidate) {
  const auto path = write("token", "token-A\n");
  auto source = token_file(path, 60s, [this] { return now_; });
  EXPECT_EQ(source->bearer_token().value(), "token-A");

  write("token", "token-B");
  now_ += 59s;
  EXPECT_EQ(source->bearer_token().value(), "token-A");
  now_ += 2s;
  EXPECT_EQ(source->bearer_token().value(), "token-B");

  write("token", "token-C");
  EXPECT_EQ(source->bearer_token().value(), "token-B");
  source->invalidate();
  EXPECT_EQ(source->bearer_token().value(), "token-C");
}

TEST_F(ConfigTest, TokenFileKeepsThePreviousTokenWhenAReReadFails) {
  const auto path = write("token", "token-A");
  auto source = token_file(path, 60s, [this] { return now_; });
  EXPECT_EQ(source->bearer_token().value(), "token-A");
  fs::remove(path);
  now_ += 61s;
  EXPECT_EQ(source->bearer_token().value(), "token-A");
  write("token", "token-B");  // retried on the next call, not a period later
  EXPECT_EQ(source->bearer_token().value(), "token-B");
}

TEST_F(ConfigTest, TokenFileFirstReadFailureNamesThePath) {
  auto source = token_file(dir_ / "absent", 60s, [this] { return now_; });
  auto token = source->bearer_token();
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().kind, ErrorKind::kConfig);
  EXPECT_NE(token.error().message.find((dir_ / "absent").string()), std::string::npos);
}

// A plugin that counts its runs in $PLUGIN_DIR/count, records its args and
// KUBERNETES_EXEC_INFO, and prints an ExecCredential with token "tok-<run>".
std::string counting_plugin(std::string_view api_version, std::string_view extra_status = "") {
  return R"(n=$(cat "$PLUGIN_DIR/count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$PLUGIN_DIR/count"
: > "$PLUGIN_DIR/args"
for a in "$@"; do printf '%s\n' "$a" >> "$PLUGIN_DIR/args"; done
printf '%s' "$KUBERNETES_EXEC_INFO" > "$PLUGIN_DIR/info"
cat <<EOF
{"apiVersion":")" +
         std::string(api_version) + R"(","kind":"ExecCredential","status":{"token":"tok-$n")" +
         std::string(extra_status) +
         R"(}}
EOF
)";
}

TEST_F(ConfigTest, ExecPluginFromKubeconfigRunsWithArgsVerbatimAndExecInfo) {
  write_script("bin/plugin.sh", counting_plugin("client.authentication.k8s.io/v1"));
  const auto path = write("config", R"(
current-context: ctx
clusters: [{name: c, cluster: {server: "https://api.example:6443"}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/plugin.sh
      args: ["--flag", "two words", "a;echo pwned", "$HOME", "'q'"]
      env: [{name: PLUGIN_DIR, value: ")" +
                                        dir_.string() + R"("}]
      provideClusterInfo: true
      interactiveMode: Never
)");
  auto config = load_kubeconfig(explicit_file(path));
  ASSERT_OK(config);
  ASSERT_NE(config->credentials, nullptr);
  EXPECT_FALSE(fs::exists(dir_ / "count"));  // nothing runs before the first request

  EXPECT_EQ(token_of(*config), "tok-1");
  EXPECT_EQ(read(dir_ / "args"), "--flag\ntwo words\na;echo pwned\n$HOME\n'q'\n");
  const auto info = boost::json::parse(read(dir_ / "info")).as_object();
  EXPECT_EQ(info.at("apiVersion"), "client.authentication.k8s.io/v1");
  EXPECT_EQ(info.at("kind"), "ExecCredential");
  EXPECT_EQ(info.at("spec").at("interactive"), false);
  EXPECT_EQ(info.at("spec").at("cluster").at("server"), "https://api.example:6443");

  // Without an expirationTimestamp the token is cached until invalidate().
  EXPECT_EQ(token_of(*config), "tok-1");
  EXPECT_EQ(read(dir_ / "count"), "1\n");
  config->credentials->invalidate();
  EXPECT_EQ(token_of(*config), "tok-2");
}

ExecPluginConfig plugin_config(const fs::path& command, const fs::path& plugin_dir) {
  ExecPluginConfig config;
  config.api_version = "client.authentication.k8s.io/v1beta1";
  config.command = command.string();
  config.env = {{"PLUGIN_DIR", plugin_dir.string()}};
  config.interactive_mode = "IfAvailable";
  return config;
}

TEST_F(ConfigTest, ExecPluginTokenWithAnExpiryInThePastIsFetchedOnEveryCall) {
  const auto script = write_script(
      "plugin.sh", counting_plugin("client.authentication.k8s.io/v1beta1",
                                   R"(,"expirationTimestamp":"2001-02-03T04:05:06Z")"));
  auto source = exec_plugin(plugin_config(script, dir_), "https://x", [this] { return now_; });
  EXPECT_EQ(source->bearer_token().value(), "tok-1");
  EXPECT_EQ(source->bearer_token().value(), "tok-2");
  EXPECT_EQ(source->bearer_token().value(), "tok-3");
  EXPECT_EQ(read(dir_ / "count"), "3\n");
  // provideClusterInfo is off: no cluster in the exec info.
  const auto info = boost::json::parse(read(dir_ / "info")).as_object();
  EXPECT_EQ(info.at("spec").as_object().if_contains("cluster"), nullptr);
}

TEST_F(ConfigTest, ExecPluginTokenWithAFutureExpiryIsCachedUntilTheClockPassesIt) {
  const auto script = write_script(
      "plugin.sh", counting_plugin("client.authentication.k8s.io/v1beta1",
                                   R"(,"expirationTimestamp":"2999-01-01T00:00:00.5+02:00")"));
  auto source = exec_plugin(plugin_config(script, dir_), "https://x", [this] { return now_; });
  EXPECT_EQ(source->bearer_token().value(), "tok-1");
  now_ += 24h;
  EXPECT_EQ(source->bearer_token().value(), "tok-1");
  now_ += 24h * 400;  // kstack caches for at most a year, whatever the plugin says
  EXPECT_EQ(source->bearer_token().value(), "tok-2");
}

TEST_F(ConfigTest, FailingExecPluginErrorHasTheCommandExitCodeAndStderr) {
  const auto script = write_script("fail.sh",
                                   "echo 'starting' >&2\n"
                                   "echo 'login expired: run sso login' >&2\n"
                                   "exit 3\n");
  auto source = exec_plugin(plugin_config(script, dir_), "https://x", [this] { return now_; });
  auto token = source->bearer_token();
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().kind, ErrorKind::kConfig);
  EXPECT_NE(token.error().message.find(script.string()), std::string::npos);
  EXPECT_NE(token.error().message.find("exit code 3"), std::string::npos);
  EXPECT_NE(token.error().message.find("login expired: run sso login"), std::string::npos)
      << token.error().message;
}

TEST_F(ConfigTest, ExecPluginNotFoundInPathShowsTheInstallHint) {
  ExecPluginConfig config = plugin_config("kstack-test-no-such-plugin", dir_);
  config.install_hint = "Install it with: apt-get install kstack-test-plugin";
  auto token = exec_plugin(config, "https://x")->bearer_token();
  ASSERT_FALSE(token);
  EXPECT_NE(token.error().message.find("not found"), std::string::npos);
  EXPECT_NE(token.error().message.find("apt-get install kstack-test-plugin"), std::string::npos);
}

TEST_F(ConfigTest, ExecPluginWithTheWrongApiVersionIsAnError) {
  const auto script = write_script("plugin.sh", counting_plugin("client.authentication.k8s.io/v1"));
  auto token = exec_plugin(plugin_config(script, dir_), "https://x")->bearer_token();
  ASSERT_FALSE(token);
  EXPECT_NE(token.error().message.find("returned apiVersion \"client.authentication.k8s.io/v1\""),
            std::string::npos)
      << token.error().message;
}

TEST_F(ConfigTest, ExecPluginReturningOnlyAClientCertificateIsNotSupportedYet) {
  const auto script = write_script("plugin.sh", R"(cat <<'EOF'
{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
 "status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}}
EOF
)");
  auto token = exec_plugin(plugin_config(script, dir_), "https://x")->bearer_token();
  ASSERT_FALSE(token);
  EXPECT_NE(token.error().message.find("client-certificate output from exec plugins is not "
                                       "supported"),
            std::string::npos);
}

TEST_F(ConfigTest, ExecConfigWithV1ApiAndNoInteractiveModeIsRejected) {
  auto config = load_kubeconfig(explicit_file(write("config", R"(
current-context: ctx
clusters: [{name: c, cluster: {server: https://x}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: p}}}]
)")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("users[0] (\"u\"): exec.interactiveMode: is required"),
            std::string::npos)
      << config.error().message;
}

}  // namespace
}  // namespace kstack::kube
