// Loads a Config as kubectl does: --kubeconfig, else KUBECONFIG's merged list, else
// ~/.kube/config; or in-cluster from the pod's service account. Errors name the file, the
// entry and the field, so that a user can fix their kubeconfig from the message alone.
#include "kube/config.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <system_error>
#include <utility>

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include "kube/config_detail.h"

namespace kstack::kube {
namespace {

namespace fs = std::filesystem;
using GetEnv = std::function<std::optional<std::string>(std::string_view)>;

// Kubeconfigs are a few KiB; the cap keeps a hostile or mistaken file from exhausting memory
// in yaml-cpp (docs/dependencies.md, "Known defects").
constexpr std::size_t kMaxKubeconfigBytes = 4u << 20;
constexpr std::string_view kExecV1 = "client.authentication.k8s.io/v1";
constexpr std::string_view kExecV1beta1 = "client.authentication.k8s.io/v1beta1";
constexpr std::string_view kDefaultNamespace = "default";

GetEnv env_lookup(const GetEnv& getenv) {
  if (getenv) return getenv;
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());  // NOLINT(concurrency-mt-unsafe)
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<std::string> non_empty_env(const GetEnv& env, std::string_view name) {
  auto value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

tl::unexpected<Error> config_error(std::string message) {
  return make_error(ErrorKind::kConfig, std::move(message));
}

std::string in_quotes(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string line_of(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return " (line " + std::to_string(mark.line + 1) + ")";
}
std::string line_of(const YAML::Node& node) { return line_of(node.Mark()); }

bool defined(const YAML::Node& node) { return node.IsDefined() && !node.IsNull(); }

bool is_base64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

// Standard base64 with padding, as Go's encoding/base64.StdEncoding (line breaks ignored).
std::optional<std::string> decode_base64(std::string_view in) {
  std::string text;
  text.reserve(in.size());
  for (const char c : in) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') text.push_back(c);
  }
  if (text.empty()) return std::string();
  if (text.size() % 4 != 0 || text.size() > INT_MAX) return std::nullopt;
  std::size_t padding = 0;
  while (padding < 2 && text[text.size() - 1 - padding] == '=') ++padding;
  for (std::size_t i = 0; i < text.size() - padding; ++i) {
    if (!is_base64_char(text[i])) return std::nullopt;
  }
  std::string out(text.size() / 4 * 3, '\0');
  // EVP_DecodeBlock counts the padding as zero bytes: drop them.
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || static_cast<std::size_t>(n) < padding) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

// kubectl resolves relative paths in a kubeconfig against the directory of that file.
fs::path resolve(const fs::path& dir, const std::string& value) {
  fs::path path(value);
  if (path.is_absolute()) return path;
  return (dir / path).lexically_normal();
}

fs::path absolute_path(const fs::path& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  return ec ? path : abs.lexically_normal();
}

std::string file_list(const std::vector<fs::path>& files) {
  std::string out = "[";
  for (std::size_t i = 0; i < files.size(); ++i) out += (i ? ", " : "") + files[i].string();
  return out + "]";
}

// Typed access to one YAML mapping; errors read "<where>: <prefix><key>: <problem>".
class Fields {
 public:
  Fields(const YAML::Node& map, std::string where, std::string prefix = {})
      : map_(map), where_(std::move(where)), prefix_(std::move(prefix)) {}

  const std::string& where() const { return where_; }

  tl::unexpected<Error> fail(std::string_view key, std::string_view problem) const {
    return config_error(where_ + ": " + prefix_ + std::string(key) + ": " + std::string(problem));
  }

  YAML::Node get(const char* key) const {
    if (!map_.IsDefined() || !map_.IsMap()) return YAML::Node();
    return map_[key];
  }

  // An absent or null field is "".
  Result<std::string> str(const char* key) const {
    const YAML::Node node = get(key);
    if (!defined(node)) return std::string();
    if (!node.IsScalar()) return fail(key, "expected a string" + line_of(node));
    return node.Scalar();
  }

  Result<bool> boolean(const char* key) const {
    const YAML::Node node = get(key);
    if (!defined(node)) return false;
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      return fail(key, "expected true or false" + line_of(node));
    }
    return value;
  }

  // `<data_key>` (base64) wins over `<file_key>` (a path), as in client-go.
  Result<std::string> data_or_file(const char* data_key, const char* file_key,
                                   const fs::path& dir) const {
    auto data = str(data_key);
    if (!data) return tl::unexpected(std::move(data.error()));
    if (!data->empty()) {
      auto decoded = decode_base64(*data);
      if (!decoded) return fail(data_key, "invalid base64");
      return std::move(*decoded);
    }
    auto file = str(file_key);
    if (!file) return tl::unexpected(std::move(file.error()));
    if (file->empty()) return std::string();
    auto content = detail::read_file_limited(resolve(dir, *file), detail::kMaxCredentialFileBytes);
    if (!content) return fail(file_key, content.error().message);
    return std::move(*content);
  }

 private:
  YAML::Node map_;
  std::string where_;
  std::string prefix_;
};

// One element of clusters/users/contexts and what error messages need to point at it.
struct Entry {
  std::string name;
  YAML::Node body;    // the `cluster` / `user` / `context` mapping; null when absent
  std::string where;  // kubeconfig /x/config: users[1] ("bob")
  fs::path file;      // absolute
};

using Entries = std::map<std::string, Entry, std::less<>>;

struct Merged {
  std::vector<fs::path> files;
  Entries clusters, users, contexts;
  std::string current_context;
};

struct Discovery {
  std::vector<fs::path> files;  // to load, in order
  std::string tried;            // for "nothing found" messages
};

Discovery discover(const LoadOptions& options, const GetEnv& env) {
  Discovery found;
  if (options.kubeconfig) {
    found.tried = "--kubeconfig " + in_quotes(*options.kubeconfig);
    if (!options.kubeconfig->empty()) found.files.push_back(absolute_path(*options.kubeconfig));
    return found;
  }
  if (const auto list = non_empty_env(env, "KUBECONFIG")) {
    found.tried = "KUBECONFIG=" + *list + " (none of its files exists)";
    std::string_view rest = *list;
    while (!rest.empty()) {
      const std::size_t colon = std::min(rest.find(':'), rest.size());
      const std::string entry(rest.substr(0, colon));
      rest.remove_prefix(std::min(colon + 1, rest.size()));
      if (entry.empty()) continue;
      const fs::path path = absolute_path(entry);
      std::error_code ec;
      if (fs::status(path, ec).type() == fs::file_type::not_found) continue;
      if (std::find(found.files.begin(), found.files.end(), path) == found.files.end()) {
        found.files.push_back(path);
      }
    }
    return found;
  }
  const auto home = non_empty_env(env, "HOME");
  if (!home) {
    found.tried = "~/.kube/config (HOME is not set)";
    return found;
  }
  const fs::path path = absolute_path(fs::path(*home) / ".kube" / "config");
  found.tried = path.string() + " (does not exist)";
  std::error_code ec;
  if (fs::status(path, ec).type() != fs::file_type::not_found) found.files.push_back(path);
  return found;
}

// Adds one section's entries that are not defined yet: the first file defining a name wins.
Result<void> merge_section(const YAML::Node& root, const char* section, const char* body_key,
                           const fs::path& file, Entries& into) {
  const YAML::Node list = root[section];
  const std::string at = "kubeconfig " + file.string() + ": " + section;
  if (!defined(list)) return {};
  if (!list.IsSequence()) return config_error(at + ": expected a list" + line_of(list));
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string item_at = at + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) {
      return config_error(item_at + ": expected a mapping with name and " + body_key +
                          line_of(item));
    }
    const Fields fields(item, item_at);
    auto name = fields.str("name");
    if (!name) return tl::unexpected(std::move(name.error()));
    if (name->empty()) return fields.fail("name", "is empty" + line_of(item));
    YAML::Node body = item[body_key];
    if (defined(body) && !body.IsMap()) {
      return fields.fail(body_key, "expected a mapping" + line_of(body));
    }
    if (!body.IsDefined()) body = YAML::Node();
    into.try_emplace(*name, Entry{*name, body, item_at + " (" + in_quotes(*name) + ")", file});
  }
  return {};
}

