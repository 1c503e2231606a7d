// `kstack render -f apptype.yaml -f stack.yaml [-f kstack-config.yaml]`: prints, offline, the
// Kubernetes objects a Stack would produce (reconciler::desired_state), as YAML documents.
#pragma once

#include <string>
#include <vector>

namespace kstack::cmd {

struct RenderOptions {
  std::vector<std::string> files;
  std::string output = "yaml";  // yaml | json
};

int render(const RenderOptions& options);

}  // namespace kstack::cmd
