// The commands for people working with Stacks on a cluster (docs/cli.md): `kstack apply`,
// `kstack status`, `kstack delete` and `kstack scale`, also reachable as the kubectl plugin
// `kubectl kstack ...` (the same binary named kubectl-kstack). Client configuration as kubectl:
// --kubeconfig, --context, -n/--namespace, KUBECONFIG.
#pragma once

#include <chrono>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>
#include <tl/expected.hpp>

#include "cmd/inputs.h"

namespace CLI {
class App;
}

namespace kstack::kube {
class Client;
}

namespace kstack::cmd {

// Exit codes shared by the four commands (docs/cli.md "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;   // a member's setup failed, the Stack is in error, or
                                        // the API server could not be reached / refused for
                                        // another reason than the object's content
inline constexpr int kExitDenied = 2;   // the object was refused (admission, schema) or the
                                        // input is unusable (file, kind, arguments)
inline constexpr int kExitTimeout = 3;  // --wait ran out of --timeout

// `kstack apply --wait` waits this long unless --timeout says otherwise.
inline constexpr std::chrono::minutes kDefaultWaitTimeout{10};
// The field manager of every write of these commands (kubectl's is "kubectl").
inline constexpr const char* kFieldManager = "kstack-cli";

struct ClientFlags {
  std::optional<std::string> kubeconfig;
  std::optional<std::string> context;
  std::optional<std::string> namespace_name;  // -n
};

struct WaitFlags {
  bool wait = false;
  std::string timeout = "10m";
};

struct ApplyOptions {
  ClientFlags client;
  std::vector<std::string> files;
  WaitFlags wait;
  bool force_conflicts = false;  // take over fields another manager owns
  std::size_t max_file_bytes = kMaxInputFileBytes;
};

struct StatusOptions {
  ClientFlags client;
  std::string stack;             // "" = every Stack of the namespace
  std::string output = "table";  // table | json | yaml
  bool watch = false;
  std::string timeout = "0";  // --watch ends after this long ("0": never)
};

struct DeleteOptions {
  ClientFlags client;
  std::string stack;
  WaitFlags wait;
};

struct ScaleOptions {
  ClientFlags client;
  std::string stack;
  std::vector<std::string> requests;  // ROLE=N
  WaitFlags wait;
};

// A client as kubectl would make one from these flags, and the namespace for objects that name
// none (-n, else the context's, else "default"); nullopt after printing why on `err`.
struct Connection {
  std::shared_ptr<kube::Client> client;
  std::string ns;
};
std::optional<Connection> connect(const ClientFlags& flags, std::ostream& err);

// The subcommands registered on `app`; run() dispatches to the one that was parsed.
class StackCommands {
 public:
  explicit StackCommands(CLI::App& app);
  // The exit code of the parsed subcommand, or nullopt when none of these was parsed.
  std::optional<int> run() const;

 private:
  CLI::App* apply_ = nullptr;
  CLI::App* status_ = nullptr;
  CLI::App* delete_ = nullptr;
  CLI::App* scale_ = nullptr;
  std::unique_ptr<ApplyOptions> apply_opts_ = std::make_unique<ApplyOptions>();
  std::unique_ptr<StatusOptions> status_opts_ = std::make_unique<StatusOptions>();
  std::unique_ptr<DeleteOptions> delete_opts_ = std::make_unique<DeleteOptions>();
  std::unique_ptr<ScaleOptions> scale_opts_ = std::make_unique<ScaleOptions>();
};

// The name the usage shows: "kubectl kstack" when the binary runs as kubectl-kstack (a kubectl
// plugin), else "kstack".
std::string program_name(const char* argv0);

int apply(const ApplyOptions& options, std::ostream& out, std::ostream& err);
int status(const StatusOptions& options, std::ostream& out, std::ostream& err);
int delete_stack(const DeleteOptions& options, std::ostream& out, std::ostream& err);
int scale(const ScaleOptions& options, std::ostream& out, std::ostream& err);

// ---- pure parts, unit-tested ----

// "10m", "90s", "1h30m", "500ms", "0" -> duration; an error names the text.
tl::expected<std::chrono::milliseconds, std::string> parse_duration(const std::string& text);

// ROLE=N arguments of `kstack scale`, in order; an error names the bad argument.
tl::expected<std::vector<std::pair<std::string, int>>, std::string> parse_scale_requests(
    const std::vector<std::string>& args);

// The RFC 6902 patch that sets spec.roles[i].members of each requested role of `stack`, each
// guarded by a test op on spec.roles[i].id so that a concurrent reordering of the roles fails
// the patch instead of scaling another role. An error names a role the Stack does not have.
tl::expected<boost::json::value, std::string> scale_patch(
    const boost::json::value& stack, const std::vector<std::pair<std::string, int>>& requests);

// A document of `kstack apply -f` that may be applied: kstack's kinds and ConfigMap. Returns ""
// when it may, else why not.
std::string refuse_kind(const boost::json::value& object);

}  // namespace kstack::cmd
