// A fake API server behind kube::Transport, for informer unit tests with no cluster: answers
// LISTs of one set of ConfigMaps (every path, every selector), holds WATCH streams open until
// cancelled, sends them the events a test pushes, and counts LISTs and WATCHes by request path
// (query left out) so a test can tell how many caches list and watch what.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "kube/client.h"
#include "kube/transport.h"

namespace kstack::informer::testing {

class FakeApi final : public kube::Transport {
 public:
  // The answer to every LIST: these objects at resourceVersion `rv`.
  void set_objects(std::vector<boost::json::value> objects, std::string rv) {
    std::lock_guard lock(mu_);
    objects_ = std::move(objects);
    rv_ = std::move(rv);
  }
  // Requests for this path are refused with 403 Forbidden.
  void forbid(std::string path) {
    std::lock_guard lock(mu_);
    forbidden_.push_back(std::move(path));
  }
  // Sent on every watch stream open now (one JSON line, e.g. a MODIFIED event).
  void push_event(const boost::json::value& event) {
    {
      std::lock_guard lock(mu_);
      for (auto& [id, pending] : streams_) pending += boost::json::serialize(event) + "\n";
    }
    cv_.notify_all();
  }

  int lists(const std::string& path) const { return count(lists_, path); }
  int watches(const std::string& path) const { return count(watches_, path); }
  int open_watches() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(streams_.size());
  }
  // Until `n` watch streams are open at once, or the timeout passes.
  bool wait_open_watches(int n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return static_cast<int>(streams_.size()) >= n; });
  }

  kube::TransportStats stats() const override { return {}; }

  kube::Result<kube::HttpResponse> send(const kube::HttpRequest& request,
                                        const kube::CancelToken&) override {
    const std::string path = path_of(request.target);
    std::lock_guard lock(mu_);
    ++lists_[path];
    if (is_forbidden(path)) return forbidden_response();
    boost::json::array items;
    for (const auto& o : objects_) items.push_back(o);
    boost::json::object list{{"apiVersion", "v1"},
                             {"kind", "ConfigMapList"},
                             {"metadata", {{"resourceVersion", rv_}}},
                             {"items", std::move(items)}};
    return kube::HttpResponse{200, {}, boost::json::serialize(list)};
  }

  kube::Result<kube::HttpResponse> stream(const kube::HttpRequest& request,
                                          const kube::ChunkHandler& on_chunk,
                                          const kube::CancelToken& cancel,
                                          std::chrono::milliseconds) override {
    const std::string path = path_of(request.target);
    // Before the lock: the action runs at once when the token is cancelled already.
    const auto action = cancel.add_action([this] {
      std::lock_guard l(mu_);
      cv_.notify_all();
    });
    std::unique_lock lock(mu_);
    ++watches_[path];
    if (is_forbidden(path)) {
      lock.unlock();
      cancel.remove_action(action);
      return forbidden_response();
    }
    const int id = next_stream_++;
    streams_[id];
    cv_.notify_all();
    bool more = true;
    while (more) {
      cv_.wait(lock, [&] { return cancel.cancelled() || !streams_[id].empty(); });
      if (cancel.cancelled()) break;
      const std::string chunk = std::exchange(streams_[id], {});
      lock.unlock();  // the handler stores and delivers: never under the fake's lock
      more = on_chunk(chunk);
      lock.lock();
    }
    streams_.erase(id);
    lock.unlock();
    cancel.remove_action(action);
    if (cancel.cancelled()) return kube::make_error(kube::ErrorKind::kCancelled, "cancelled");
    return kube::HttpResponse{200, {}, {}};
  }

  // A client over this fake; the fake lives as long as the client.
  static std::pair<std::shared_ptr<kube::Client>, FakeApi*> client() {
    auto api = std::make_unique<FakeApi>();
    auto* raw = api.get();
    kube::Config config;
    config.server = "http://fake";
    config.qps = 0;  // no client-side rate limit
    return {std::make_shared<kube::Client>(config, std::move(api), ""), raw};
  }

 private:
  static std::string path_of(const std::string& target) {
    return target.substr(0, target.find('?'));
  }
  static kube::HttpResponse forbidden_response() {
    return kube::HttpResponse{
        403,
        {},
        R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403})"};
  }
  bool is_forbidden(const std::string& path) const {
    for (const auto& f : forbidden_) {
      if (f == path) return true;
    }
    return false;
  }
  int count(const std::map<std::string, int>& counts, const std::string& path) const {
    std::lock_guard lock(mu_);
    auto it = counts.find(path);
    return it == counts.end() ? 0 : it->second;
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<boost::json::value> objects_;
  std::string rv_ = "1";
  std::vector<std::string> forbidden_;
  std::map<std::string, int> lists_, watches_;
  std::map<int, std::string> streams_;  // open watch streams: what is pending for each
  int next_stream_ = 0;
};

}  // namespace kstack::informer::testing
