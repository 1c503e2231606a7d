#include "cmd/stack_watch.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <ostream>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "catalog/model.h"
#include "cmd/stack_commands.h"

namespace kstack::cmd {
namespace json = boost::json;

namespace {

// Transport trouble is retried this many times in a row (a second apart) before giving up.
constexpr int kMaxWatchRetries = 10;
// A watch asks the server to end it after this long, then resumes from its last version.
constexpr int kWatchSeconds = 290;

std::string str_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

std::string key_of(const json::value& stack) {
  return str_at(stack, "/metadata/namespace") + "/" + str_at(stack, "/metadata/name");
}

// Cancels `token` when `deadline` passes, until destroyed.
class DeadlineTimer {
 public:
  DeadlineTimer(std::optional<std::chrono::steady_clock::time_point> deadline,
                kube::CancelToken token) {
    if (!deadline) return;
    thread_ = std::thread([this, d = *deadline, token] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_until(lock, d, [this] { return done_; })) token.cancel();
    });
  }
  ~DeadlineTimer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

WatchEnd watch_stacks(kube::Client& client, const std::string& ns,
                      std::optional<std::chrono::steady_clock::time_point> deadline,
                      const std::function<bool(const StackMap&, const std::string&)>& on_change,
                      std::string& error) {
  using std::chrono::steady_clock;
  kube::CancelToken cancel;
  DeadlineTimer timer(deadline, cancel);
  StackMap stacks;
  std::string version;
  bool need_list = true;
  int failures = 0;
  auto retry = [&](const kube::Error& e) {
    if (!e.retryable() || ++failures > kMaxWatchRetries) {
      error = e.to_string();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    need_list = true;
    return true;
  };
  for (;;) {
    if (cancel.cancelled() || (deadline && steady_clock::now() >= *deadline)) {
      return WatchEnd::kTimeout;
    }
    if (need_list) {
      auto list = client.list(catalog::resources::kStacks, ns);
      if (!list) {
        if (retry(list.error())) continue;
        return WatchEnd::kError;
      }
      stacks.clear();
      if (const auto* items = list->as_object().if_contains("items");
          items != nullptr && items->is_array()) {
        for (const auto& item : items->get_array()) stacks[key_of(item)] = item;
      }
      version = str_at(*list, "/metadata/resourceVersion");
      need_list = false;
      if (!on_change(stacks, "")) return WatchEnd::kStopped;
    }
    kube::WatchOptions options;
    options.resource_version = version;
    options.timeout_seconds = kWatchSeconds;
    bool stopped = false;
    auto watched = client.watch(
        catalog::resources::kStacks, ns, options,
        [&](kube::WatchEvent&& event) {
          const auto rv = str_at(event.object, "/metadata/resourceVersion");
          if (!rv.empty()) version = rv;
          if (event.type == kube::WatchEvent::Type::kBookmark) return true;
          const auto key = key_of(event.object);
          if (event.type == kube::WatchEvent::Type::kDeleted) {
            stacks.erase(key);
          } else {
            stacks[key] = std::move(event.object);
          }
          failures = 0;
          if (!on_change(stacks, key)) {
            stopped = true;
            return false;
          }
          return true;
        },
        cancel);
    if (stopped) return WatchEnd::kStopped;
    if (!watched) {
      if (watched.error().is(kube::ErrorKind::kCancelled)) return WatchEnd::kTimeout;
      if (watched.error().is(kube::ErrorKind::kGone)) {
        need_list = true;  // the version expired: start again from a fresh list
        continue;
      }
      if (retry(watched.error())) continue;
      return WatchEnd::kError;
    }
    // The server ended the watch: resume from the last version seen.
  }
}

PodInfos list_member_pods(kube::Client& client, const std::string& ns, const std::string& name) {
  kube::ListOptions options;
  options.label_selector = "kstack.io/stack=" + name;
  auto pods = client.list(kube::resources::kPods, ns, options);
  return pods ? pod_infos(*pods) : PodInfos{};
}

Screen detect_screen() {
  Screen s;
  const char* term = std::getenv("TERM");
  s.tty = isatty(STDOUT_FILENO) != 0 && term != nullptr && std::string_view(term) != "dumb";
  if (s.tty) {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
      s.width = ws.ws_col;
      s.height = ws.ws_row;
    }
  }
  return s;
}

int wait_for_stacks(kube::Client& client, const std::vector<StackRef>& stacks, WaitGoal goal,
                    std::chrono::milliseconds timeout, const Screen& screen, std::ostream& out,
                    std::ostream& err) {
  if (stacks.empty()) return kExitOk;
  std::string ns = stacks.front().ns;
  for (const auto& s : stacks) {
    if (s.ns != ns) ns.clear();  // Stacks of several namespaces: watch them all
  }
  std::map<std::string, PodInfos> pods;
  std::map<std::string, Verdict> verdicts;
  TerminalPainter painter(screen.width, screen.height);
  LinePrinter printer;
  bool failed = false, done = false;

  auto on_change = [&](const StackMap& all, const std::string& changed) {
    std::vector<ViewRow> rows;
    done = true;
    for (const auto& s : stacks) {
      auto& verdict = verdicts[s.key()];
      auto it = all.find(s.key());
      if (it == all.end()) {
        const bool gone = goal == WaitGoal::kGone;
        verdict.outcome = gone ? Verdict::Outcome::kGone : Verdict::Outcome::kPending;
        verdict.summary = fmt::format("stack {} {}", s.name, gone ? "deleted" : "not found");
        verdict.detail.clear();
        rows.push_back({"stack/" + s.key(),
                        fmt::format("Stack {}: {}", s.key(), gone ? "deleted" : "not found"),
                        fmt::format("{}: {}", s.name, gone ? "deleted" : "not found")});
        done = done && gone;
        continue;
      }
      if (changed.empty() || changed == s.key())
        pods[s.key()] = list_member_pods(client, s.ns, s.name);
      auto stack_rows = progress_rows(it->second, pods[s.key()]);
      rows.insert(rows.end(), stack_rows.begin(), stack_rows.end());
      if (goal == WaitGoal::kGone) {
        verdict.outcome = Verdict::Outcome::kPending;
        verdict.summary = fmt::format(
            "stack {} still exists{}", s.name,
            str_at(it->second, "/metadata/deletionTimestamp").empty() ? "" : " (being deleted)");
        done = false;
        continue;
      }
      verdict = judge(it->second);
      failed = failed || verdict.outcome == Verdict::Outcome::kFailed;
      done = done && verdict.outcome == Verdict::Outcome::kReady;
    }
    if (screen.tty) {
      std::vector<std::string> texts;
      for (const auto& r : rows) texts.push_back(r.text);
      out << painter.paint(texts);
    } else {
      for (const auto& line : printer.update(rows)) out << line << '\n';
    }
    out.flush();
    return !(failed || done);
  };

  std::string error;
  const auto end =
      watch_stacks(client, ns, std::chrono::steady_clock::now() + timeout, on_change, error);
  if (end == WatchEnd::kError) {
    err << "error: watching Stacks: " << error << '\n';
    return kExitFailed;
  }
  if (failed) {
    for (const auto& [key, v] : verdicts) {
      if (v.outcome != Verdict::Outcome::kFailed) continue;
      err << "error: " << v.summary << '\n';
      for (const auto& d : v.detail) err << "  " << d << '\n';
    }
    return kExitFailed;
  }
  if (end == WatchEnd::kTimeout && !done) {
    err << fmt::format("error: timed out after {}s waiting for ", timeout.count() / 1000)
        << (goal == WaitGoal::kGone ? "deletion" : "readiness") << '\n';
    for (const auto& [key, v] : verdicts) {
      if (v.outcome == Verdict::Outcome::kReady || v.outcome == Verdict::Outcome::kGone) continue;
      err << "  " << v.summary << '\n';
      for (const auto& d : v.detail) err << "    " << d << '\n';
    }
    return kExitTimeout;
  }
  for (const auto& [key, v] : verdicts) out << v.summary << '\n';
  return kExitOk;
}

}  // namespace kstack::cmd
