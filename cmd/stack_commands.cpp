#include "cmd/stack_commands.h"

#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kube/client.h"
#include "kube/config.h"

namespace kstack::cmd {

namespace {

void add_client_flags(CLI::App& cmd, ClientFlags& flags) {
  cmd.add_option("--kubeconfig", flags.kubeconfig,
                 "Path to a kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)");
  cmd.add_option("--context", flags.context, "The kubeconfig context to use");
  cmd.add_option("-n,--namespace", flags.namespace_name,
                 "Namespace (default: the context's, else \"default\")");
}

void add_wait_flags(CLI::App& cmd, WaitFlags& flags, const std::string& what) {
  cmd.add_flag("--wait", flags.wait, what);
  cmd.add_option("--timeout", flags.timeout,
                 "How long --wait waits, e.g. 90s, 10m, 1h (default 10m)");
}

}  // namespace

std::string program_name(const char* argv0) {
  if (argv0 == nullptr) return "kstack";
  return std::filesystem::path(argv0).filename() == "kubectl-kstack" ? "kubectl kstack" : "kstack";
}

std::optional<Connection> connect(const ClientFlags& flags, std::ostream& err) {
  kube::LoadOptions load;
  load.kubeconfig = flags.kubeconfig;
  load.context = flags.context;
  load.namespace_override = flags.namespace_name;
  auto config = kube::load_default(load);
  if (!config) {
    err << "error: " << config.error().to_string() << '\n';
    return std::nullopt;
  }
  config->user_agent = "kstack-cli";
  std::string ns = config->namespace_name.empty() ? "default" : config->namespace_name;
  auto client = kube::Client::create(std::move(*config));
  if (!client) {
    err << "error: " << client.error().to_string() << '\n';
    return std::nullopt;
  }
  return Connection{std::move(*client), std::move(ns)};
}

StackCommands::StackCommands(CLI::App& app) {
  auto& a = *apply_opts_;
  apply_ = app.add_subcommand(
      "apply",
      "Server-side apply AppTypes, Stacks, KStackConfigs and ConfigMaps; with --wait, follow "
      "each applied Stack until it is Ready");
  apply_
      ->add_option("-f,--filename", a.files,
                   "Files or directories (recursive: *.yaml, *.yml, *.json); - for stdin")
      ->required();
  add_client_flags(*apply_, a.client);
  add_wait_flags(*apply_, a.wait,
                 "Show each applied Stack's roles and members until every Stack is Ready");
  apply_->add_flag("--force-conflicts", a.force_conflicts,
                   "Take over fields another field manager owns (kubectl apply --server-side "
                   "--force-conflicts)");

  auto& s = *status_opts_;
  status_ = app.add_subcommand(
      "status", "Show Stacks' roles and members (pod, node, state, setup) and conditions");
  status_->add_option("STACK", s.stack, "The Stack (default: every Stack of the namespace)");
  add_client_flags(*status_, s.client);
  status_->add_option("-o,--output", s.output, "table, json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  status_->add_flag("-w,--watch", s.watch, "Print again on every change, until interrupted");
  status_->add_option("--timeout", s.timeout,
                      "With --watch: stop after this long (default: never)");

  auto& d = *delete_opts_;
  delete_ = app.add_subcommand("delete",
                               "Delete a Stack (its members, claims kept or not as "
                               "its persistentVolumeClaimRetentionPolicy says)");
  delete_->add_option("STACK", d.stack, "The Stack")->required();
  add_client_flags(*delete_, d.client);
  add_wait_flags(*delete_, d.wait, "Wait until the Stack is gone");

  auto& c = *scale_opts_;
  scale_ = app.add_subcommand("scale", "Set the member count of Stack roles");
  scale_->add_option("STACK", c.stack, "The Stack")->required();
  scale_->add_option("ROLE=N", c.requests, "Role and its new member count, e.g. member=5")
      ->required();
  add_client_flags(*scale_, c.client);
  add_wait_flags(*scale_, c.wait, "Wait until the Stack is Ready again");
}

std::optional<int> StackCommands::run() const {
  if (apply_->parsed()) return apply(*apply_opts_, std::cout, std::cerr);
  if (status_->parsed()) return status(*status_opts_, std::cout, std::cerr);
  if (delete_->parsed()) return delete_stack(*delete_opts_, std::cout, std::cerr);
  if (scale_->parsed()) return scale(*scale_opts_, std::cout, std::cerr);
  return std::nullopt;
}

}  // namespace kstack::cmd
