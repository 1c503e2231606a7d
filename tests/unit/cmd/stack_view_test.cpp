// cmd/stack_view.h: the live view, the wait verdict, the status table and the two screens,
// from Stack status JSON in the shape the reconciler writes (docs/spec.md §2.2).
#include "cmd/stack_view.h"

#include <algorithm>

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace kstack::cmd {
namespace {

namespace json = boost::json;

json::value member(const std::string& pod, const std::string& state, json::object detail = {}) {
  return json::object{{"pod", pod}, {"state", state}, {"stateDetail", std::move(detail)}};
}

json::value stack(json::array members, json::array conditions = {}, int generation = 2,
                  int observed = 2, const std::string& state = "creating") {
  return json::object{
      {"metadata",
       {{"name", "etcd"},
        {"namespace", "demo"},
        {"generation", generation},
        {"creationTimestamp", "2026-11-27T10:00:00Z"}}},
      {"spec", {{"app", "etcd"}}},
      {"status",
       {{"observedGeneration", observed},
        {"state", state},
        {"memberSummary", "1/3"},
        {"updateSummary", "3/3"},
        {"conditions", std::move(conditions)},
        {"roles", json::array{json::object{{"id", "member"}, {"members", std::move(members)}}}}}}};
}

json::value condition(const std::string& type, const std::string& status, const std::string& reason,
                      const std::string& message) {
  return json::object{{"type", type},
                      {"status", status},
                      {"reason", reason},
                      {"message", message},
                      {"lastTransitionTime", "2026-11-27T10:00:30Z"}};
}

const json::object kFailedSetup{
    {"configuringContainer", "containerd://c2"},
    {"configErrorDetail", "startscript --configure exited 1"},
    {"startScriptStdoutMessage", "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n"},
    {"startScriptStderrMessage", "boom: cannot join\n"}};

json::value three_members() {
  return stack(
      json::array{member("etcd-member-0", "ready",
                         {{"configuringContainer", "containerd://a"},
                          {"lastConfiguredContainer", "containerd://a"}}),
                  member("etcd-member-1", "creating", {{"configuringContainer", "containerd://b"}}),
                  member("etcd-member-2", "create_pending")},
      json::array{condition("Ready", "False", "MembersNotReady", "1 of 3 members ready")});
}

const PodInfos kPods{{"etcd-member-0", {"node-a", "2026-11-27T10:00:05Z", "Running"}},
                     {"etcd-member-1", {"node-b", "2026-11-27T10:00:06Z", "Running"}}};

std::vector<std::string> texts(const std::vector<ViewRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.text);
  return out;
}

bool has_line(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

TEST(ProgressRows, ShowEachMembersStateNodeAndSetupAndTheConditions) {
  auto rows = progress_rows(three_members(), kPods);
  EXPECT_EQ(texts(rows), (std::vector<std::string>{
                             "Stack demo/etcd: creating, 1/3 members ready",
                             "  member  etcd-member-0  ready           node-a  setup done",
                             "  member  etcd-member-1  creating        node-b  setup running",
                             "  member  etcd-member-2  create_pending  -",
                             "  Ready=False MembersNotReady: 1 of 3 members ready",
                         }));
  EXPECT_EQ(rows[2].line,
            "etcd: member etcd-member-1 (role member) creating, node node-b, "
            "setup running");
  EXPECT_EQ(rows[3].line, "etcd: member etcd-member-2 (role member) create_pending, node -");
}

TEST(ProgressRows, AConfigErrorShowsTheErrorAndTheScriptsLastLines) {
  auto s = stack(json::array{member("etcd-member-0", "config_error", kFailedSetup)});
  auto rows = progress_rows(s, {});
  auto lines = texts(rows);
  EXPECT_TRUE(has_line(lines, "  member  etcd-member-0  config_error  -  setup failed"));
  EXPECT_TRUE(has_line(lines, "      startscript --configure exited 1"));
  EXPECT_TRUE(has_line(lines, "      stdout: line 7"));
  EXPECT_TRUE(has_line(lines, "      stdout: line 3"));
  EXPECT_FALSE(has_line(lines, "      stdout: line 2")) << "only the last 5 lines";
  EXPECT_TRUE(has_line(lines, "      stderr: boom: cannot join"));
}

TEST(Judge, ReadyOnlyWithReadyTrueForTheCurrentGeneration) {
  auto ready = condition("Ready", "True", "Ready", "3 of 3");
  EXPECT_EQ(judge(stack({}, {ready}, 2, 2)).outcome, Verdict::Outcome::kReady);
  EXPECT_EQ(judge(stack({}, {ready}, 3, 2)).outcome, Verdict::Outcome::kPending)
      << "an older generation's Ready says nothing of the new spec";
  EXPECT_EQ(judge(stack({}, {condition("Ready", "False", "X", "")}, 2, 2)).outcome,
            Verdict::Outcome::kPending);
  EXPECT_EQ(judge(three_members()).outcome, Verdict::Outcome::kPending);
  auto pending = judge(three_members());
  EXPECT_TRUE(has_line(pending.detail, "member etcd-member-2 create_pending"));
}

TEST(Judge, AConfigErrorFailsNamingTheMemberAndTheScriptsTail) {
  auto v = judge(stack(json::array{member("etcd-member-0", "ready"),
                                   member("etcd-member-1", "config_error", kFailedSetup)}));
  EXPECT_EQ(v.outcome, Verdict::Outcome::kFailed);
  EXPECT_EQ(v.summary, "stack etcd: member etcd-member-1 (role member) failed its setup");
  EXPECT_TRUE(has_line(v.detail, "member etcd-member-1: startscript --configure exited 1"));
  EXPECT_TRUE(has_line(v.detail, "member etcd-member-1: stdout: line 7"));
  EXPECT_TRUE(has_line(v.detail, "member etcd-member-1: stderr: boom: cannot join"));
}

TEST(Judge, StateErrorOfTheCurrentGenerationFails) {
  auto v = judge(
      stack({}, {condition("Ready", "False", "AppTypeNotFound", "no AppType x")}, 2, 2, "error"));
  EXPECT_EQ(v.outcome, Verdict::Outcome::kFailed);
  EXPECT_EQ(v.summary, "stack etcd is in state error: no AppType x");
}

TEST(StatusTable, RolesMembersPodsNodesSetupNotificationsAgesAndConditions) {
  auto s = three_members();
  auto& members =
      s.as_object()["status"].as_object()["roles"].as_array()[0].as_object()["members"].as_array();
  members[0].as_object()["stateDetail"].as_object()["pendingNotifyCmds"] =
      json::array{json::object{{"arguments", {"--addnodes", "--role", "member", "--fqdns", "x"}}}};
  members[1].as_object()["stateDetail"].as_object()["lastNotifyError"] = "--delnodes failed";
  const auto now = std::chrono::system_clock::from_time_t(1795773700);  // 2026-11-27T10:01:40Z
  auto lines = status_table(s, kPods, now);
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0], "Stack demo/etcd (app etcd): creating, 1/3 ready, 3/3 updated, age 100s");
  EXPECT_EQ(lines[1],
            "  ROLE    POD            NODE    STATE           SETUP    NOTIFICATION          "
            "     AGE");
  EXPECT_EQ(lines[2],
            "  member  etcd-member-0  node-a  ready           done     pending --addnodes"
            "         95s");
  EXPECT_EQ(lines[3],
            "  member  etcd-member-1  node-b  creating        running  failed: --delnodes "
            "failed  94s");
  EXPECT_EQ(lines[4],
            "  member  etcd-member-2  -       create_pending  -        -                 "
            "         -");
  EXPECT_EQ(lines[5], "Conditions:");
  EXPECT_EQ(lines[6], "  Ready=False MembersNotReady: 1 of 3 members ready (70s ago)");
}

