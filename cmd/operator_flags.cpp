#include "cmd/operator_flags.h"

#include <cctype>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace kstack::cmd {
namespace {

std::string show(std::chrono::milliseconds d) {
  if (d.count() % 1000 != 0) return fmt::format("{}ms", d.count());
  const auto s = d.count() / 1000;
  if (s != 0 && s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

// A duration option: the flag, its KSTACK_* variable, and its default shown in --help.
CLI::Option* add_duration(CLI::App& cmd, const std::string& name, std::chrono::milliseconds& target,
                          const std::string& help, const std::string& env) {
  const CLI::Validator valid(
      [](std::string& value) -> std::string {
        return parse_duration(value) ? std::string()
                                     : "not a duration (e.g. 500ms, 15s, 5m, 1h): " + value;
      },
      "DURATION");
  return cmd
      .add_option_function<std::string>(
          name, [&target](const std::string& value) { target = *parse_duration(value); }, help)
      ->check(valid)
      ->default_str(show(target))
      ->envname(env);
}

// CLI11 prints a boolean flag as "--webhook,--no-webhook{false}": {false} is the value
// --no-webhook sets, but it reads as the flag's default. This shows "--webhook,--no-webhook
// [default: true]" instead.
class FlagFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    if (!is_flag(opt)) return name;
    std::string out;
    bool in_value = false;
    for (char c : name) {
      if (c == '{' || c == '}') {
        in_value = c == '{';
      } else if (!in_value) {
        out.push_back(c);
      }
    }
    return out;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!is_flag(opt)) return CLI::Formatter::make_option_opts(opt);
    std::string out;
    if (!opt->get_default_str().empty()) out += " [default: " + opt->get_default_str() + "]";
    if (!opt->get_envname().empty()) out += " (Env:" + opt->get_envname() + ")";
    return out;
  }

 private:
  // A flag takes no value of its own (CLI11 gives bool flags a type size of 1, expected 0).
  static bool is_flag(const CLI::Option* opt) { return opt->get_expected_max() == 0; }
};

// A boolean flag with its --no- form and KSTACK_* variable; the default shown is the value's.
CLI::Option* add_bool_flag(CLI::App& group, const std::string& name, bool& target,
                           const std::string& help, const std::string& env) {
  return group.add_flag(name + ",!--no-" + name.substr(2), target, help)
      ->default_str(target ? "true" : "false")
      ->envname(env);
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  bool all_digits = true;
  for (char c : text) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
  if (all_digits) {
    if (text.size() > 9) return std::nullopt;
    return std::chrono::seconds(std::stoll(std::string(text)));
  }
  double total_ms = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start || i - start > 12) return std::nullopt;
    double number = 0;
    try {
      number = std::stod(std::string(text.substr(start, i - start)));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    const std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit == "ms") {
      total_ms += number;
    } else if (unit == "s") {
      total_ms += number * 1000;
    } else if (unit == "m") {
      total_ms += number * 60'000;
    } else if (unit == "h") {
      total_ms += number * 3'600'000;
    } else {
      return std::nullopt;
    }
  }
  if (total_ms > 1e12) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(total_ms));
}

