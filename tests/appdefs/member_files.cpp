// Writes what kstack would write into each member of a Stack — /etc/kstack/env and
// /etc/kstack/configmeta.json, with reconciler/configmeta.h's own functions — under a fake root
// per member, so tests/appdefs/run_scripts.sh can run the appdefs setup packages without a
// cluster.
//
//   kstack_appdefs_member_files --app apptype.yaml --stack stack.yaml --out DIR
//                               [--namespace NS] [--members ROLE=N]...
//                               [--previous MEMBERS_FILE] [--last-node-id N]
//
// Creates DIR/<pod>/etc/kstack/{env,configmeta.json} for every member (members per role from
// the Stack, or --members to model a scale) and prints one line per member:
// `<role> <pod> <fqdn> <node id>`. Node ids as kstack gives them: a fresh Stack numbers its
// members from 1 in role order, then ordinal; with --previous (an earlier output of this
// program) the pods listed there keep their ids and new pods get the next ones above
// --last-node-id and every id in the file (kstack's lastNodeID only grows).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "catalog/defaults.h"
#include "catalog/model.h"
#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "reconciler/configmeta.h"
#include "reconciler/desired_state.h"

namespace {

namespace fs = std::filesystem;
using namespace kstack;

int usage(const std::string& why) {
  std::cerr << "kstack_appdefs_member_files: " << why
            << "\nusage: kstack_appdefs_member_files --app A.yaml --stack S.yaml --out DIR "
               "[--namespace NS] [--members ROLE=N]...\n";
  return 2;
}

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first document of `kind` in the file.
std::optional<boost::json::value> find_doc(const std::string& path, std::string_view kind) {
  auto text = slurp(path);
  if (!text) {
    std::cerr << path << ": cannot read\n";
    return std::nullopt;
  }
  auto docs = catalog::parse_manifests(*text);
  if (!docs) {
    std::cerr << path << ": " << docs.error().to_string() << "\n";
    return std::nullopt;
  }
  for (auto& d : *docs) {
    const auto* o = d.value.if_object();
    if (o == nullptr) continue;
    const auto* k = o->if_contains("kind");
    if (k != nullptr && k->is_string() && k->get_string() == kind) return d.value;
  }
  std::cerr << path << ": no " << kind << " document\n";
  return std::nullopt;
}

bool write(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  std::string app_file, stack_file, out_dir, previous_file, ns = "demo";
  std::map<std::string, std::int64_t> members;
  std::int64_t last_node_id = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage("missing value for " + a);
    const std::string v = argv[++i];
    if (a == "--app") {
      app_file = v;
    } else if (a == "--stack") {
      stack_file = v;
    } else if (a == "--out") {
      out_dir = v;
    } else if (a == "--namespace") {
      ns = v;
    } else if (a == "--previous") {
      previous_file = v;
    } else if (a == "--last-node-id") {
      last_node_id = std::stoll(v);
    } else if (a == "--members") {
      const auto eq = v.find('=');
      if (eq == std::string::npos) return usage("--members wants ROLE=N");
      members[v.substr(0, eq)] = std::stoll(v.substr(eq + 1));
    } else {
      return usage("unknown argument " + a);
    }
  }
  if (app_file.empty() || stack_file.empty() || out_dir.empty()) return usage("missing arguments");

  auto app_doc = find_doc(app_file, catalog::kAppTypeKind);
  auto stack_doc = find_doc(stack_file, catalog::kStackKind);
  if (!app_doc || !stack_doc) return 1;
  auto app = catalog::parse_apptype(*app_doc);
  if (!app) {
    std::cerr << app_file << ": " << app.error().to_string() << "\n";
    return 1;
  }
  auto stack = catalog::parse_stack(*stack_doc);
  if (!stack) {
    std::cerr << stack_file << ": " << stack.error().to_string() << "\n";
    return 1;
  }
  stack->metadata.namespace_name = ns;
  if (stack->metadata.uid.empty()) stack->metadata.uid = "00000000-0000-4000-8000-000000000001";
  for (auto& role : stack->spec.roles) {
    if (auto it = members.find(role.id); it != members.end()) role.members = it->second;
  }
  for (const auto& [role, n] : members) {
    if (catalog::find_role(*stack, role) == nullptr) {
      std::cerr << "--members " << role << ": the Stack has no such role\n";
      return 2;
    }
  }

  auto desired = reconciler::desired_state(*stack, *app, nullptr);
  if (!desired) {
    std::cerr << desired.error().to_string() << "\n";
    return 1;
  }
  std::map<std::string, std::int64_t> previous_ids;  // pod -> node id
  if (!previous_file.empty()) {
    std::ifstream prev(previous_file);
    if (!prev) {
      std::cerr << previous_file << ": cannot read\n";
      return 1;
    }
    std::string role, pod, fqdn;
    std::int64_t id = 0;
    while (prev >> role >> pod >> fqdn >> id) {
      previous_ids[pod] = id;
      last_node_id = std::max(last_node_id, id);
    }
  }
  reconciler::ConfigInput in{&*stack, &*app, nullptr, desired->headless_service_name, {}};
  for (const auto& role : desired->roles) {
    for (const auto& m : role.members) {
      auto it = previous_ids.find(m.pod);
      const std::int64_t id = it != previous_ids.end() ? it->second : ++last_node_id;
      in.members.push_back(reconciler::ConfigMember{role.id, m.pod, m.fqdn, id});
    }
  }
  for (const auto& self : in.members) {
    const fs::path root = fs::path(out_dir) / self.pod / "etc" / "kstack";
    if (!write(root / "env", reconciler::env_file(in, self)) ||
        !write(root / "configmeta.json", reconciler::configmeta_text(in, self))) {
      std::cerr << root.string() << ": cannot write\n";
      return 1;
    }
    std::cout << self.role << " " << self.pod << " " << self.fqdn << " " << self.node_id << "\n";
  }
  return 0;
}