Result<void> merge_file(const fs::path& file, Merged& merged) {
  auto content = detail::read_file_limited(file, kMaxKubeconfigBytes);
  if (!content) return config_error("kubeconfig: " + content.error().message);
  try {
    const YAML::Node root = YAML::Load(*content);  // never LoadAll (yaml-cpp issue #1040)
    merged.files.push_back(file);
    if (!defined(root)) return {};  // an empty file is an empty config, as for kubectl
    if (!root.IsMap()) {
      return config_error("kubeconfig " + file.string() + ": expected a mapping at the top level");
    }
    auto current = Fields(root, "kubeconfig " + file.string()).str("current-context");
    if (!current) return tl::unexpected(std::move(current.error()));
    if (merged.current_context.empty()) merged.current_context = *current;
    if (auto r = merge_section(root, "clusters", "cluster", file, merged.clusters); !r) return r;
    if (auto r = merge_section(root, "users", "user", file, merged.users); !r) return r;
    return merge_section(root, "contexts", "context", file, merged.contexts);
  } catch (const YAML::Exception& e) {
    return config_error("kubeconfig " + file.string() + line_of(e.mark) + ": " + e.msg);
  }
}

Result<void> apply_cluster(const Entry& cluster, const std::string& context, Config& config) {
  const Fields f(cluster.body, cluster.where);
  auto server = f.str("server");
  if (!server) return tl::unexpected(std::move(server.error()));
  if (server->empty()) {
    return config_error("kubeconfig " + cluster.file.string() + ": cluster " +
                        in_quotes(cluster.name) + " (context " + in_quotes(context) +
                        "): server is empty");
  }
  const std::size_t scheme_end = server->find("://");
  if (scheme_end == std::string::npos) {
    *server = "https://" + *server;  // client-go's default for a bare host:port
  } else if (const auto scheme = server->substr(0, scheme_end);
             scheme != "https" && scheme != "http") {
    return f.fail("server", "scheme " + in_quotes(scheme) + " is not https or http");
  }
  config.server = std::move(*server);

  auto ca = f.data_or_file("certificate-authority-data", "certificate-authority",
                           cluster.file.parent_path());
  if (!ca) return tl::unexpected(std::move(ca.error()));
  config.ca_pem = std::move(*ca);
  auto insecure = f.boolean("insecure-skip-tls-verify");
  if (!insecure) return tl::unexpected(std::move(insecure.error()));
  if (*insecure && !config.ca_pem.empty()) {
    return f.fail("insecure-skip-tls-verify",
                  "cannot be combined with certificate-authority(-data), as in kubectl");
  }
  config.insecure_skip_tls_verify = *insecure;
  auto server_name = f.str("tls-server-name");
  if (!server_name) return tl::unexpected(std::move(server_name.error()));
  config.tls_server_name = std::move(*server_name);
  auto proxy = f.str("proxy-url");
  if (!proxy) return tl::unexpected(std::move(proxy.error()));
  if (!proxy->empty()) return f.fail("proxy-url", "is not supported by kstack");
  return {};
}

