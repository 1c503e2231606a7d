#include "cmd/stack_view.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace kstack::cmd {
namespace json = boost::json;

namespace {

std::string str_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  if (p == nullptr) return {};
  if (p->is_string()) return std::string(p->get_string());
  if (p->is_int64()) return std::to_string(p->get_int64());
  if (p->is_uint64()) return std::to_string(p->get_uint64());
  if (p->is_bool()) return p->get_bool() ? "true" : "false";
  return {};
}

const json::array* array_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  return p != nullptr && p->is_array() ? &p->get_array() : nullptr;
}

std::string or_dash(std::string s) { return s.empty() ? "-" : s; }

// The last `n` non-empty lines of a script's output.
std::vector<std::string> tail_lines(const std::string& text, std::size_t n) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
    start = end + 1;
  }
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return lines;
}

// What the member's setup is doing (status.roles[].members[].stateDetail).
std::string setup_of(const json::value& member) {
  const std::string state = str_at(member, "/state");
  const std::string configuring = str_at(member, "/stateDetail/configuringContainer");
  const std::string configured = str_at(member, "/stateDetail/lastConfiguredContainer");
  if (state == "config_error") return "failed";
  if (!configuring.empty() && configured == configuring) return "done";
  if (!configuring.empty()) return "running";
  if (!configured.empty()) return "done";
  return "-";
}

// The member's notifications (--addnodes/--delnodes): queued, failed for good, or nothing.
std::string notification_of(const json::value& member) {
  const auto* pending = array_at(member, "/stateDetail/pendingNotifyCmds");
  if (pending != nullptr && !pending->empty()) {
    // The first queued command's verb (--addnodes, --delnodes); its FQDN list is too long here.
    std::string verb;
    if (const auto* args = array_at(pending->front(), "/arguments");
        args != nullptr && !args->empty() && args->front().is_string()) {
      verb = std::string(args->front().get_string());
    }
    return fmt::format("pending {}{}", or_dash(verb),
                       pending->size() > 1 ? fmt::format(" (+{})", pending->size() - 1) : "");
  }
  const std::string error = str_at(member, "/stateDetail/lastNotifyError");
  if (!error.empty()) return "failed: " + error;
  return "-";
}

struct Member {
  std::string role, pod, state, setup, notification;
  const json::value* object = nullptr;
};

std::vector<Member> members_of(const json::value& stack) {
  std::vector<Member> out;
  const auto* roles = array_at(stack, "/status/roles");
  if (roles == nullptr) return out;
  for (const auto& role : *roles) {
    const auto* members = array_at(role, "/members");
    if (members == nullptr) continue;
    for (const auto& m : *members) {
      out.push_back(Member{str_at(role, "/id"), str_at(m, "/pod"), or_dash(str_at(m, "/state")),
                           setup_of(m), notification_of(m), &m});
    }
  }
  return out;
}

// The rows of a config_error member: its error and its script's last lines.
std::vector<std::string> failure_lines(const json::value& member) {
  std::vector<std::string> out;
  out.push_back(or_dash(str_at(member, "/stateDetail/configErrorDetail")));
  const std::pair<const char*, const char*> streams[] = {
      {"stdout", "/stateDetail/startScriptStdoutMessage"},
      {"stderr", "/stateDetail/startScriptStderrMessage"}};
  for (const auto& [stream, field] : streams) {
    for (const auto& l : tail_lines(str_at(member, field), kScriptTailLines)) {
      out.push_back(fmt::format("{}: {}", stream, l));
    }
  }
  return out;
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string ready_summary(const json::value& stack) {
  std::string summary = str_at(stack, "/status/memberSummary");
  if (summary.empty()) {
    const auto ready = str_at(stack, "/status/readyMembers");
    const auto desired = str_at(stack, "/status/desiredMembers");
    if (!desired.empty()) summary = or_dash(ready) + "/" + desired;
  }
  return or_dash(summary);
}

bool parse_rfc3339(const std::string& text, std::chrono::system_clock::time_point& out) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6) {
    return false;
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  out = std::chrono::system_clock::from_time_t(timegm(&tm));
  return true;
}

}  // namespace

