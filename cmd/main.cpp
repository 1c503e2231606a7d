// kstack: the operator binary. Subcommands are added as the product grows (operator,
// validate, render, import); exceptions are handled here, at the process edge.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cmd/cluster_info.h"
#include "cmd/operator.h"
#include "cmd/render.h"
#include "cmd/validate.h"
#include "kstack_version.h"

int main(int argc, char** argv) {
  CLI::App app{"kstack: a Kubernetes operator for catalogs of stateful applications"};
  app.require_subcommand(1);

  auto* version = app.add_subcommand("version", "Print version, git commit and build type");

  kstack::cmd::ClusterInfoOptions info;
  auto* cluster_info = app.add_subcommand(
      "cluster-info", "Connect as kubectl would and report the API server's version and health");
  cluster_info->add_option("--kubeconfig", info.kubeconfig, "Path to a kubeconfig file");
  cluster_info->add_option("--context", info.context, "The kubeconfig context to use");

  kstack::cmd::RenderOptions render;
  auto* render_cmd =
      app.add_subcommand("render", "Print the Kubernetes objects a Stack would produce, offline");
  render_cmd->add_option("-f,--filename", render.files, "AppType, Stack and KStackConfig files")
      ->required()
      ->check(CLI::ExistingFile);
  render_cmd->add_option("-o,--output", render.output, "yaml or json")
      ->check(CLI::IsMember({"yaml", "json"}));

  kstack::cmd::ValidateOptions validate_opts;
  auto* validate_cmd = app.add_subcommand(
      "validate",
      "Check AppType, Stack and KStackConfig manifests offline with the webhook's rules");
  validate_cmd
      ->add_option("-f,--filename", validate_opts.paths,
                   "Files or directories (recursive: *.yaml, *.yml, *.json); - for stdin")
      ->required();
  validate_cmd->add_option("-o,--output", validate_opts.output, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  validate_cmd->add_option("--operator-namespace", validate_opts.operator_namespace,
                           "The operator's namespace (the system catalog)");
  validate_cmd->add_option("-n,--namespace", validate_opts.default_namespace,
                           "Namespace for objects that name none");

  kstack::cmd::OperatorOptions op;
  auto* operator_cmd = app.add_subcommand("operator", "Run the Stack controller until SIGTERM");
  operator_cmd->add_option("--kubeconfig", op.kubeconfig, "Path to a kubeconfig file");
  operator_cmd->add_option("--context", op.context, "The kubeconfig context to use");
  operator_cmd->add_option("--namespace", op.operator_namespace,
                           "The operator's namespace (KStackConfig, system catalog)");
  operator_cmd->add_option("--watch-namespace", op.watch_namespace,
                           "Reconcile Stacks of this namespace only (default: all)");
  operator_cmd->add_option("--workers", op.workers, "Concurrent reconciles")
      ->check(CLI::Range(1, 64));
  operator_cmd
      ->add_option("--resync-period", op.resync_period_seconds,
                   "Seconds between periodic resyncs of every Stack")
      ->check(CLI::Range(1, 86400));
  operator_cmd
      ->add_option("--poll-interval-ms", op.poll_interval_ms,
                   "Re-check delay while members converge")
      ->check(CLI::Range(10, 600000));
  operator_cmd->add_option("--log-level", op.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (version->parsed()) {
      fmt::print("kstack {} (commit {}, {} build)\n", KSTACK_VERSION, KSTACK_GIT_COMMIT,
                 KSTACK_BUILD_TYPE);
      return 0;
    }
    if (cluster_info->parsed()) return kstack::cmd::cluster_info(info);
    if (operator_cmd->parsed()) return kstack::cmd::run_operator(op);
    if (render_cmd->parsed()) return kstack::cmd::render(render);
    if (validate_cmd->parsed()) return kstack::cmd::validate(validate_opts);
  } catch (const std::exception& e) {
    fmt::print(stderr, "kstack: {}\n", e.what());
    return 1;
  }
  return 1;
}
