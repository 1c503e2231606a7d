// Issue 6 end to end, membership: a new Stack's members each run `startscript --configure`
// exactly once, after /etc/kstack/configmeta.json and env hold the whole Stack; scaling up sends
// each old member one --addnodes naming the new members, scaling down one --delnodes naming
// the removed ones while their pods still exist. Evidence is the startscript's own log on each
// member's PVC (fixture.h).
#include <algorithm>
#include <iostream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "catalog/model.h"
#include "kube/exec.h"
#include "tests/e2e/stack_setup/fixture.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;
using namespace std::string_literals;
using catalog::resources::kStacks;
using kube::resources::kPods;
using kube::resources::kStatefulSets;

json::value parse(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  EXPECT_FALSE(ec) << "not JSON: " << text;
  return ec ? json::value() : v;
}

std::vector<std::string> strings_at(const json::value& v, std::string_view pointer) {
  std::vector<std::string> out;
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  if (p == nullptr || !p->is_array()) return out;
  for (const auto& s : p->get_array()) out.emplace_back(s.is_string() ? s.get_string() : "?");
  return out;
}

std::vector<std::string> fqdns_of(const std::string& ns, const std::string& stack,
                                  const std::vector<std::string>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(member_fqdn(ns, stack, p));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class Membership : public StackSetupTest {
 protected:
  void SetUp() override {
    StackSetupTest::SetUp();
    if (HasFatalFailure()) return;
    create_logapp("logapp");
  }

  // The configmeta.json copy at `path` in `pod` describes the member and all of `members`.
  void expect_configmeta(const std::string& stack, const json::value& status,
                         const std::string& pod, std::string_view path,
                         const std::vector<std::string>& members) {
    SCOPED_TRACE(fmt::format("{}:{}", pod, path));
    const auto meta = parse(read(pod, path));
    const auto self = status_members(status, "worker").at(pod);
    const std::string fqdn = member_fqdn(ns_, stack, pod);
    EXPECT_EQ(str_at(meta, "/node/fqdn"), fqdn);
    EXPECT_EQ(str_at(meta, "/node/hostname"), fqdn);
    EXPECT_EQ(str_at(meta, "/node/domain"), fmt::format("{}.{}.svc.cluster.local", stack, ns_));
    EXPECT_EQ(str_at(meta, "/node/role_id"), "worker");
    EXPECT_EQ(str_at(meta, "/node/id"), std::to_string(int_at(self, "/nodeID")));
    EXPECT_EQ(str_at(meta, "/node/distro_id"), "e2e-logapp");
    EXPECT_EQ(str_at(meta, "/version"), "3");
    EXPECT_EQ(str_at(meta, "/cluster/name"), stack);
    EXPECT_EQ(str_at(meta, "/cluster/id"), str_at(status, "/metadata/uid"));
    EXPECT_EQ(str_at(meta, "/nodegroups/1/distro_id"), "e2e-logapp");
    EXPECT_EQ(str_at(meta, "/nodegroups/1/catalog_entry_version"), "2.1");
    EXPECT_EQ(str_at(meta, "/nodegroups/1/config_metadata/motto"), "plain");

    const std::string role = "/nodegroups/1/roles/worker";
    const auto fqdns = strings_at(meta, role + "/fqdns");
    EXPECT_EQ(sorted(fqdns), fqdns_of(ns_, stack, members));
    std::vector<std::string> expected_ids;
    const auto all = status_members(status, "worker");
    for (const auto& f : fqdns) {
      const auto member = f.substr(0, f.find('.'));
      expected_ids.push_back(all.count(member) != 0
                                 ? std::to_string(int_at(all.at(member), "/nodeID"))
                                 : "unknown member " + member);
    }
    EXPECT_EQ(strings_at(meta, role + "/node_ids"), expected_ids) << "in the order of fqdns";
    std::vector<std::string> http;
    std::vector<std::string> peer;
    for (const auto& f : fqdns) {
      http.push_back(fmt::format("http://{}:8080", f));
      peer.push_back(fmt::format("{}:7000", f));
    }
    EXPECT_EQ(strings_at(meta, role + "/services/http/endpoints"), http);
    EXPECT_EQ(strings_at(meta, role + "/services/peer/endpoints"), peer);
    boost::system::error_code ec;
    EXPECT_NE(meta.find_pointer("/services/http/1/worker", ec), nullptr);
    EXPECT_NE(meta.find_pointer("/services/peer/1/worker", ec), nullptr);
  }

  void expect_env(const std::string& stack, const json::value& status, const std::string& pod,
                  const std::vector<std::string>& members) {
    SCOPED_TRACE(pod + ":/data/env");
    const std::string env = read(pod, "/data/env");
    const auto self = status_members(status, "worker").at(pod);
    std::vector<std::string> fqdns;
    std::vector<std::string> ids;
    const auto all = status_members(status, "worker");
    for (const auto& m : members) {
      fqdns.push_back(member_fqdn(ns_, stack, m));
      ids.push_back(std::to_string(int_at(all.at(m), "/nodeID")));
    }
    for (const auto& line :
         {fmt::format("export KSTACK_STACK='{}'\n", stack),
          fmt::format("export KSTACK_NAMESPACE='{}'\n", ns_), "export KSTACK_ROLE='worker'\n"s,
          fmt::format("export KSTACK_POD='{}'\n", pod),
          fmt::format("export KSTACK_NODE_ID='{}'\n", int_at(self, "/nodeID")),
          fmt::format("export KSTACK_FQDN='{}'\n", member_fqdn(ns_, stack, pod)),
          fmt::format("export KSTACK_ROLE_WORKER_FQDNS='{}'\n", fmt::join(fqdns, ",")),
          fmt::format("export KSTACK_ROLE_WORKER_NODE_IDS='{}'\n", fmt::join(ids, ",")),
          fmt::format("export KSTACK_ROLE_WORKER_COUNT='{}'\n", members.size()),
          "export KSTACK_SERVICE_HTTP_PORT='8080'\n"s, "export KSTACK_SERVICE_PEER_PORT='7000'\n"s,
          "export KSTACK_CONFIG_MOTTO='plain'\n"s}) {
      EXPECT_NE(env.find(line), std::string::npos) << "missing " << line << "in:\n" << env;
    }
  }
};

TEST_F(Membership, EachMemberOfANewStackConfiguresOnceAfterItsConfigmetaAndEnvHoldTheStack) {
  const auto start = std::chrono::steady_clock::now();
  create(kStacks, logapp_stack(ns_, "logs", "logapp", 3));
  auto stack = wait_quiet("logs");
  ASSERT_TRUE(stack) << stack.error();
  std::cout << "[ setup ] 3 members configured (configmap://) in " << seconds_since(start)
            << " s\n";
  const auto pods = worker_pods("logs", 0, 3);
  const auto members = status_members(*stack, "worker");
  ASSERT_EQ(names_of(members), pods);
  for (const auto& pod : pods) {
    SCOPED_TRACE(pod);
    const auto& m = members.at(pod);
    EXPECT_EQ(str_at(m, "/state"), "ready");
    auto live = client_->get(kPods, ns_, pod);
    ASSERT_TRUE(live) << live.error().to_string();
    const auto cid = kube::exec_detail::container_id(*live, "app");
    EXPECT_FALSE(cid.empty());
    EXPECT_EQ(str_at(m, "/stateDetail/lastConfiguredContainer"), cid);
    EXPECT_EQ(str_at(m, "/stateDetail/configErrorDetail"), "");

    const auto log = setup_log(pod);
    ASSERT_EQ(log.size(), 1u) << "one call only, --configure:\n" << describe_log(log);
    EXPECT_EQ(log[0].args, std::vector<std::string>{"--configure"});
    // The startscript copied both files when --configure ran (it fails if either is missing),
    // so these are what it saw.
    expect_configmeta("logs", *stack, pod, "/data/configmeta.json", pods);
    expect_env("logs", *stack, pod, pods);
    EXPECT_EQ(read(pod, "/data/configmeta.json"), read(pod, "/etc/kstack/configmeta.json"));
  }
  EXPECT_EQ(events("logs", "Configured").size(), 3u);
  EXPECT_EQ(condition(*stack, "Degraded"), "False");
}

TEST_F(Membership, ScalingUpSendsOneAddnodesAndScalingDownOneDelnodesBeforeThePodsGo) {
  create(kStacks, logapp_stack(ns_, "scale", "logapp", 3));
  auto three = wait_quiet("scale");
  ASSERT_TRUE(three) << three.error();
  const auto old_pods = worker_pods("scale", 0, 3);
  const auto new_pods = worker_pods("scale", 3, 5);
  const auto all_pods = worker_pods("scale", 0, 5);

  // ---- 3 -> 5 ----
  auto start = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(scale("scale", 5));
  auto five = wait_quiet("scale");
  ASSERT_TRUE(five) << five.error();
  std::cout << "[ setup ] 3 -> 5: configured and announced in " << seconds_since(start) << " s\n";
  ASSERT_EQ(names_of(status_members(*five, "worker")), all_pods);
  for (const auto& pod : old_pods) {
    SCOPED_TRACE(pod);
    const auto log = setup_log(pod);
    const auto adds = entries_of(log, "--addnodes");
    EXPECT_EQ(entries_of(log, "--configure").size(), 1u) << describe_log(log);
    ASSERT_EQ(adds.size(), 1u) << describe_log(log);
    EXPECT_EQ(adds[0].args.size(), 5u) << describe_log(log);
    EXPECT_EQ(adds[0].role(), "worker");
    EXPECT_EQ(adds[0].fqdns(), fqdns_of(ns_, "scale", new_pods));
    EXPECT_GT(adds[0].time, entries_of(log, "--configure").at(0).time);
    // configmeta was brought up to date before the notification ran.
    expect_configmeta("scale", *five, pod, "/data/configmeta-addnodes.json", all_pods);
  }
  for (const auto& pod : new_pods) {
    SCOPED_TRACE(pod);
    const auto log = setup_log(pod);
    ASSERT_EQ(log.size(), 1u) << "a new member only configures:\n" << describe_log(log);
    EXPECT_EQ(log[0].event(), "--configure");
    expect_configmeta("scale", *five, pod, "/data/configmeta.json", all_pods);
  }

  // ---- 5 -> 3 ----
  // The remaining members' --delnodes are held in flight (the startscript waits on a marker once
  // it has logged). However many passes the reconciler makes meanwhile, the removed pods must
  // stay: replicas are lowered only once every --delnodes has finished.
  for (const auto& pod : old_pods) {
    ASSERT_EQ(exec(pod, {"touch", std::string(kHoldDelNodesMarker)}).exit_code, 0);
  }
  StackStateRecorder states(client_, ns_, "scale");
  start = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(scale("scale", 3));
  std::map<std::string, std::vector<LogEntry>> dels;
  ASSERT_TRUE(wait_until(
      [&] {
        for (const auto& pod : old_pods) {
          if (dels[pod].empty()) dels[pod] = entries_of(setup_log(pod), "--delnodes");
          if (dels[pod].empty()) return false;
        }
        return true;
      },
      std::chrono::seconds(60)))
      << "not every remaining member got --delnodes\n"
      << describe_stack(*client_, ns_, "scale");
  const auto passes = controller_->controller().stats().reconciles;
  ASSERT_TRUE(wait_until([&] { return controller_->controller().stats().reconciles >= passes + 3; },
                         std::chrono::seconds(30)))
      << "the reconciler stopped polling while notifications were in flight";
  const auto held_at = unix_now();
  auto set = client_->get(kStatefulSets, ns_, "scale-worker");
  ASSERT_TRUE(set) << set.error().to_string();
  EXPECT_EQ(int_at(*set, "/spec/replicas"), 5) << "replicas held while --delnodes run";
  for (const auto& pod : new_pods) {
    auto live = client_->get(kPods, ns_, pod);
    ASSERT_TRUE(live) << pod << ": " << live.error().to_string();
    EXPECT_FALSE(deleting(*live)) << pod << " is going before --delnodes finished";
  }
  auto held = client_->get(kStacks, ns_, "scale");
  ASSERT_TRUE(held) << held.error().to_string();
  for (const auto& pod : new_pods) {
    EXPECT_EQ(str_at(status_members(*held, "worker")[pod], "/state"), "delete_pending") << pod;
  }
  for (const auto& pod : old_pods) {
    SCOPED_TRACE(pod);
    ASSERT_EQ(dels[pod].size(), 1u) << describe_log(setup_log(pod));
    EXPECT_EQ(dels[pod][0].role(), "worker");
    EXPECT_EQ(dels[pod][0].fqdns(), fqdns_of(ns_, "scale", new_pods));
    EXPECT_LT(dels[pod][0].time, held_at);
    ASSERT_EQ(exec(pod, {"rm", std::string(kHoldDelNodesMarker)}).exit_code, 0);
  }
  auto back = wait_quiet("scale");
  ASSERT_TRUE(back) << back.error();
  ASSERT_TRUE(states.saw(str_at(*back, "/metadata/resourceVersion"), std::chrono::seconds(30)))
      << "the recorder's watch never delivered the settled version";
  std::cout << "[ setup ] 5 -> 3: --delnodes delivered and pods gone in " << seconds_since(start)
            << " s\n";
  ASSERT_EQ(names_of(status_members(*back, "worker")), old_pods);
  for (const auto& pod : old_pods) {
    SCOPED_TRACE(pod);
    const auto log = setup_log(pod);
    EXPECT_EQ(entries_of(log, "--configure").size(), 1u) << describe_log(log);
    EXPECT_EQ(entries_of(log, "--addnodes").size(), 1u) << describe_log(log);
    EXPECT_EQ(entries_of(log, "--delnodes").size(), 1u) << describe_log(log);
    EXPECT_EQ(log.size(), 3u) << describe_log(log);
    // configmeta already without the leaving members when --delnodes ran.
    expect_configmeta("scale", *back, pod, "/data/configmeta-delnodes.json", old_pods);
  }
  const auto history = states.history();
  for (const auto& pod : new_pods) {
    const auto it = history.find("worker/" + pod);
    ASSERT_NE(it, history.end()) << states.describe();
    const auto& seen = it->second;
    EXPECT_NE(std::find(seen.begin(), seen.end(), "delete_pending"), seen.end())
        << pod << " waited for --delnodes in delete_pending:\n"
        << states.describe();
    EXPECT_EQ(seen.back(), "gone") << states.describe();
  }
  EXPECT_GE(events("scale", "Notified").size(), 6u) << "3 --addnodes and 3 --delnodes";
}

}  // namespace
}  // namespace kstack::testenv::e2e