PodInfos pod_infos(const json::value& pod_list) {
  PodInfos out;
  const auto* items = array_at(pod_list, "/items");
  if (items == nullptr) return out;
  for (const auto& pod : *items) {
    out[str_at(pod, "/metadata/name")] =
        PodInfo{str_at(pod, "/spec/nodeName"), str_at(pod, "/metadata/creationTimestamp"),
                str_at(pod, "/status/phase")};
  }
  return out;
}

std::vector<ViewRow> progress_rows(const json::value& stack, const PodInfos& pods) {
  const std::string name = str_at(stack, "/metadata/name");
  const std::string ns = str_at(stack, "/metadata/namespace");
  std::vector<ViewRow> rows;
  const std::string state = or_dash(str_at(stack, "/status/state"));
  const std::string ready = ready_summary(stack);
  rows.push_back({"stack/" + ns + "/" + name,
                  fmt::format("Stack {}/{}: {}, {} members ready", ns, name, state, ready),
                  fmt::format("{}: stack {}, {} members ready", name, state, ready)});

  auto members = members_of(stack);
  std::size_t wpod = 0, wstate = 0, wnode = 0, wrole = 0;
  for (const auto& m : members) {
    auto it = pods.find(m.pod);
    wrole = std::max(wrole, m.role.size());
    wpod = std::max(wpod, m.pod.size());
    wstate = std::max(wstate, m.state.size());
    wnode = std::max(wnode, it == pods.end() ? 1 : or_dash(it->second.node).size());
  }
  for (const auto& m : members) {
    auto it = pods.find(m.pod);
    const std::string node = it == pods.end() ? "-" : or_dash(it->second.node);
    std::string setup = m.setup == "-" ? "" : "setup " + m.setup;
    const std::string key = "member/" + name + "/" + m.pod;
    rows.push_back({key,
                    fmt::format("  {}  {}  {}  {}  {}", pad(m.role, wrole), pad(m.pod, wpod),
                                pad(m.state, wstate), pad(node, wnode), setup),
                    fmt::format("{}: member {} (role {}) {}, node {}{}", name, m.pod, m.role,
                                m.state, node, setup.empty() ? "" : ", " + setup)});
    // Trailing spaces of an empty last column are not shown.
    while (!rows.back().text.empty() && rows.back().text.back() == ' ') rows.back().text.pop_back();
    if (m.state == "config_error") {
      auto lines = failure_lines(*m.object);
      for (std::size_t i = 0; i < lines.size(); ++i) {
        rows.push_back({fmt::format("{}/failure/{}", key, i), "      " + lines[i],
                        fmt::format("{}: member {} {}", name, m.pod, lines[i])});
      }
    }
  }
  if (const auto* conditions = array_at(stack, "/status/conditions"); conditions != nullptr) {
    for (const auto& c : *conditions) {
      const std::string type = str_at(c, "/type");
      std::string text = fmt::format("{}={} {}", type, str_at(c, "/status"), str_at(c, "/reason"));
      if (const auto message = str_at(c, "/message"); !message.empty()) text += ": " + message;
      rows.push_back({"condition/" + name + "/" + type, "  " + text,
                      fmt::format("{}: condition {}", name, text)});
    }
  }
  return rows;
}