Result<std::vector<std::string>> exec_args(const Fields& f) {
  std::vector<std::string> args;
  const YAML::Node list = f.get("args");
  if (!defined(list)) return args;
  if (!list.IsSequence()) return f.fail("args", "expected a list of strings" + line_of(list));
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].IsScalar()) {
      return f.fail("args[" + std::to_string(i) + "]", "expected a string" + line_of(list[i]));
    }
    args.push_back(list[i].Scalar());
  }
  return args;
}

Result<std::vector<std::pair<std::string, std::string>>> exec_env(const Fields& f) {
  std::vector<std::pair<std::string, std::string>> env;
  const YAML::Node list = f.get("env");
  if (!defined(list)) return env;
  if (!list.IsSequence()) return f.fail("env", "expected a list of {name, value}" + line_of(list));
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string key = "env[" + std::to_string(i) + "]";
    if (!list[i].IsMap()) return f.fail(key, "expected {name, value}" + line_of(list[i]));
    const Fields item(list[i], f.where(), "exec." + key + ".");
    auto name = item.str("name");
    if (!name) return tl::unexpected(std::move(name.error()));
    if (name->empty() || name->find('=') != std::string::npos) {
      return item.fail("name", "must be a non-empty variable name");
    }
    auto value = item.str("value");
    if (!value) return tl::unexpected(std::move(value.error()));
    env.emplace_back(std::move(*name), std::move(*value));
  }
  return env;
}