TEST(StatusTable, AStoppedStackAndSetupFailuresAreSaid) {
  auto s = stack(json::array{member("etcd-member-0", "config_error", kFailedSetup)});
  s.as_object()["spec"].as_object()["stopped"] = true;
  auto lines = status_table(s, {}, std::chrono::system_clock::from_time_t(1795773700));
  EXPECT_NE(lines[0].find(", stopped by spec"), std::string::npos) << lines[0];
  EXPECT_TRUE(has_line(lines, "Setup failures:"));
  EXPECT_TRUE(has_line(lines, "  etcd-member-0: startscript --configure exited 1"));
  EXPECT_TRUE(has_line(lines, "  etcd-member-0: stderr: boom: cannot join"));
}

TEST(StatusDocument, IsTheStatusWithEachMembersPod) {
  auto doc = status_document(three_members(), kPods);
  EXPECT_EQ(doc.at("name"), "etcd");
  EXPECT_EQ(doc.at("namespace"), "demo");
  EXPECT_EQ(doc.at("status").at("state"), "creating");
  EXPECT_EQ(doc.at("pods").at("etcd-member-1").at("node"), "node-b");
  EXPECT_EQ(doc.at("pods").as_object().size(), 2u);
}

TEST(FormatAge, GrowsCoarser) {
  const auto t0 = std::chrono::system_clock::from_time_t(1795773600);  // 2026-11-27T10:00:00Z
  using std::chrono::seconds;
  EXPECT_EQ(format_age("2026-11-27T10:00:00Z", t0 + seconds(42)), "42s");
  EXPECT_EQ(format_age("2026-11-27T10:00:00Z", t0 + seconds(192)), "3m12s");
  EXPECT_EQ(format_age("2026-11-27T10:00:00Z", t0 + seconds(7500)), "125m");
  EXPECT_EQ(format_age("2026-11-27T10:00:00Z", t0 + seconds(4 * 3600 + 300)), "4h5m");
  EXPECT_EQ(format_age("2026-11-27T10:00:00Z", t0 + seconds(3 * 86400 + 7200)), "3d2h");
  EXPECT_EQ(format_age("not a time", t0), "-");
}

