#include "cmd/render.h"

#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "catalog/parse.h"
#include "catalog/yaml.h"
#include "cmd/yaml_out.h"
#include "reconciler/desired_state.h"

namespace kstack::cmd {
namespace {

constexpr std::size_t kMaxFileBytes = 4u << 20;

}  // namespace

int render(const RenderOptions& options) {
  std::optional<catalog::AppType> app;
  std::optional<catalog::Stack> stack;
  std::optional<catalog::KStackConfig> config;
  for (const auto& file : options.files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      fmt::print(stderr, "kstack render: {}: cannot open\n", file);
      return 2;
    }
    std::string text;
    text.resize(kMaxFileBytes + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) {
      fmt::print(stderr, "kstack render: {}: larger than {} bytes\n", file, kMaxFileBytes);
      return 2;
    }
    auto docs = catalog::parse_manifests(text);
    if (!docs) {
      fmt::print(stderr, "kstack render: {}: {}\n", file, docs.error().to_string());
      return 2;
    }
    for (const auto& doc : *docs) {
      if (!doc.error.empty()) {
        fmt::print(stderr, "kstack render: {}: document {} (line {}): {}\n", file, doc.index,
                   doc.line, doc.error);
        return 2;
      }
      const auto* kind =
          doc.value.is_object() ? doc.value.as_object().if_contains("kind") : nullptr;
      const std::string k = kind && kind->is_string() ? std::string(kind->get_string()) : "";
      auto fail = [&](const kube::Error& e) {
        fmt::print(stderr, "kstack render: {}: document {}: {}\n", file, doc.index, e.to_string());
        return 1;
      };
      if (k == catalog::kAppTypeKind) {
        auto a = catalog::parse_apptype(doc.value);
        if (!a) return fail(a.error());
        app = std::move(*a);
      } else if (k == catalog::kStackKind) {
        auto s = catalog::parse_stack(doc.value);
        if (!s) return fail(s.error());
        stack = std::move(*s);
      } else if (k == catalog::kKStackConfigKind) {
        auto c = catalog::parse_kstack_config(doc.value);
        if (!c) return fail(c.error());
        config = std::move(*c);
      } else {
        fmt::print(stderr, "kstack render: {}: document {}: kind \"{}\" ignored\n", file, doc.index,
                   k);
      }
    }
  }
  if (!app || !stack) {
    fmt::print(stderr, "kstack render: need one AppType and one Stack among the files\n");
    return 2;
  }
  if (stack->spec.app != app->metadata.name) {
    fmt::print(stderr,
               "kstack render: spec.app: Stack {} wants app \"{}\", the AppType is \"{}\"\n",
               stack->metadata.name, stack->spec.app, app->metadata.name);
    return 1;
  }
  // Offline there is no API server to assign these; placeholders make the output complete.
  if (stack->metadata.namespace_name.empty()) stack->metadata.namespace_name = "default";
  if (stack->metadata.uid.empty()) stack->metadata.uid = "<stack-uid>";
  auto desired = reconciler::desired_state(*stack, *app, config ? &*config : nullptr);
  if (!desired) {
    fmt::print(stderr, "kstack render: {}\n", desired.error().to_string());
    return 1;
  }
  std::vector<const boost::json::value*> objects{&desired->headless_service};
  for (const auto& r : desired->roles) objects.push_back(&r.stateful_set);
  for (const auto& s : desired->member_services) objects.push_back(&s);
  bool first = true;
  for (const auto* o : objects) {
    if (options.output == "json") {
      fmt::print("{}\n", boost::json::serialize(*o));
    } else {
      fmt::print("{}{}", first ? "" : "---\n", to_yaml(*o));
    }
    first = false;
  }
  return 0;
}

}  // namespace kstack::cmd