Result<ExecPluginConfig> parse_exec(const YAML::Node& node, const Entry& user) {
  if (!node.IsMap()) return config_error(user.where + ": exec: expected a mapping" + line_of(node));
  const Fields f(node, user.where, "exec.");
  ExecPluginConfig exec;
  auto api_version = f.str("apiVersion");
  if (!api_version) return tl::unexpected(std::move(api_version.error()));
  if (*api_version != kExecV1 && *api_version != kExecV1beta1) {
    return f.fail("apiVersion", in_quotes(*api_version) + " is not supported (use " +
                                    std::string(kExecV1) + " or " + std::string(kExecV1beta1) +
                                    ")");
  }
  exec.api_version = std::move(*api_version);
  auto command = f.str("command");
  if (!command) return tl::unexpected(std::move(command.error()));
  if (command->empty()) return f.fail("command", "is empty");
  // As client-go: a command with a '/' is a path relative to the kubeconfig; else PATH's.
  exec.command = command->find('/') == std::string::npos
                     ? *command
                     : resolve(user.file.parent_path(), *command).string();
  auto args = exec_args(f);
  if (!args) return tl::unexpected(std::move(args.error()));
  exec.args = std::move(*args);
  auto env = exec_env(f);
  if (!env) return tl::unexpected(std::move(env.error()));
  exec.env = std::move(*env);
  auto hint = f.str("installHint");
  if (!hint) return tl::unexpected(std::move(hint.error()));
  exec.install_hint = std::move(*hint);
  auto cluster_info = f.boolean("provideClusterInfo");
  if (!cluster_info) return tl::unexpected(std::move(cluster_info.error()));
  exec.provide_cluster_info = *cluster_info;
  auto mode = f.str("interactiveMode");
  if (!mode) return tl::unexpected(std::move(mode.error()));
  if (mode->empty() && exec.api_version == kExecV1) {
    return f.fail("interactiveMode", "is required with " + std::string(kExecV1) +
                                         " (kstack supports Never and IfAvailable)");
  }
  if (mode->empty()) *mode = "IfAvailable";  // the v1beta1 default
  if (*mode == "Always")
    return f.fail("interactiveMode", "Always needs a terminal; kstack has none");
  if (*mode != "Never" && *mode != "IfAvailable") {
    return f.fail("interactiveMode", in_quotes(*mode) + " is not Never, IfAvailable or Always");
  }
  exec.interactive_mode = std::move(*mode);
  return exec;
}

Result<void> reject_unsupported_auth(const Fields& f) {
  if (const YAML::Node provider = f.get("auth-provider"); defined(provider)) {
    auto name = Fields(provider, f.where(), "auth-provider.").str("name");
    if (!name) return tl::unexpected(std::move(name.error()));
    return f.fail("auth-provider",
                  "provider " + in_quotes(*name) +
                      " is not supported; use an exec credential plugin "
                      "(users[].user.exec, e.g. gke-gcloud-auth-plugin, kubelogin)");
  }
  for (const char* key : {"as", "as-uid", "as-groups", "as-user-extra"}) {
    if (defined(f.get(key))) return f.fail(key, "impersonation is not supported by kstack");
  }
  return {};
}

