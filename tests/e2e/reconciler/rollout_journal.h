// What the rollout kill test (rollout_kill_test.cpp) observes, in one ordered record: every
// change of a Stack's pods, from a watch (uid, readiness, deletion, template revision), and
// every call of the test's startscript, which POSTs one line about itself to a listener in the
// test process (the simulated containers share the test binary's network). The test chooses
// its kill moments from these entries and checks the rollouts against them afterwards.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "tests/testenv/loopback_server.h"

namespace kstack::testenv::e2e {

struct JournalEntry {
  enum class Kind {
    kPod,     // a pod was added or changed: `pod`, `uid`, `ready`, `deleting`, `revision`
    kGone,    // the pod with `uid` was deleted
    kScript,  // a startscript call on `pod`: `script` = {package version, phase, its argv...}
  };
  Kind kind = Kind::kPod;
  double at = 0;  // seconds since the journal was made
  std::string pod;
  std::string uid;
  bool ready = false;
  bool deleting = false;
  std::string revision;  // label controller-revision-hash
  std::vector<std::string> script;

  // The value after `flag` in a startscript's argv ("" when absent).
  std::string arg(std::string_view flag) const;
  std::string describe() const;
};

// Entries in arrival order; waits on new ones with a deadline.
class Journal {
 public:
  Journal();
  void add(JournalEntry entry);
  std::size_t size() const;
  std::vector<JournalEntry> entries(std::size_t from = 0) const;
  // The index of the first entry at or after `from` for which `match` holds, waiting at most
  // `timeout` for it; nullopt on timeout.
  std::optional<std::size_t> wait(std::size_t from,
                                  const std::function<bool(const JournalEntry&)>& match,
                                  std::chrono::milliseconds timeout) const;
  double now() const;

 private:
  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::vector<JournalEntry> entries_;
};

// Watches the pods of `selector` in `ns` from construction on (an initial list first) and adds
// a kPod entry for each change that matters (uid, readiness, deletion, revision) and a kGone
// entry for each deletion. After an expired watch it lists again and records the differences.
class PodWatch {
 public:
  PodWatch(std::shared_ptr<kube::Client> client, std::string ns, std::string selector,
           Journal& journal);
  ~PodWatch();
  PodWatch(const PodWatch&) = delete;
  PodWatch& operator=(const PodWatch&) = delete;

 private:
  std::string relist();
  void observe(const boost::json::value& pod, bool gone);
  void run(std::string resource_version);

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::string selector_;
  Journal& journal_;
  std::map<std::string, JournalEntry> last_;  // by pod name; only the watch thread after start
  kube::CancelToken cancel_;
  std::thread thread_;
};

// Plain HTTP on 127.0.0.1: every POST /notify body is one startscript call, tab-separated
// fields "<pod>\t<version>\t<phase>\t<argv...>", added as a kScript entry.
class ScriptListener {
 public:
  explicit ScriptListener(Journal& journal);
  std::uint16_t port() const { return server_.port(); }

 private:
  void serve(int fd);  // one report: answered, then added to the journal

  Journal& journal_;
  LoopbackServer server_;  // last: its threads stop before journal_ may go
};

}  // namespace kstack::testenv::e2e
