// What `kstack apply --wait`, `kstack status` and their --watch show of a Stack, as pure
// functions of the Stack object (its status) and its member pods: rows of text, the verdict of a
// wait, and the two ways of putting changing rows on a screen (redrawn in place on a terminal,
// one line per change elsewhere). No I/O here, so all of it is unit-tested (tests/unit/cmd).
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

namespace kstack::cmd {

// What the views take from a member's Pod.
struct PodInfo {
  std::string node;     // spec.nodeName ("" while unscheduled)
  std::string created;  // metadata.creationTimestamp (RFC 3339)
  std::string phase;    // status.phase
};
using PodInfos = std::map<std::string, PodInfo>;  // by pod name

// PodInfo of each Pod of a (List's) items array.
PodInfos pod_infos(const boost::json::value& pod_list);

// How many last lines of a setup script's output the views show.
inline constexpr std::size_t kScriptTailLines = 5;

// One row of the live view. `key` names what the row is about (the Stack, a member, a
// condition) so that the line mode prints a row again only when its own text changed.
struct ViewRow {
  std::string key;
  std::string text;  // the terminal form: indented, columns aligned within the block
  std::string line;  // the line form: self-contained ("etcd: member etcd-member-0 ready ...")
};

// The live view of one Stack: a header, one row per member (state, pod's node, setup), the
// setup failure of each config_error member with its script's last lines, and the conditions.
std::vector<ViewRow> progress_rows(const boost::json::value& stack, const PodInfos& pods);

// The outcome of waiting for an applied Stack.
struct Verdict {
  enum class Outcome { kPending, kReady, kFailed, kGone };
  Outcome outcome = Outcome::kPending;
  std::string summary;              // one line: why not ready yet, or what failed
  std::vector<std::string> detail;  // failed: each config_error member and its script's tail
};
// Ready: status.observedGeneration == metadata.generation and condition Ready=True. Failed: a
// member in config_error (kstack does not run a failed setup again until the pod is replaced,
// docs/spec.md §5, so waiting longer cannot help), or state `error`.
Verdict judge(const boost::json::value& stack);

// `kstack status`: the Stack's header, a table of roles and members (pod, node, state, setup,
// last notification, age) and its conditions. `now` for the ages.
std::vector<std::string> status_table(const boost::json::value& stack, const PodInfos& pods,
                                      std::chrono::system_clock::time_point now);

// The machine-readable form of `kstack status -o json|yaml`: {name, namespace, app,
// generation, status: <the Stack's status>, pods: {<pod>: {node, phase, created}}}.
boost::json::value status_document(const boost::json::value& stack, const PodInfos& pods);

// "3m12s", "2h5m", "4d3h": kubectl's age (coarser as it grows); "-" for an unreadable time.
std::string format_age(const std::string& rfc3339, std::chrono::system_clock::time_point now);

// Repaints a block of lines in place on an ANSI terminal: the first paint prints the lines,
// later ones move the cursor up to the block's first line and rewrite only the lines that
// changed (erase line + text); unchanged lines are skipped with a newline, so nothing
// flickers. The block never shrinks on screen (a shorter block leaves blank lines). Lines are
// cut to `width` columns (a wrapped line would break the cursor arithmetic), and a block taller
// than the terminal to `height` - 1 lines, the last saying how many were left out (the cursor
// cannot go up past the top of the screen).
class TerminalPainter {
 public:
  // 0: no cut.
  explicit TerminalPainter(std::size_t width = 0, std::size_t height = 0)
      : width_(width), height_(height) {}
  std::string paint(const std::vector<std::string>& lines);

 private:
  std::size_t width_, height_;
  std::vector<std::string> shown_;
  bool painted_ = false;
};

// The non-terminal form: each row's `line` once, and again whenever that row's text changes;
// a row that disappears is printed once as "<its last line> (gone)".
class LinePrinter {
 public:
  std::vector<std::string> update(const std::vector<ViewRow>& rows);

 private:
  std::map<std::string, std::string> last_;
};

}  // namespace kstack::cmd
