// kstack: the operator binary. Subcommands are added as the product grows (operator,
// validate, render, import); exceptions are handled here, at the process edge.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cmd/cluster_info.h"
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
  } catch (const std::exception& e) {
    fmt::print(stderr, "kstack: {}\n", e.what());
    return 1;
  }
  return 1;
}