Result<void> apply_user(const Entry& user, const LoadOptions& options, Config& config) {
  const Fields f(user.body, user.where);
  const fs::path dir = user.file.parent_path();
  if (auto r = reject_unsupported_auth(f); !r) return r;
  auto cert = f.data_or_file("client-certificate-data", "client-certificate", dir);
  if (!cert) return tl::unexpected(std::move(cert.error()));
  auto key = f.data_or_file("client-key-data", "client-key", dir);
  if (!key) return tl::unexpected(std::move(key.error()));
  if (cert->empty() != key->empty()) {
    return cert->empty() ? f.fail("client-key", "is set without client-certificate(-data)")
                         : f.fail("client-certificate", "is set without client-key(-data)");
  }
  config.client_cert_pem = std::move(*cert);
  config.client_key_pem = std::move(*key);

  auto token = f.str("token");
  if (!token) return tl::unexpected(std::move(token.error()));
  auto token_path = f.str("tokenFile");
  if (!token_path) return tl::unexpected(std::move(token_path.error()));
  auto username = f.str("username");
  if (!username) return tl::unexpected(std::move(username.error()));
  auto password = f.str("password");
  if (!password) return tl::unexpected(std::move(password.error()));
  const bool has_token = !token->empty() || !token_path->empty();
  const bool has_basic = !username->empty() || !password->empty();
  if (has_token && has_basic) {
    return f.fail("username", "username/password and token/tokenFile cannot both be set");
  }
  config.username = std::move(*username);
  config.password = std::move(*password);

  if (!token_path->empty()) {
    // client-go: the file's token, re-read periodically, wins over `token`.
    auto source = token_file(resolve(dir, *token_path), kTokenFileRereadPeriod, options.clock);
    if (auto first = source->bearer_token(); !first) {
      return f.fail("tokenFile", first.error().message);
    }
    config.credentials = std::move(source);
  } else if (!token->empty()) {
    config.credentials = static_token(std::move(*token));
  }

  if (const YAML::Node exec_node = f.get("exec"); defined(exec_node)) {
    auto exec = parse_exec(exec_node, user);
    if (!exec) return tl::unexpected(std::move(exec.error()));
    // client-go: a token, basic auth or client certificate takes precedence over the plugin.
    if (!has_token && !has_basic && config.client_cert_pem.empty()) {
      config.credentials = exec_plugin(std::move(*exec), config.server, options.clock);
    }
  }
  return {};
}

Result<Config> build_config(const Merged& merged, const LoadOptions& options) {
  const std::string files = file_list(merged.files);
  const std::string context_name =
      options.context && !options.context->empty() ? *options.context : merged.current_context;
  if (context_name.empty()) {
    return config_error("no context selected: kubeconfig files " + files +
                        " set no current-context and no --context was given");
  }
  const auto ctx = merged.contexts.find(context_name);
  if (ctx == merged.contexts.end()) {
    return config_error("context " + in_quotes(context_name) + " not found in kubeconfig files " +
                        files);
  }
  const Fields f(ctx->second.body, ctx->second.where);
  auto cluster_name = f.str("cluster");
  if (!cluster_name) return tl::unexpected(std::move(cluster_name.error()));
  if (cluster_name->empty()) return f.fail("cluster", "is empty");
  auto user_name = f.str("user");
  if (!user_name) return tl::unexpected(std::move(user_name.error()));
  auto namespace_name = f.str("namespace");
  if (!namespace_name) return tl::unexpected(std::move(namespace_name.error()));

  Config config;
  config.context_name = context_name;
  config.namespace_name =
      namespace_name->empty() ? std::string(kDefaultNamespace) : *namespace_name;
  if (options.namespace_override && !options.namespace_override->empty()) {
    config.namespace_name = *options.namespace_override;
  }
  config.source = "kubeconfig " +
                  (merged.files.size() == 1 ? merged.files.front().string() : files) +
                  " (context " + in_quotes(context_name) + ")";

  const auto cluster = merged.clusters.find(*cluster_name);
  if (cluster == merged.clusters.end()) {
    return config_error(ctx->second.where + ": cluster " + in_quotes(*cluster_name) +
                        " not found in kubeconfig files " + files);
  }
  if (auto r = apply_cluster(cluster->second, context_name, config); !r) {
    return tl::unexpected(std::move(r.error()));
  }
  if (!user_name->empty()) {  // a context without a user is anonymous, as in kubectl
    const auto user = merged.users.find(*user_name);
    if (user == merged.users.end()) {
      return config_error(ctx->second.where + ": user " + in_quotes(*user_name) +
                          " not found in kubeconfig files " + files);
    }
    if (auto r = apply_user(user->second, options, config); !r) {
      return tl::unexpected(std::move(r.error()));
    }
  }
  return config;
}

