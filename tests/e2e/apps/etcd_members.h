// What the etcd app's e2e tests (tests/e2e/apps/etcd*_test.cpp) read from `etcdctl member
// list` and how they run etcdctl in a member (the image's kstack-etcdctl wrapper: etcd listens
// on the pod IP, not 127.0.0.1).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/e2e/apps/app_fixture.h"

namespace kstack::testenv::e2e::apps {

// One line of `etcdctl member list`: id, status, name, peer URLs, client URLs, is learner.
struct EtcdMember {
  std::string id;
  std::string name;         // empty until the member has started (published itself)
  std::string client_urls;  // likewise
};

std::vector<EtcdMember> parse_member_list(const std::string& out);
// Exactly the members `pods`, every one started.
bool is_membership(const std::vector<EtcdMember>& list, const std::vector<std::string>& pods);
// Started members: name -> id.
std::map<std::string, std::string> started_member_ids(const std::vector<EtcdMember>& list);
// The argv of `etcdctl ARGS` against the member it runs in.
std::vector<std::string> etcdctl(std::vector<std::string> args);

// The fixture of the etcd app tests: the role is `member`.
class EtcdAppTest : public AppTest {
 protected:
  // The Stack, Ready; the members of the role by ordinal (a test failure and none if not).
  static std::vector<std::string> ready_members();
  // Waits until `pod` lists exactly `pods` as started members; returns the list (a test
  // failure and none if it does not within the fixture's timeout).
  static std::vector<EtcdMember> expect_membership(const std::string& pod,
                                                   const std::vector<std::string>& pods);
};

}  // namespace kstack::testenv::e2e::apps