CLI::App* add_operator_command(CLI::App& app, OperatorOptions& o) {
  auto* cmd = app.add_subcommand(
      "operator",
      "Run the operator: informers, the Stack controller (on the leader), the admission webhook "
      "and the health/metrics endpoints, until SIGTERM. Every flag falls back to the "
      "environment variable shown.");
  cmd->option_defaults()->always_capture_default();
  cmd->formatter(std::make_shared<FlagFormatter>());

  auto* connection = cmd->add_option_group("Connection");
  connection
      ->add_option("--kubeconfig", o.kubeconfig,
                   "Path to a kubeconfig file (else KUBECONFIG, ~/.kube/config, in-cluster)")
      ->envname("KSTACK_KUBECONFIG");
  connection->add_option("--context", o.context, "The kubeconfig context to use")
      ->envname("KSTACK_CONTEXT");
  connection
      ->add_option("--qps", o.qps, "Client requests per second to the API server (token bucket)")
      ->check(CLI::Range(0.1, 10000.0))
      ->envname("KSTACK_QPS");
  connection->add_option("--burst", o.burst, "Client request burst above --qps")
      ->check(CLI::Range(1, 100000))
      ->envname("KSTACK_BURST");
  connection
      ->add_option("--event-qps", o.event_qps,
                   "Events per second to the API server: a token bucket of their own, apart from "
                   "--qps")
      ->check(CLI::Range(0.1, 10000.0))
      ->envname("KSTACK_EVENT_QPS");
  connection->add_option("--event-burst", o.event_burst, "Event burst above --event-qps")
      ->check(CLI::Range(1, 100000))
      ->envname("KSTACK_EVENT_BURST");

  auto* controller = cmd->add_option_group("Controller");
  controller
      ->add_option("--namespace", o.operator_namespace,
                   "The operator's namespace (KStackConfig, system catalog, webhook Secret, Lease)")
      ->envname("KSTACK_NAMESPACE");
  controller
      ->add_option("--watch-namespace", o.watch_namespace,
                   "Reconcile Stacks of this namespace only (default: all)")
      ->envname("KSTACK_WATCH_NAMESPACE");
  controller->add_option("--workers", o.workers, "Concurrent reconciles")
      ->check(CLI::Range(1, 64))
      ->envname("KSTACK_WORKERS");
  add_duration(*controller, "--resync-period", o.resync_period, "Periodic resync of every Stack",
               "KSTACK_RESYNC_PERIOD");
  controller
      ->add_option("--poll-interval-ms", o.poll_interval_ms,
                   "Re-check delay while members converge")
      ->check(CLI::Range(10, 600000))
      ->envname("KSTACK_POLL_INTERVAL_MS");
  controller
      ->add_option("--coalesce-ms", o.coalesce_ms,
                   "Pod and StatefulSet-status events wait this long before their Stack's pass, "
                   "so a burst of member transitions is one pass (0: no wait; drift never waits)")
      ->check(CLI::Range(0, 10000))
      ->envname("KSTACK_COALESCE_MS");
  controller
      ->add_option("--status-progress-ms", o.status_progress_ms,
                   "A status write that only carries members' progress (pods starting) waits "
                   "until this long after the Stack's last one; state and condition changes are "
                   "written at once (0: every change at once)")
      ->check(CLI::Range(0, 600000))
      ->envname("KSTACK_STATUS_PROGRESS_MS");

  auto* endpoints = cmd->add_option_group("Endpoints");
  endpoints
      ->add_option("--bind-address", o.bind_address,
                   "IP address the webhook, metrics and probe ports listen on")
      ->envname("KSTACK_BIND_ADDRESS");
  endpoints
      ->add_option("--metrics-port", o.metrics_port,
                   "Port of /metrics (Prometheus text format); 0 = off")
      ->envname("KSTACK_METRICS_PORT");
  endpoints
      ->add_option("--probe-port", o.probe_port,
                   "Port of /healthz and /readyz; 0 = off; equal to --metrics-port = one server "
                   "for all three")
      ->envname("KSTACK_PROBE_PORT");

  auto* admission = cmd->add_option_group("Admission webhook");
  add_bool_flag(*admission, "--webhook", o.webhook,
                "Serve admission (--no-webhook or --webhook=false: only reconcile)",
                "KSTACK_WEBHOOK");
  admission->add_option("--webhook-port", o.webhook_port, "HTTPS port of /validate and /mutate")
      ->check(CLI::Range(1, 65535))
      ->envname("KSTACK_WEBHOOK_PORT");
  admission
      ->add_option(
          "--webhook-cert-dir", o.webhook_cert_dir,
          "Directory with tls.crt and tls.key (e.g. from cert-manager), reloaded when they "
          "change; default: a self-managed CA in Secret kstack-webhook-tls")
      ->envname("KSTACK_WEBHOOK_CERT_DIR");
  admission
      ->add_option("--webhook-url-host", o.webhook_url_hosts,
                   "Host (IP or DNS name) the API server calls the webhook by URL rather than "
                   "through the Service; added to the serving certificate (repeatable)")
      ->envname("KSTACK_WEBHOOK_URL_HOST");
  admission
      ->add_option("--webhook-max-connections", o.webhook_max_connections,
                   "Connections the admission server keeps open at once; more are closed at "
                   "accept (kstack_admission_connections_refused_total)")
      ->check(CLI::PositiveNumber)
      ->envname("KSTACK_WEBHOOK_MAX_CONNECTIONS");
  admission
      ->add_option("--webhook-max-inflight-body-bytes", o.webhook_max_inflight_body_bytes,
                   "Bytes of request bodies the admission server reads or serves at once; a "
                   "request beyond it is answered 503 with Retry-After "
                   "(kstack_admission_body_budget_refusals_total). At least 3 MiB (3145728), "
                   "the largest request body")
      ->check(CLI::Range(kMinInflightBodyBytes, std::numeric_limits<std::size_t>::max())
                  .description(fmt::format("at least {}", kMinInflightBodyBytes)))
      ->envname("KSTACK_WEBHOOK_MAX_INFLIGHT_BODY_BYTES");
  admission
      ->add_option("--operator-username", o.operator_username,
                   "The operator's own username, the only one allowed to write Stack status and "
                   "kstack.io/ labels (default: from the service-account token, else "
                   "system:serviceaccount:kstack-system:kstack)")
      ->envname("KSTACK_OPERATOR_USERNAME");

  auto* election = cmd->add_option_group("Leader election");
  add_bool_flag(*election, "--leader-elect", o.leader_elect,
                "Reconcile only while holding the Lease (--no-leader-elect or "
                "--leader-elect=false: always)",
                "KSTACK_LEADER_ELECT");
  election->add_option("--leader-election-id", o.leader_election_id, "Name of the Lease")
      ->envname("KSTACK_LEADER_ELECTION_ID");
  election
      ->add_option("--leader-election-namespace", o.leader_election_namespace,
                   "Namespace of the Lease (default: --namespace)")
      ->envname("KSTACK_LEADER_ELECTION_NAMESPACE");
  add_duration(*election, "--lease-duration", o.lease_duration,
               "How long others wait before taking a lease that was not renewed",
               "KSTACK_LEASE_DURATION");
  add_duration(*election, "--renew-deadline", o.renew_deadline,
               "The leader steps down when it could not renew for this long",
               "KSTACK_RENEW_DEADLINE");
  add_duration(*election, "--retry-period", o.retry_period, "Between renewals and acquire attempts",
               "KSTACK_RETRY_PERIOD");

  auto* process = cmd->add_option_group("Process");
  add_duration(*process, "--graceful-shutdown-timeout", o.graceful_shutdown_timeout,
               "On SIGTERM, how long in-flight reconciles may take before exiting without them",
               "KSTACK_GRACEFUL_SHUTDOWN_TIMEOUT");
  process->add_option("--log-level", o.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->envname("KSTACK_LOG_LEVEL");
  process
      ->add_option("--log-format", o.log_format,
                   "json (one object per line), text, or auto: text on a terminal, else json")
      ->check(CLI::IsMember({"json", "text", "auto"}))
      ->envname("KSTACK_LOG_FORMAT");

  cmd->callback([&o] {
    if (o.renew_deadline >= o.lease_duration) {
      throw CLI::ValidationError("--renew-deadline", "must be shorter than --lease-duration");
    }
    if (o.retry_period >= o.renew_deadline) {
      throw CLI::ValidationError("--retry-period", "must be shorter than --renew-deadline");
    }
    if (o.resync_period.count() <= 0) {
      throw CLI::ValidationError("--resync-period", "must be positive");
    }
  });
  return cmd;
}

}  // namespace kstack::cmd
