// Following Stacks on the cluster for `kstack apply --wait`, `delete --wait`, `scale --wait` and
// `status --watch`: a list, then a watch from its resourceVersion, re-listed when the watch
// ends or its version expires, until the caller has seen enough or a deadline passes.
#pragma once

#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "cmd/stack_view.h"
#include "kube/client.h"

namespace kstack::cmd {

// "<namespace>/<name>" -> the Stack as last seen.
using StackMap = std::map<std::string, boost::json::value>;

enum class WatchEnd { kStopped, kTimeout, kError };

// Calls `on_change(stacks, changed_key)` after the first list (changed_key "") and after each
// change of a Stack of `ns` ("" = every namespace); stops when it returns false. `error` says
// why on kError.
WatchEnd watch_stacks(kube::Client& client, const std::string& ns,
                      std::optional<std::chrono::steady_clock::time_point> deadline,
                      const std::function<bool(const StackMap&, const std::string&)>& on_change,
                      std::string& error);

// The member pods of a Stack (label kstack.io/stack=<name>); empty when they cannot be listed.
PodInfos list_member_pods(kube::Client& client, const std::string& ns, const std::string& name);

// Where the live view goes: a terminal (redrawn in place) or anything else (one line per change).
struct Screen {
  bool tty = false;
  std::size_t width = 0;   // terminal columns (0 unknown)
  std::size_t height = 0;  // terminal rows (0 unknown)
};
// stdout is a terminal and TERM is not "dumb".
Screen detect_screen();

struct StackRef {
  std::string ns, name;
  std::string key() const { return ns + "/" + name; }
};

enum class WaitGoal { kReady, kGone };

// Shows the live view of `stacks` on `out` until each is ready (kReady) or gone (kGone), a
// member fails its setup (exit kExitFailed, with the member and its script's last lines on
// `err`), or `timeout` passes (kExitTimeout, saying what was not done).
int wait_for_stacks(kube::Client& client, const std::vector<StackRef>& stacks, WaitGoal goal,
                    std::chrono::milliseconds timeout, const Screen& screen, std::ostream& out,
                    std::ostream& err);

}  // namespace kstack::cmd