Verdict judge(const json::value& stack) {
  Verdict v;
  const std::string name = str_at(stack, "/metadata/name");
  const std::string generation = str_at(stack, "/metadata/generation");
  const std::string observed = str_at(stack, "/status/observedGeneration");
  std::string ready_status, ready_reason, ready_message;
  if (const auto* conditions = array_at(stack, "/status/conditions"); conditions != nullptr) {
    for (const auto& c : *conditions) {
      if (str_at(c, "/type") != "Ready") continue;
      ready_status = str_at(c, "/status");
      ready_reason = str_at(c, "/reason");
      ready_message = str_at(c, "/message");
    }
  }
  const bool current = !observed.empty() && observed == generation;
  for (const auto& m : members_of(stack)) {
    if (m.state != "config_error") continue;
    v.outcome = Verdict::Outcome::kFailed;
    if (v.summary.empty()) {
      v.summary =
          fmt::format("stack {}: member {} (role {}) failed its setup", name, m.pod, m.role);
    }
    for (const auto& l : failure_lines(*m.object)) {
      v.detail.push_back(fmt::format("member {}: {}", m.pod, l));
    }
  }
  if (v.outcome == Verdict::Outcome::kFailed) return v;
  if (current && str_at(stack, "/status/state") == "error") {
    v.outcome = Verdict::Outcome::kFailed;
    v.summary = fmt::format("stack {} is in state error: {}", name,
                            ready_message.empty() ? ready_reason : ready_message);
    return v;
  }
  if (current && ready_status == "True") {
    v.outcome = Verdict::Outcome::kReady;
    v.summary = fmt::format("stack {} is ready ({} members)", name, ready_summary(stack));
    return v;
  }
  if (!current) {
    v.summary =
        fmt::format("stack {}: generation {} not yet observed by the operator{}", name,
                    or_dash(generation), observed.empty() ? "" : " (it has seen " + observed + ")");
  } else {
    v.summary = fmt::format("stack {} not ready: Ready={} {}{}", name, or_dash(ready_status),
                            ready_reason, ready_message.empty() ? "" : ": " + ready_message);
  }
  std::vector<std::string> waiting;
  for (const auto& m : members_of(stack)) {
    if (m.state != "ready") waiting.push_back(m.pod + " " + m.state);
  }
  for (const auto& w : waiting) v.detail.push_back("member " + w);
  return v;
}

std::string format_age(const std::string& rfc3339, std::chrono::system_clock::time_point now) {
  std::chrono::system_clock::time_point t;
  if (!parse_rfc3339(rfc3339, t)) return "-";
  auto s = std::chrono::duration_cast<std::chrono::seconds>(now - t).count();
  if (s < 0) s = 0;
  if (s < 120) return fmt::format("{}s", s);
  if (s < 600) return fmt::format("{}m{}s", s / 60, s % 60);
  if (s < 3 * 3600) return fmt::format("{}m", s / 60);
  if (s < 8 * 3600) return fmt::format("{}h{}m", s / 3600, (s % 3600) / 60);
  if (s < 48 * 3600) return fmt::format("{}h", s / 3600);
  if (s < 8 * 86400) return fmt::format("{}d{}h", s / 86400, (s % 86400) / 3600);
  return fmt::format("{}d", s / 86400);
}

std::vector<std::string> status_table(const json::value& stack, const PodInfos& pods,
                                      std::chrono::system_clock::time_point now) {
  const std::string name = str_at(stack, "/metadata/name");
  std::vector<std::string> out;
  out.push_back(fmt::format("Stack {}/{} (app {}): {}, {} ready, {} updated{}, age {}",
                            str_at(stack, "/metadata/namespace"), name,
                            or_dash(str_at(stack, "/spec/app")),
                            or_dash(str_at(stack, "/status/state")), ready_summary(stack),
                            or_dash(str_at(stack, "/status/updateSummary")),
                            str_at(stack, "/spec/stopped") == "true" ? ", stopped by spec" : "",
                            format_age(str_at(stack, "/metadata/creationTimestamp"), now)));

  std::vector<std::vector<std::string>> table = {
      {"ROLE", "POD", "NODE", "STATE", "SETUP", "NOTIFICATION", "AGE"}};
  std::vector<std::string> failures;
  for (const auto& m : members_of(stack)) {
    auto it = pods.find(m.pod);
    table.push_back({m.role, m.pod, it == pods.end() ? "-" : or_dash(it->second.node), m.state,
                     m.setup, m.notification,
                     it == pods.end() ? "-" : format_age(it->second.created, now)});
    if (m.state == "config_error") {
      for (const auto& l : failure_lines(*m.object)) {
        failures.push_back(fmt::format("  {}: {}", m.pod, l));
      }
    }
  }
  if (table.size() == 1) {
    out.push_back("  (no members)");
  } else {
    std::vector<std::size_t> widths(table[0].size(), 0);
    for (const auto& row : table) {
      for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
    }
    for (const auto& row : table) {
      std::string line = "  ";
      for (std::size_t i = 0; i < row.size(); ++i) {
        if (i > 0) line += "  ";
        line += i + 1 == row.size() ? row[i] : pad(row[i], widths[i]);
      }
      out.push_back(std::move(line));
    }
  }
  if (!failures.empty()) {
    out.push_back("Setup failures:");
    out.insert(out.end(), failures.begin(), failures.end());
  }
  const auto* conditions = array_at(stack, "/status/conditions");
  if (conditions != nullptr && !conditions->empty()) {
    out.push_back("Conditions:");
    for (const auto& c : *conditions) {
      std::string line =
          fmt::format("  {}={} {}", str_at(c, "/type"), str_at(c, "/status"), str_at(c, "/reason"));
      if (const auto message = str_at(c, "/message"); !message.empty()) line += ": " + message;
      const auto since = str_at(c, "/lastTransitionTime");
      if (!since.empty()) line += fmt::format(" ({} ago)", format_age(since, now));
      out.push_back(std::move(line));
    }
  }
  return out;
}

