// Helpers of the reconciler e2e tests (see support.h), and this binary's environment.
#include "tests/e2e/reconciler/support.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/model.h"
#include "catalog/yaml.h"

namespace kstack::testenv::e2e {
namespace {

namespace json = boost::json;

// The CRDs before the controller-manager (its garbage collector must know Stacks from the
// start), the operator's user, and one simulated node with room for every test's pods.
const ConfigureEnvironment kEnvironment([](EnvironmentOptions& options) {
  options.users.push_back(TestUser{kOperatorUser, {}, {}});
  options.crd_dirs.push_back(std::filesystem::path(KSTACK_SOURCE_DIR) / "deploy" / "crds");
  options.node_simulators = std::max(options.node_simulators, 1);  // app tests ask for 3
  options.node.node_name = "reconciler";
  options.node.cpu = "64";
  options.node.memory = "256Gi";
  options.node.pods = 250;
});

const kube::ResourceType kCoreEvents{"", "v1", "events", "Event", true};

}  // namespace

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool EventItems::has(std::string_view item) const {
  return std::find(items.begin(), items.end(), item) != items.end();
}

EventItems event_items(const Objects& events, std::string_view uid, std::string_view reason) {
  EventItems out;
  for (const auto& [name, e] : events) {
    (void)name;
    if (str_at(e, "/regarding/uid") != uid || str_at(e, "/reason") != reason) continue;
    ++out.events;
    const auto note = str_at(e, "/note");
    for (std::size_t from = 0; from <= note.size();) {
      const auto to = std::min(note.find("; ", from), note.size());
      out.items.push_back(note.substr(from, to - from));
      from = to + 2;
    }
  }
  return out;
}

tl::expected<EventItems, std::string> wait_for_event_items(
    kube::Client& client, const std::string& ns, std::string_view uid, std::string_view reason,
    const std::vector<std::string>& items, std::chrono::seconds timeout) {
  auto holds = [&](const Objects& events) {
    const auto found = event_items(events, uid, reason);
    return std::all_of(items.begin(), items.end(),
                       [&](const std::string& item) { return found.has(item); });
  };
  auto events = wait_for(client, kube::resources::kEvents, ns, "", holds, timeout);
  if (!events) {
    const auto seen = event_items(list_objects(client, kube::resources::kEvents, ns), uid, reason);
    return tl::unexpected(fmt::format("{}; {} Events seen: {}", events.error(), reason,
                                      fmt::join(seen.items, " | ")));
  }
  return event_items(*events, uid, reason);
}

std::filesystem::path testdata(std::string_view file) {
  return std::filesystem::path(KSTACK_SOURCE_DIR) / "tests" / "e2e" / "reconciler" / "testdata" /
         std::string(file);
}

json::value fixture(std::string_view file, const std::string& ns, const std::string& name) {
  auto parsed = catalog::parse_yaml(read_file(testdata(file)));
  if (!parsed) {
    throw std::runtime_error(fmt::format("{}: {}", file, parsed.error().to_string()));
  }
  auto& metadata = parsed->as_object()["metadata"].as_object();
  metadata["namespace"] = ns;
  if (!name.empty()) metadata["name"] = name;
  return std::move(*parsed);
}

json::value ring_stack(const std::string& ns, const std::string& name, int controllers,
                       int workers) {
  auto stack = fixture("ring-stack.yaml", ns, name);
  for (auto& role : stack.at("spec").at("roles").as_array()) {
    role.as_object()["members"] = str_at(role, "/id") == "controller" ? controllers : workers;
  }
  return stack;
}

void set_retention(json::value& stack, std::string_view when_scaled,
                   std::string_view when_deleted) {
  json::object policy;
  if (!when_scaled.empty()) policy["whenScaled"] = when_scaled;
  if (!when_deleted.empty()) policy["whenDeleted"] = when_deleted;
  stack.at("spec").as_object()["persistentVolumeClaimRetentionPolicy"] = std::move(policy);
}

tl::expected<void, std::string> install_operator_rbac() {
  static std::mutex mu;
  static bool installed = false;
  std::lock_guard lock(mu);
  if (installed) return {};
  // The deploy/ RBAC itself (namespace first: its Role and ServiceAccount live there), then
  // testdata/operator-rbac.yaml binds its ClusterRole and Role to the test user.
  const auto deploy = std::filesystem::path(KSTACK_SOURCE_DIR) / "deploy";
  for (const auto& file :
       {deploy / "namespace.yaml", deploy / "rbac.yaml", testdata("operator-rbac.yaml")}) {
    auto applied = control_plane().kubectl({"apply", "-f", file.string()});
    if (!applied.ok()) {
      return tl::unexpected("operator RBAC: " + file.string() + ": " + applied.err);
    }
  }
  installed = true;
  return {};
}

std::shared_ptr<kube::Client> operator_client() {
  auto& cp = control_plane();
  kube::Config c;
  c.server = cp.server();
  c.ca_pem = cp.ca_pem();
  c.credentials = kube::static_token(cp.token(kOperatorUser));
  c.source = "e2e control plane, user kstack-operator";
  auto client = kube::Client::create(std::move(c));
  if (!client) throw std::runtime_error(client.error().to_string());
  return *client;
}

reconciler::ControllerOptions controller_options(const std::string& ns) {
  reconciler::ControllerOptions options;
  options.operator_namespace = kOperatorNamespace;
  options.watch_namespace = ns;
  options.workers = 2;
  options.poll_interval = std::chrono::milliseconds(500);
  return options;
}

tl::expected<std::unique_ptr<RunningController>, std::string> RunningController::start(
    reconciler::ControllerOptions options) {
  if (auto rbac = install_operator_rbac(); !rbac) return tl::unexpected(rbac.error());
  static const bool log_level_set = [] {
    // The in-process Controller logs to this binary's output: warnings only, unless asked.
    const char* level = std::getenv("KSTACK_E2E_LOG_LEVEL");  // NOLINT(concurrency-mt-unsafe)
    spdlog::set_level(spdlog::level::from_str(level != nullptr ? level : "warn"));
    return true;
  }();
  (void)log_level_set;
  std::unique_ptr<RunningController> running(new RunningController());
  running->client_ = operator_client();
  running->controller_ =
      std::make_unique<reconciler::Controller>(running->client_, std::move(options));
  if (auto started = running->controller_->start(); !started) {
    return tl::unexpected("controller did not start: " + started.error().to_string());
  }
  return running;
}

RunningController::~RunningController() { stop(); }

void RunningController::stop() {
  if (controller_) controller_->stop();
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::int64_t int_at(const json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  if (p == nullptr) return 0;
  if (p->is_int64()) return p->get_int64();
  if (p->is_uint64()) return static_cast<std::int64_t>(p->get_uint64());
  return 0;
}

json::value condition_of(const json::value& object, std::string_view type) {
  boost::system::error_code ec;
  const auto* conditions = object.find_pointer("/status/conditions", ec);
  if (conditions == nullptr || !conditions->is_array()) return nullptr;
  for (const auto& c : conditions->get_array()) {
    if (str_at(c, "/type") == type) return c;
  }
  return nullptr;
}

bool stack_ready(const json::value& stack) {
  return str_at(stack, "/status/state") == catalog::kStackReady &&
         condition(stack, "Ready") == "True" &&
         int_at(stack, "/status/observedGeneration") == int_at(stack, "/metadata/generation") &&
         int_at(stack, "/status/readyMembers") == int_at(stack, "/status/desiredMembers");
}

tl::expected<json::value, std::string> wait_stack_ready(kube::Client& client, const std::string& ns,
                                                        const std::string& name,
                                                        std::chrono::seconds timeout) {
  auto ready = wait_for_object(client, catalog::resources::kStacks, ns, name, stack_ready, timeout);
  if (!ready) {
    return tl::unexpected(fmt::format("Stack {}/{} not ready: {}\n{}", ns, name, ready.error(),
                                      describe_stack(client, ns, name)));
  }
  return ready;
}

std::string describe_stack(kube::Client& client, const std::string& ns, const std::string& name) {
  std::string out;
  auto stack = client.get(catalog::resources::kStacks, ns, name);
  if (!stack) {
    out += fmt::format("Stack {}/{}: {}\n", ns, name, stack.error().to_string());
  } else {
    boost::system::error_code ec;
    const auto* status = stack->find_pointer("/status", ec);
    const auto* finalizers = stack->find_pointer("/metadata/finalizers", ec);
    out += fmt::format("Stack {}/{} generation {} finalizers {}\nstatus: {}\n", ns, name,
                       int_at(*stack, "/metadata/generation"),
                       finalizers != nullptr ? json::serialize(*finalizers) : "[]",
                       status != nullptr ? json::serialize(*status) : "{}");
  }
  kube::ListOptions options;
  options.field_selector = "involvedObject.name=" + name;
  auto events = client.list(kCoreEvents, ns, options);
  if (!events) return out + "events: " + events.error().to_string() + "\n";
  // Oldest first; events.k8s.io events carry eventTime (microseconds), core ones lastTimestamp.
  std::vector<std::pair<std::string, const json::value*>> items;
  for (const auto& e : events->at("items").as_array()) {
    // The endpoints controller cannot publish the simulator's loopback pod IPs: noise here.
    if (str_at(e, "/reason").rfind("FailedToUpdateEndpoint", 0) == 0) continue;
    auto when = str_at(e, "/eventTime");
    if (when.empty()) when = str_at(e, "/lastTimestamp");
    items.emplace_back(when, &e);
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  out += fmt::format("last events (of {}):\n", items.size());
  for (std::size_t i = items.size() > 25 ? items.size() - 25 : 0; i < items.size(); ++i) {
    const auto& e = *items[i].second;
    out += fmt::format("  {} {} {}: {}\n", items[i].first, str_at(e, "/type"), str_at(e, "/reason"),
                       str_at(e, "/message"));
  }
  return out;
}

std::map<std::string, json::value> status_members(const json::value& stack, std::string_view role) {
  std::map<std::string, json::value> members;
  boost::system::error_code ec;
  const auto* roles = stack.find_pointer("/status/roles", ec);
  if (roles == nullptr || !roles->is_array()) return members;
  for (const auto& r : roles->get_array()) {
    if (str_at(r, "/id") != role) continue;
    const auto* list = r.find_pointer("/members", ec);
    if (list == nullptr || !list->is_array()) continue;
    for (const auto& m : list->get_array()) members[str_at(m, "/pod")] = m;
  }
  return members;
}

Objects list_objects(kube::Client& client, const kube::ResourceType& type, const std::string& ns,
                     const std::string& selector) {
  kube::ListOptions options;
  options.label_selector = selector;
  auto list = client.list(type, ns, options);
  Objects objects;
  if (!list) {
    ADD_FAILURE() << "list " << type.plural << " in " << ns << ": " << list.error().to_string();
    return objects;
  }
  for (const auto& item : list->at("items").as_array()) {
    objects[str_at(item, "/metadata/name")] = item;
  }
  return objects;
}

std::vector<std::string> names_of(const Objects& objects) {
  std::vector<std::string> names;
  for (const auto& [name, o] : objects) names.push_back(name);
  return names;
}

std::vector<json::value> controller_references(const json::value& object) {
  std::vector<json::value> refs;
  boost::system::error_code ec;
  const auto* owners = object.find_pointer("/metadata/ownerReferences", ec);
  if (owners == nullptr || !owners->is_array()) return refs;
  for (const auto& o : owners->get_array()) {
    const auto* controller = o.is_object() ? o.get_object().if_contains("controller") : nullptr;
    if (controller != nullptr && controller->is_bool() && controller->get_bool()) {
      refs.push_back(o);
    }
  }
  return refs;
}

bool controlled_by(const json::value& object, std::string_view stack_uid) {
  auto refs = controller_references(object);
  return refs.size() == 1 && str_at(refs[0], "/uid") == stack_uid &&
         str_at(refs[0], "/kind") == catalog::kStackKind &&
         str_at(refs[0], "/apiVersion") == catalog::kApiVersion;
}

bool referenced_by(const json::value& object, std::string_view uid) {
  boost::system::error_code ec;
  const auto* owners = object.find_pointer("/metadata/ownerReferences", ec);
  if (owners == nullptr || !owners->is_array()) return false;
  return std::any_of(owners->get_array().begin(), owners->get_array().end(),
                     [&](const json::value& o) { return str_at(o, "/uid") == uid; });
}

bool deleting(const json::value& object) {
  boost::system::error_code ec;
  return object.find_pointer("/metadata/deletionTimestamp", ec) != nullptr;
}

tl::expected<void, std::string> delete_stacks(kube::Client& client, const std::string& ns,
                                              std::chrono::seconds timeout) {
  auto stacks = list_objects(client, catalog::resources::kStacks, ns);
  for (const auto& [name, stack] : stacks) {
    auto removed = client.remove(catalog::resources::kStacks, ns, name);
    if (!removed && !removed.error().is(kube::ErrorKind::kNotFound)) {
      return tl::unexpected(removed.error().to_string());
    }
  }
  auto gone = wait_for(
      client, catalog::resources::kStacks, ns, "", [](const Objects& o) { return o.empty(); },
      timeout);
  if (!gone) return tl::unexpected(gone.error());
  return {};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

StackStateRecorder::StackStateRecorder(std::shared_ptr<kube::Client> client, std::string ns,
                                       std::string name)
    : client_(std::move(client)), ns_(std::move(ns)), name_(std::move(name)) {
  auto stack = client_->get(catalog::resources::kStacks, ns_, name_);
  std::string rv;
  if (stack) {
    record(*stack);
    rv = str_at(*stack, "/metadata/resourceVersion");
  } else {
    ADD_FAILURE() << "recorder: " << stack.error().to_string();
  }
  thread_ = std::thread([this, rv] { run(rv); });
}

StackStateRecorder::~StackStateRecorder() {
  cancel_.cancel();
  if (thread_.joinable()) thread_.join();
}

void StackStateRecorder::run(std::string resource_version) {
  while (!cancel_.cancelled()) {
    kube::WatchOptions options;
    options.field_selector = "metadata.name=" + name_;
    options.resource_version = resource_version;
    auto watched = client_->watch(
        catalog::resources::kStacks, ns_, options,
        [&](kube::WatchEvent&& event) {
          if (event.type != kube::WatchEvent::Type::kBookmark) record(event.object);
          auto rv = str_at(event.object, "/metadata/resourceVersion");
          if (!rv.empty()) resource_version = rv;
          return true;
        },
        cancel_);
    if (!watched && watched.error().is(kube::ErrorKind::kGone)) {
      // Missed versions: continue from now (a state may be lost; the test then says so).
      auto stack = client_->get(catalog::resources::kStacks, ns_, name_);
      if (stack) {
        record(*stack);
        resource_version = str_at(*stack, "/metadata/resourceVersion");
      }
    }
  }
}

void StackStateRecorder::record(const json::value& stack) {
  std::lock_guard lock(mu_);
  seen_.insert(str_at(stack, "/metadata/resourceVersion"));
  seen_cv_.notify_all();
  std::map<std::string, std::string> now;
  boost::system::error_code ec;
  if (const auto* roles = stack.find_pointer("/status/roles", ec); roles && roles->is_array()) {
    for (const auto& role : roles->get_array()) {
      const auto* members = role.find_pointer("/members", ec);
      if (members == nullptr || !members->is_array()) continue;
      for (const auto& m : members->get_array()) {
        now[str_at(role, "/id") + "/" + str_at(m, "/pod")] = str_at(m, "/state");
      }
    }
  }
  for (auto& [member, states] : history_) {
    if (now.count(member) == 0 && states.back() != "gone") states.push_back("gone");
  }
  for (const auto& [member, state] : now) {
    auto& states = history_[member];
    if (states.empty() || states.back() != state) states.push_back(state);
  }
}

unsigned e2e_seed(unsigned fixed) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before the test starts any thread
  const char* given = std::getenv("KSTACK_E2E_SEED");
  if (given == nullptr || *given == '\0') return fixed;
  if (std::string_view(given) == "random") return std::random_device{}();
  return static_cast<unsigned>(std::strtoul(given, nullptr, 10));
}

bool StackStateRecorder::saw(const std::string& resource_version,
                             std::chrono::seconds timeout) const {
  std::unique_lock lock(mu_);
  return seen_cv_.wait_for(lock, timeout, [&] { return seen_.contains(resource_version); });
}

std::map<std::string, std::vector<std::string>> StackStateRecorder::history() const {
  std::lock_guard lock(mu_);
  return history_;
}

std::string StackStateRecorder::describe() const {
  std::string out;
  for (const auto& [member, states] : history()) {
    std::string line;
    for (const auto& s : states) line += (line.empty() ? "" : " -> ") + s;
    out += fmt::format("  {}: {}\n", member, line);
  }
  return out;
}

void ReconcilerTest::SetUp() {
  ASSERT_TRUE(install_operator_rbac()) << "operator RBAC";
  client_ = admin();
  ns_ = make_namespace(*client_, "rec");
  create(catalog::resources::kAppTypes, fixture("ring-apptype.yaml", ns_));
  create(catalog::resources::kAppTypes, fixture("tiny-apptype.yaml", ns_));
}

void ReconcilerTest::TearDown() {
  if (client_ == nullptr) return;
  if (controller_ != nullptr) {
    auto deleted = delete_stacks(*client_, ns_, std::chrono::seconds(90));
    EXPECT_TRUE(deleted) << "the Stacks of " << ns_
                         << " were not deleted while the controller ran: " << deleted.error();
    controller_->stop();
  }
  // Not waited for: the namespace controller finishes in the background.
  (void)client_->remove(kube::resources::kNamespaces, "", ns_);
}

void ReconcilerTest::start_controller(reconciler::ControllerOptions options) {
  auto running = RunningController::start(std::move(options));
  if (!running) {
    ADD_FAILURE() << running.error();
    return;
  }
  controller_ = std::move(*running);
}

json::value ReconcilerTest::create(const kube::ResourceType& type, const json::value& object) {
  auto created = client_->create(type, ns_, object);
  if (!created) {
    ADD_FAILURE() << "create " << type.kind << " " << str_at(object, "/metadata/name") << ": "
                  << created.error().to_string();
    return nullptr;
  }
  return std::move(*created);
}

bool rolled_out(const json::value& set) {
  const auto replicas = int_at(set, "/spec/replicas");
  return int_at(set, "/status/observedGeneration") == int_at(set, "/metadata/generation") &&
         int_at(set, "/status/readyReplicas") == replicas &&
         int_at(set, "/status/updatedReplicas") == replicas &&
         int_at(set, "/status/replicas") == replicas &&
         str_at(set, "/status/currentRevision") == str_at(set, "/status/updateRevision");
}

tl::expected<json::value, std::string> ReconcilerTest::wait_settled(const std::string& stack,
                                                                    std::chrono::seconds timeout) {
  auto sets = wait_for(
      *client_, kube::resources::kStatefulSets, ns_, stack_selector(stack),
      [](const Objects& o) {
        return !o.empty() &&
               std::all_of(o.begin(), o.end(), [](const auto& s) { return rolled_out(s.second); });
      },
      timeout);
  if (!sets) return tl::unexpected("StatefulSets not rolled out: " + sets.error());
  return wait_stack_ready(*client_, ns_, stack, timeout);
}

bool is_read(const std::string& verb) { return verb == "GET" || verb == "LIST" || verb == "WATCH"; }

RequestCounts counts_since(const RequestCounts& before, const RequestCounts& after) {
  RequestCounts d;
  for (const auto& [key, n] : after) {
    auto it = before.find(key);
    const auto was = it == before.end() ? 0 : it->second;
    if (n > was) d[key] = n - was;
  }
  return d;
}

std::string format_counts(const RequestCounts& counts) {
  std::string out;
  for (const auto& [key, n] : counts) out += fmt::format("  {} {}: {}\n", key.first, key.second, n);
  return out.empty() ? "  (none)\n" : out;
}

std::uint64_t write_count(const RequestCounts& counts) {
  std::uint64_t n = 0;
  for (const auto& [key, count] : counts) {
    if (!is_read(key.first)) n += count;
  }
  return n;
}

std::map<std::string, std::uint64_t> writes_by_verb(const RequestCounts& counts) {
  std::map<std::string, std::uint64_t> by_verb;
  for (const auto& [key, count] : counts) {
    if (!is_read(key.first)) by_verb[key.first] += count;
  }
  return by_verb;
}

}  // namespace kstack::testenv::e2e
