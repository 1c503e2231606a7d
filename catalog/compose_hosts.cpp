// Compose service names used as host names (catalog/compose_internal.h, docs/compose.md "Host
// names"): in Compose every service is a host of its name; kstack makes no such host, so each
// environment value, command word or health check that uses one is a warning naming the
// members' real host names.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "catalog/compose_internal.h"
#include "catalog/names.h"

namespace kstack::catalog::compose_detail {
namespace {

bool hostish(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// Whether a command word names a host in the next word: -h, or an option about hosts,
// servers, peers or replication (--host, --replicaof, --bootstrap-server, --join, ...).
bool host_option(std::string_view word) {
  if (word == "-h" || word == "-H") return true;
  if (word.empty() || word.front() != '-') return false;
  std::string lower(word);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* hint : {"host", "replicaof", "slaveof", "server", "connect", "join", "peer",
                           "master", "primary", "addr", "seed", "broker", "upstream"}) {
    if (lower.find(hint) != std::string::npos) return true;
  }
  return false;
}

// The services `t` uses as host names (a heuristic, docs/compose.md "Host names"): an
// environment value that is exactly the name (REDIS_HOST: redis); a word that is exactly it
// after a host option (--replicaof redis, -h db); or the name standing alone within a word after
// "//", '@' or '=' (http://elasticsearch:9200, postgres://u@db/app, --host=db) or before
// ':<digit>' (db:5432). Linear in the text: each run of host characters is looked up once.
std::set<std::string> mentioned(const HostText& t,
                                const std::map<std::string, std::string>& services) {
  std::set<std::string> out;
  if (t.env_value && services.count(t.text)) out.insert(t.text);
  std::string_view text = t.text;
  std::string_view prev = t.prev;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    std::string_view word = text.substr(i, j - i);
    i = j;
    if (word.empty()) break;
    if (host_option(prev) && services.count(std::string(word))) out.insert(std::string(word));
    prev = word;
    for (std::size_t k = 0; k < word.size();) {
      while (k < word.size() && !hostish(word[k])) ++k;
      std::size_t start = k;
      while (k < word.size() && hostish(word[k])) ++k;
      std::string_view run = word.substr(start, k - start);
      while (!run.empty() && run.back() == '.') run.remove_suffix(1);
      if (run.empty()) continue;
      auto it = services.find(std::string(run));
      if (it == services.end()) continue;
      const std::size_t end = start + run.size();
      const char before = start == 0 ? ' ' : word[start - 1];
      const char after = end == word.size() ? ' ' : word[end];
      const bool url = before == '/' && start >= 2 && word[start - 2] == '/';
      const bool port_after = after == ':' && end + 1 < word.size() &&
                              std::isdigit(static_cast<unsigned char>(word[end + 1]));
      if (url || before == '@' || before == '=' || port_after) out.insert(it->first);
    }
  }
  return out;
}

}  // namespace

// Variables that hold user names, passwords or database names, where a service's name is
// usually just a name (POSTGRES_USER: postgres, WORDPRESS_DB_NAME: wordpress).
bool not_a_host_variable(std::string_view name) {
  auto cut = name.find_last_of("_.");
  auto last = name.substr(cut == std::string_view::npos ? 0 : cut + 1);
  std::string upper(last);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return upper == "USER" || upper == "USERNAME" || upper == "PASSWORD" || upper == "PASS" ||
         upper == "DB" || upper == "DATABASE" || upper == "NAME";
}

void host_name_warnings(const std::vector<Role>& roles,
                        const std::map<std::string, std::string>& id_of, const std::string& stack,
                        Warnings& w) {
  ObjectNames names(false, stack, "");
  for (const auto& r : roles) {
    for (const auto& text : r.texts) {
      for (const auto& svc : mentioned(text, id_of)) {
        const auto& id = id_of.at(svc);
        w.add(text.path,
              fmt::format("mentions {}, a host name in Compose: kstack makes no host of "
                          "that name; role {}'s members are {}, {}, ... (<stack>-<role>-<n>."
                          "<stack>, namingScheme CrNameRole)",
                          quoted(svc), quoted(id),
                          names.member(id, 0) + "." + names.headless_service(),
                          names.member(id, 1) + "." + names.headless_service()));
      }
    }
  }
}

}  // namespace kstack::catalog::compose_detail