bool is_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return false;
  int port = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    port = port * 10 + (c - '0');
  }
  return port > 0 && port <= 65535;
}

}  // namespace

Result<Config> load_kubeconfig(const LoadOptions& options) {
  const GetEnv env = env_lookup(options.getenv);
  const Discovery found = discover(options, env);
  if (options.kubeconfig && options.kubeconfig->empty()) {
    return config_error("--kubeconfig is an empty path");
  }
  if (found.files.empty()) return config_error("no kubeconfig found: tried " + found.tried);
  Merged merged;
  for (const auto& file : found.files) {
    if (auto r = merge_file(file, merged); !r) return tl::unexpected(std::move(r.error()));
  }
  try {
    return build_config(merged, options);
  } catch (const YAML::Exception& e) {  // accessors check types; this is a last resort
    return config_error("kubeconfig files " + file_list(merged.files) + line_of(e.mark) + ": " +
                        e.msg);
  }
}

Result<Config> load_in_cluster(const InClusterOptions& options) {
  constexpr std::string_view kWhat = "in-cluster configuration: ";
  const GetEnv env = env_lookup(options.getenv);
  const auto host = non_empty_env(env, "KUBERNETES_SERVICE_HOST");
  const auto port = non_empty_env(env, "KUBERNETES_SERVICE_PORT");
  if (!host || !port) {
    const std::string missing = !host && !port ? "KUBERNETES_SERVICE_HOST and "
                                                 "KUBERNETES_SERVICE_PORT are"
                                : !host        ? "KUBERNETES_SERVICE_HOST is"
                                               : "KUBERNETES_SERVICE_PORT is";
    return config_error(std::string(kWhat) + missing + " not set (not running in a pod?)");
  }
  if (!is_port(*port)) {
    return config_error(std::string(kWhat) + "KUBERNETES_SERVICE_PORT " + in_quotes(*port) +
                        " is not a port number");
  }
  Config config;
  const bool ipv6 = host->find(':') != std::string::npos && !host->starts_with('[');
  config.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  config.source = "in-cluster";

  const fs::path& dir = options.service_account_dir;
  auto ca = detail::read_file_limited(dir / "ca.crt", detail::kMaxCredentialFileBytes);
  if (!ca) return config_error(std::string(kWhat) + "service account CA: " + ca.error().message);
  config.ca_pem = std::move(*ca);

  auto tokens = token_file(dir / "token", kTokenFileRereadPeriod, options.clock);
  if (auto first = tokens->bearer_token(); !first) {
    return config_error(std::string(kWhat) + "service account " + first.error().message);
  }
  config.credentials = std::move(tokens);

  const fs::path namespace_path = dir / "namespace";
  std::error_code ec;
  if (fs::status(namespace_path, ec).type() != fs::file_type::not_found) {
    auto content = detail::read_file_limited(namespace_path, detail::kMaxCredentialFileBytes);
    if (!content) {
      return config_error(std::string(kWhat) +
                          "service account namespace: " + content.error().message);
    }
    if (const auto ns = detail::trim(*content); !ns.empty()) config.namespace_name = ns;
  }
  return config;
}

Result<Config> load_default(const LoadOptions& options) {
  if (options.kubeconfig) return load_kubeconfig(options);
  const GetEnv env = env_lookup(options.getenv);
  const Discovery found = discover(options, env);
  if (!found.files.empty()) return load_kubeconfig(options);
  if (!non_empty_env(env, "KUBERNETES_SERVICE_HOST")) {
    return config_error("no Kubernetes configuration found; tried " + found.tried +
                        ", in-cluster (KUBERNETES_SERVICE_HOST is not set)");
  }
  InClusterOptions in_cluster;
  in_cluster.getenv = env;
  in_cluster.clock = options.clock;
  auto config = load_in_cluster(in_cluster);
  if (config && options.namespace_override && !options.namespace_override->empty()) {
    config->namespace_name = *options.namespace_override;
  }
  return config;
}

}  // namespace kstack::kube
