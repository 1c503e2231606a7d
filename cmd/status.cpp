// `kstack status [STACK] [-o json|yaml] [--watch]` (cmd/stack_view.h renders).
#include <ostream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/model.h"
#include "cmd/stack_commands.h"
#include "cmd/stack_watch.h"
#include "cmd/yaml_out.h"
#include "kube/client.h"

namespace kstack::cmd {
namespace json = boost::json;

namespace {

struct Shown {
  json::value stack;
  PodInfos pods;
};

// One block for every Stack shown: the table, or the machine-readable document.
std::string render(const std::vector<Shown>& shown, const StatusOptions& options) {
  if (options.output == "json" || options.output == "yaml") {
    json::value doc;
    if (!options.stack.empty() && shown.size() == 1) {
      doc = status_document(shown.front().stack, shown.front().pods);
    } else {
      json::array items;
      for (const auto& s : shown) items.push_back(status_document(s.stack, s.pods));
      doc = json::object{{"items", std::move(items)}};
    }
    return options.output == "json" ? json::serialize(doc) + "\n" : to_yaml(doc);
  }
  std::string out;
  const auto now = std::chrono::system_clock::now();
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (i > 0) out += "\n";
    for (const auto& line : status_table(shown[i].stack, shown[i].pods, now)) out += line + "\n";
  }
  return out;
}

std::string name_of(const json::value& stack) {
  boost::system::error_code ec;
  const auto* p = stack.find_pointer("/metadata/name", ec);
  return p != nullptr && p->is_string() ? std::string(p->get_string()) : std::string();
}

}  // namespace

int status(const StatusOptions& options, std::ostream& out, std::ostream& err) {
  auto timeout = parse_duration(options.timeout);
  if (!timeout) {
    err << "error: --timeout: " << timeout.error() << '\n';
    return kExitDenied;
  }
  auto conn = connect(options.client, err);
  if (!conn) return kExitFailed;
  auto& client = *conn->client;
  const std::string& ns = conn->ns;
  std::map<std::string, PodInfos> pods;

  auto collect = [&](const StackMap& stacks, const std::string& changed) {
    std::vector<Shown> shown;
    for (const auto& [key, stack] : stacks) {
      const auto name = name_of(stack);
      if (!options.stack.empty() && name != options.stack) continue;
      if (changed.empty() || changed == key) pods[key] = list_member_pods(client, ns, name);
      shown.push_back({stack, pods[key]});
    }
    return shown;
  };
  auto missing = [&] {
    err << (options.stack.empty()
                ? fmt::format("No Stacks in namespace {}.\n", ns)
                : fmt::format("error: stack {} not found in namespace {}\n", options.stack, ns));
  };

  if (!options.watch) {
    StackMap stacks;
    if (!options.stack.empty()) {
      auto got = client.get(catalog::resources::kStacks, ns, options.stack);
      if (!got) {
        if (got.error().is(kube::ErrorKind::kNotFound)) {
          missing();
        } else {
          err << "error: " << got.error().to_string() << '\n';
        }
        return kExitFailed;
      }
      stacks[ns + "/" + options.stack] = std::move(*got);
    } else {
      auto list = client.list(catalog::resources::kStacks, ns);
      if (!list) {
        err << "error: " << list.error().to_string() << '\n';
        return kExitFailed;
      }
      if (const auto* items = list->as_object().if_contains("items");
          items != nullptr && items->is_array()) {
        for (const auto& item : items->get_array()) stacks[ns + "/" + name_of(item)] = item;
      }
    }
    auto shown = collect(stacks, "");
    if (shown.empty() && options.output == "table") {
      missing();
      return options.stack.empty() ? kExitOk : kExitFailed;
    }
    out << render(shown, options);
    return kExitOk;
  }

  // --watch: the whole block again on every change (redrawn in place on a terminal).
  const Screen screen = options.output == "table" ? detect_screen() : Screen{};
  TerminalPainter painter(screen.width, screen.height);
  std::string last;
  auto on_change = [&](const StackMap& stacks, const std::string& changed) {
    auto shown = collect(stacks, changed);
    std::string block = shown.empty() ? (options.stack.empty()
                                             ? fmt::format("No Stacks in namespace {}.\n", ns)
                                             : fmt::format("Stack {} not found.\n", options.stack))
                                      : render(shown, options);
    if (block == last) return true;
    last = block;
    if (screen.tty) {
      std::vector<std::string> lines;
      std::size_t start = 0;
      while (start < block.size()) {
        auto end = block.find('\n', start);
        lines.push_back(block.substr(start, end - start));
        start = end + 1;
      }
      out << painter.paint(lines);
    } else {
      out << block << (options.output == "table" ? "\n" : "");
      if (options.output == "yaml") out << "---\n";
    }
    out.flush();
    return true;
  };
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (timeout->count() > 0) deadline = std::chrono::steady_clock::now() + *timeout;
  std::string error;
  if (watch_stacks(client, ns, deadline, on_change, error) == WatchEnd::kError) {
    err << "error: watching Stacks: " << error << '\n';
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace kstack::cmd