json::value status_document(const json::value& stack, const PodInfos& pods) {
  json::object doc;
  doc["name"] = str_at(stack, "/metadata/name");
  doc["namespace"] = str_at(stack, "/metadata/namespace");
  doc["app"] = str_at(stack, "/spec/app");
  boost::system::error_code ec;
  const auto* generation = stack.find_pointer("/metadata/generation", ec);
  doc["generation"] = generation != nullptr ? *generation : json::value(nullptr);
  const auto* status = stack.find_pointer("/status", ec);
  doc["status"] = status != nullptr ? *status : json::object{};
  json::object pod_docs;
  for (const auto& m : members_of(stack)) {
    auto it = pods.find(m.pod);
    if (it == pods.end()) continue;
    pod_docs[m.pod] = json::object{
        {"node", it->second.node}, {"phase", it->second.phase}, {"created", it->second.created}};
  }
  doc["pods"] = std::move(pod_docs);
  return doc;
}

std::string TerminalPainter::paint(const std::vector<std::string>& lines) {
  std::vector<std::string> next = lines;
  if (height_ > 2 && next.size() > height_ - 1) {
    const std::size_t left_out = next.size() - (height_ - 2);
    next.resize(height_ - 2);
    next.push_back(fmt::format("  ... {} more lines (a taller terminal shows them)", left_out));
  }
  if (width_ > 0) {
    for (auto& l : next) {
      if (l.size() > width_) l.resize(width_);
    }
  }
  if (next.size() < shown_.size()) next.resize(shown_.size());  // the block never shrinks
  std::string out;
  if (painted_ && !shown_.empty()) out += fmt::format("\x1b[{}A\r", shown_.size());
  for (std::size_t i = 0; i < next.size(); ++i) {
    if (painted_ && i < shown_.size() && shown_[i] == next[i]) {
      out += "\n";  // unchanged: step over it
    } else {
      out += "\x1b[2K" + next[i] + "\n";
    }
  }
  shown_ = std::move(next);
  painted_ = true;
  return out;
}

std::vector<std::string> LinePrinter::update(const std::vector<ViewRow>& rows) {
  std::vector<std::string> out;
  std::map<std::string, std::string> now;
  for (const auto& r : rows) {
    now[r.key] = r.line;
    auto it = last_.find(r.key);
    if (it == last_.end() || it->second != r.line) out.push_back(r.line);
  }
  for (const auto& [key, line] : last_) {
    if (now.count(key) == 0 && key.rfind("member/", 0) == 0 &&
        key.find("/failure/") == std::string::npos) {
      out.push_back(line + " (gone)");
    }
  }
  last_ = std::move(now);
  return out;
}

}  // namespace kstack::cmd