// The terminal form: the first paint prints the block, later paints go back up and rewrite
// only the changed lines.
TEST(TerminalPainter, RewritesOnlyChangedLinesInPlace) {
  TerminalPainter painter;
  EXPECT_EQ(painter.paint({"header", "a creating", "b creating"}),
            "\x1b[2Kheader\n\x1b[2Ka creating\n\x1b[2Kb creating\n");
  EXPECT_EQ(painter.paint({"header", "a ready", "b creating"}), "\x1b[3A\r\n\x1b[2Ka ready\n\n");
  EXPECT_EQ(painter.paint({"header", "a ready", "b creating"}), "\x1b[3A\r\n\n\n")
      << "nothing changed: nothing rewritten";
  EXPECT_EQ(painter.paint({"header", "a ready", "b ready", "c new"}),
            "\x1b[3A\r\n\n\x1b[2Kb ready\n\x1b[2Kc new\n");
  EXPECT_EQ(painter.paint({"header"}), "\x1b[4A\r\n\x1b[2K\n\x1b[2K\n\x1b[2K\n")
      << "a shorter block blanks the rest and keeps its height";
}

TEST(TerminalPainter, CutsABlockTallerThanTheTerminal) {
  TerminalPainter painter(0, 4);
  EXPECT_EQ(painter.paint({"a", "b", "c", "d", "e"}),
            "\x1b[2Ka\n\x1b[2Kb\n\x1b[2K  ... 3 more lines (a taller terminal shows them)\n");
  EXPECT_EQ(painter.paint({"a", "b", "c"}), "\x1b[3A\r\n\n\x1b[2Kc\n");
}

TEST(TerminalPainter, CutsLinesToTheWidth) {
  TerminalPainter painter(5);
  EXPECT_EQ(painter.paint({"0123456789"}), "\x1b[2K01234\n");
}

// The line form: a row again only when its own text changed; a member that leaves is said.
TEST(LinePrinter, PrintsARowOnlyWhenItChanged) {
  LinePrinter printer;
  auto first = printer.update(progress_rows(three_members(), kPods));
  EXPECT_EQ(first.size(), 5u);
  EXPECT_TRUE(printer.update(progress_rows(three_members(), kPods)).empty());

  auto later = three_members();
  auto& members = later.as_object()["status"]
                      .as_object()["roles"]
                      .as_array()[0]
                      .as_object()["members"]
                      .as_array();
  members[1].as_object()["state"] = "ready";
  members.pop_back();
  auto changed = printer.update(progress_rows(later, kPods));
  EXPECT_EQ(changed, (std::vector<std::string>{
                         "etcd: member etcd-member-1 (role member) ready, node node-b, setup "
                         "running",
                         "etcd: member etcd-member-2 (role member) create_pending, node - (gone)",
                     }));
}

TEST(PodInfos, FromAPodList) {
  auto list = json::parse(R"({"items":[{"metadata":{"name":"p","creationTimestamp":"t"},
    "spec":{"nodeName":"n"},"status":{"phase":"Running"}}]})");
  auto infos = pod_infos(list);
  ASSERT_EQ(infos.count("p"), 1u);
  EXPECT_EQ(infos["p"].node, "n");
  EXPECT_EQ(infos["p"].phase, "Running");
}

}  // namespace
}  // namespace kstack::cmd
