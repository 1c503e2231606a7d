// The rollout kill test's record of pods and startscript calls (see rollout_journal.h).
#include "tests/e2e/reconciler/rollout_journal.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <system_error>

#include <arpa/inet.h>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;

std::vector<std::string> split_tabs(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto at = text.find('\t', start);
    out.emplace_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

bool pod_ready(const json::value& pod) {
  boost::system::error_code ec;
  const auto* conditions = pod.find_pointer("/status/conditions", ec);
  if (conditions == nullptr || !conditions->is_array()) return false;
  return std::any_of(conditions->get_array().begin(), conditions->get_array().end(),
                     [](const json::value& c) {
                       return str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True";
                     });
}

// Reads one HTTP/1.1 request (headers, then Content-Length bytes of body) from `fd`; the body.
std::string read_body(int fd) {
  std::string request;
  char buf[4096];
  std::size_t body_at = std::string::npos;
  std::size_t length = 0;
  for (;;) {
    if (body_at == std::string::npos) {
      if (auto end = request.find("\r\n\r\n"); end != std::string::npos) {
        body_at = end + 4;
        std::string headers = request.substr(0, end);
        std::transform(headers.begin(), headers.end(), headers.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (auto h = headers.find("content-length:"); h != std::string::npos) {
          length = std::strtoul(headers.c_str() + h + 15, nullptr, 10);
        }
      }
    }
    if (body_at != std::string::npos && request.size() >= body_at + length) break;
    if (request.size() > (1 << 20)) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    request.append(buf, static_cast<std::size_t>(n));
  }
  if (body_at == std::string::npos || body_at > request.size()) return {};
  return request.substr(body_at, length);
}

}  // namespace

std::string JournalEntry::arg(std::string_view flag) const {
  for (std::size_t i = 0; i + 1 < script.size(); ++i) {
    if (script[i] == flag) return script[i + 1];
  }
  return {};
}

std::string JournalEntry::describe() const {
  switch (kind) {
    case Kind::kPod:
      return fmt::format("{:8.3f} pod {} uid {} {}{}revision {}", at, pod, uid.substr(0, 8),
                         ready ? "ready " : "unready ", deleting ? "deleting " : "", revision);
    case Kind::kGone:
      return fmt::format("{:8.3f} pod {} uid {} gone", at, pod, uid.substr(0, 8));
    case Kind::kScript:
      return fmt::format("{:8.3f} script {} {}", at, pod, fmt::join(script, " "));
  }
  return {};
}

Journal::Journal() : start_(std::chrono::steady_clock::now()) {}

double Journal::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Journal::add(JournalEntry entry) {
  {
    std::lock_guard lock(mu_);
    entry.at = now();
    entries_.push_back(std::move(entry));
  }
  changed_.notify_all();
}

std::size_t Journal::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::vector<JournalEntry> Journal::entries(std::size_t from) const {
  std::lock_guard lock(mu_);
  if (from >= entries_.size()) return {};
  return {entries_.begin() + static_cast<std::ptrdiff_t>(from), entries_.end()};
}

std::optional<std::size_t> Journal::wait(std::size_t from,
                                         const std::function<bool(const JournalEntry&)>& match,
                                         std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  std::size_t next = from;
  for (;;) {
    for (; next < entries_.size(); ++next) {
      if (match(entries_[next])) return next;
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && next == entries_.size()) {
      return std::nullopt;
    }
  }
}

PodWatch::PodWatch(std::shared_ptr<kube::Client> client, std::string ns, std::string selector,
                   Journal& journal)
    : client_(std::move(client)),
      ns_(std::move(ns)),
      selector_(std::move(selector)),
      journal_(journal) {
  thread_ = std::thread([this, rv = relist()] { run(rv); });
}

PodWatch::~PodWatch() {
  cancel_.cancel();
  if (thread_.joinable()) thread_.join();
}

std::string PodWatch::relist() {
  kube::ListOptions options;
  options.label_selector = selector_;
  auto list = client_->list(kube::resources::kPods, ns_, options);
  if (!list) {
    ADD_FAILURE() << "pod watch: list: " << list.error().to_string();
    return {};
  }
  std::set<std::string> listed;
  for (const auto& pod : list->at("items").as_array()) {
    listed.insert(str_at(pod, "/metadata/name"));
    observe(pod, false);
  }
  std::vector<json::value> vanished;
  for (const auto& [name, last] : last_) {
    if (listed.count(name) == 0) {
      vanished.push_back(json::value{{"metadata", {{"name", name}, {"uid", last.uid}}}});
    }
  }
  for (const auto& pod : vanished) observe(pod, true);
  return str_at(*list, "/metadata/resourceVersion");
}

void PodWatch::observe(const json::value& pod, bool gone) {
  JournalEntry e;
  e.pod = str_at(pod, "/metadata/name");
  e.uid = str_at(pod, "/metadata/uid");
  if (gone) {
    auto it = last_.find(e.pod);
    if (it == last_.end() || it->second.uid != e.uid) return;  // an older pod's late news
    last_.erase(it);
    e.kind = JournalEntry::Kind::kGone;
    journal_.add(std::move(e));
    return;
  }
  e.ready = pod_ready(pod);
  e.deleting = !str_at(pod, "/metadata/deletionTimestamp").empty();
  e.revision = str_at(pod, "/metadata/labels/controller-revision-hash");
  auto it = last_.find(e.pod);
  if (it != last_.end() && it->second.uid == e.uid && it->second.ready == e.ready &&
      it->second.deleting == e.deleting && it->second.revision == e.revision) {
    return;  // a change that does not matter here (status timestamps, ...)
  }
  if (it != last_.end() && it->second.uid != e.uid) {
    // The previous pod of this name went without a DELETED event reaching us (not expected
    // from a watch, but then the record stays consistent).
    JournalEntry went;
    went.kind = JournalEntry::Kind::kGone;
    went.pod = e.pod;
    went.uid = it->second.uid;
    journal_.add(std::move(went));
  }
  last_[e.pod] = e;
  journal_.add(std::move(e));
}

void PodWatch::run(std::string resource_version) {
  while (!cancel_.cancelled()) {
    kube::WatchOptions options;
    options.label_selector = selector_;
    options.resource_version = resource_version;
    auto watched = client_->watch(
        kube::resources::kPods, ns_, options,
        [&](kube::WatchEvent&& event) {
          if (event.type != kube::WatchEvent::Type::kBookmark) {
            observe(event.object, event.type == kube::WatchEvent::Type::kDeleted);
          }
          auto rv = str_at(event.object, "/metadata/resourceVersion");
          if (!rv.empty()) resource_version = rv;
          return true;
        },
        cancel_);
    if (!watched && watched.error().is(kube::ErrorKind::kGone)) resource_version = relist();
  }
}

ScriptListener::ScriptListener(Journal& journal)
    : journal_(journal), server_([this](int fd) { serve(fd); }) {}

void ScriptListener::serve(int fd) {
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto fields = split_tabs(read_body(fd));
  constexpr std::string_view kAnswer =
      "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  (void)::send(fd, kAnswer.data(), kAnswer.size(), MSG_NOSIGNAL);
  if (fields.size() < 3) return;
  JournalEntry e;
  e.kind = JournalEntry::Kind::kScript;
  e.pod = fields[0];
  e.script.assign(fields.begin() + 1, fields.end());
  journal_.add(std::move(e));
}

}  // namespace kstack::testenv::e2e
