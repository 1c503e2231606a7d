// kstack: the operator binary. Subcommands are added as the product grows (operator,
// validate, render, import; apply, status, delete, scale for people: docs/cli.md); exceptions
// are handled here, at the process edge. Run as kubectl-kstack it is the kubectl plugin.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cmd/cluster_info.h"
#include "cmd/import.h"
#include "cmd/import_compose.h"
#include "cmd/operator.h"
#include "cmd/operator_flags.h"
#include "cmd/render.h"
#include "cmd/stack_commands.h"
#include "cmd/validate.h"
#include "kstack_version.h"

int main(int argc, char** argv) {
  CLI::App app{"kstack: a Kubernetes operator for catalogs of stateful applications"};
  // At most one subcommand; none (bare `kstack`) prints this help, see below.
  app.require_subcommand(0, 1);
  app.name(kstack::cmd::program_name(argc > 0 ? argv[0] : nullptr));
  app.set_version_flag("--version", fmt::format("kstack {} (commit {}, {} build)", KSTACK_VERSION,
                                                KSTACK_GIT_COMMIT, KSTACK_BUILD_TYPE));

  auto* version = app.add_subcommand("version", "Print version, git commit and build type");

  kstack::cmd::ClusterInfoOptions info;
  auto* cluster_info = app.add_subcommand(
      "cluster-info", "Connect as kubectl would and report the API server's version and health");
  cluster_info->add_option("--kubeconfig", info.kubeconfig, "Path to a kubeconfig file");
  cluster_info->add_option("--context", info.context, "The kubeconfig context to use");

  // How `validate` and `render` resolve a Stack's AppType among the files (offline.h).
  const std::string catalog_help =
      "An AppType that names its namespace is found by Stacks of that namespace (local) or, in "
      "the operator's namespace, by every Stack (system); an AppType that names no namespace is "
      "found by every Stack of the input. A KStackConfig that names no namespace is the "
      "operator's.";
  kstack::cmd::RenderOptions render;
  auto* render_cmd = app.add_subcommand(
      "render",
      "Print the Kubernetes objects one Stack would produce, offline. The input is checked as "
      "`kstack validate` checks it and nothing is rendered if validate would refuse it; it must "
      "hold exactly one Stack and one AppType of the name the Stack asks for. " +
          catalog_help);
  render_cmd
      ->add_option("-f,--filename", render.files,
                   "Files or directories (recursive: *.yaml, *.yml, *.json); - for stdin")
      ->required();
  render_cmd->add_option("-o,--output", render.output, "yaml or json")
      ->check(CLI::IsMember({"yaml", "json"}));
  render_cmd->add_option("--operator-namespace", render.operator_namespace,
                         "The operator's namespace (the system catalog)");
  render_cmd->add_option("-n,--namespace", render.default_namespace,
                         "Namespace for the Stack and other objects that name none");
  render_cmd->add_option("--uid", render.uid,
                         "The Stack's uid when its manifest has none (namingScheme UID derives "
                         "the names from it; default: the all-zero uid)");

  kstack::cmd::ValidateOptions validate_opts;
  auto* validate_cmd = app.add_subcommand(
      "validate",
      "Check AppType, Stack and KStackConfig manifests offline with the webhook's rules. " +
          catalog_help);
  validate_cmd
      ->add_option("-f,--filename", validate_opts.paths,
                   "Files or directories (recursive: *.yaml, *.yml, *.json); - for stdin")
      ->required();
  validate_cmd->add_option("-o,--output", validate_opts.output, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  validate_cmd->add_option("--operator-namespace", validate_opts.operator_namespace,
                           "The operator's namespace (the system catalog)");
  validate_cmd->add_option("-n,--namespace", validate_opts.default_namespace,
                           "Namespace for Stacks and other objects that name none");

  kstack::cmd::ImportOptions import_opts;
  std::string import_namespace;
  auto* import_cmd = app.add_subcommand(
      "import",
      "Convert KubeDirector apps, clusters and config (-f) to AppTypes, Stacks and "
      "KStackConfig, or a Compose file (`import compose FILE`) to an AppType and a Stack");
  // -f is required for the KubeDirector form only (checked when it runs).
  import_cmd->add_option("-f,--filename", import_opts.paths,
                         "KubeDirector manifests: files or directories (recursive: *.yaml, "
                         "*.yml, *.json); - for stdin");
  import_cmd->add_option("-o,--output", import_opts.output, "Output format: yaml or json")
      ->check(CLI::IsMember({"yaml", "json"}));
  auto* import_ns = import_cmd->add_option("-n,--namespace", import_namespace,
                                           "Namespace for every AppType and Stack");
  import_cmd->add_option("--operator-namespace", import_opts.operator_namespace,
                         "The operator's namespace (where the KStackConfig goes)");
  import_cmd->add_flag("--strict", import_opts.strict,
                       "Fail (and print nothing) if any field is dropped or changed");
  import_cmd->require_subcommand(0, 1);
  kstack::cmd::ComposeImportOptions compose_opts;
  auto* compose_cmd = kstack::cmd::add_import_compose_command(*import_cmd, compose_opts);

  // apply, status, delete, scale: cmd/stack_commands.h.
  kstack::cmd::StackCommands stack_commands(app);

  kstack::cmd::OperatorOptions op;
  auto* operator_cmd = kstack::cmd::add_operator_command(app, op);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.get_subcommands().empty()) {
    // Bare `kstack`: the usage, as --help prints it, and success (nothing went wrong).
    fmt::print("{}", app.help());
    return 0;
  }
  try {
    if (version->parsed()) {
      fmt::print("kstack {} (commit {}, {} build)\n", KSTACK_VERSION, KSTACK_GIT_COMMIT,
                 KSTACK_BUILD_TYPE);
      return 0;
    }
    if (cluster_info->parsed()) return kstack::cmd::cluster_info(info);
    if (auto code = stack_commands.run()) return *code;
    if (operator_cmd->parsed()) return kstack::cmd::run_operator(op);
    if (render_cmd->parsed()) return kstack::cmd::render(render);
    if (validate_cmd->parsed()) return kstack::cmd::validate(validate_opts);
    if (compose_cmd->parsed()) return kstack::cmd::import_compose(compose_opts);
    if (import_cmd->parsed()) {
      if (import_ns->count() > 0) import_opts.namespace_name = import_namespace;
      return kstack::cmd::import_manifests(import_opts);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "kstack: {}\n", e.what());
    return 1;
  }
  return 1;
}
