#include "tests/e2e/apps/etcd_members.h"

#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kstack::testenv::e2e::apps {

std::vector<EtcdMember> parse_member_list(const std::string& out) {
  std::vector<EtcdMember> members;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::size_t from = 0;
    for (std::size_t at; (at = line.find(", ", from)) != std::string::npos; from = at + 2) {
      fields.push_back(line.substr(from, at - from));
    }
    fields.push_back(line.substr(from));
    if (fields.size() == 6) members.push_back({fields[0], fields[2], fields[4]});
  }
  return members;
}

bool is_membership(const std::vector<EtcdMember>& list, const std::vector<std::string>& pods) {
  std::set<std::string> names;
  for (const auto& m : list) {
    if (m.name.empty() || m.client_urls.empty()) return false;
    names.insert(m.name);
  }
  return list.size() == pods.size() && names == std::set<std::string>(pods.begin(), pods.end());
}

std::map<std::string, std::string> started_member_ids(const std::vector<EtcdMember>& list) {
  std::map<std::string, std::string> ids;
  for (const auto& m : list) {
    if (!m.name.empty() && !m.client_urls.empty()) ids[m.name] = m.id;
  }
  return ids;
}

std::vector<std::string> etcdctl(std::vector<std::string> args) {
  args.insert(args.begin(), "kstack-etcdctl");
  return args;
}

std::vector<std::string> EtcdAppTest::ready_members() {
  auto ready = wait_ready();
  if (!ready) {
    ADD_FAILURE() << ready.error();
    return {};
  }
  return members(*ready, "member");
}

std::vector<EtcdMember> EtcdAppTest::expect_membership(const std::string& pod,
                                                       const std::vector<std::string>& pods) {
  auto out = run_until(pod, etcdctl({"member", "list"}), [&](const std::string& o) {
    return is_membership(parse_member_list(o), pods);
  });
  if (!out) {
    ADD_FAILURE() << "member list through " << pod << " is not " << fmt::format("{}", pods) << ": "
                  << out.error() << "\n"
                  << describe();
    return {};
  }
  return parse_member_list(*out);
}

}  // namespace kstack::testenv::e2e::apps
