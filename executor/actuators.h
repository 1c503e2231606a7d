// The small interfaces a reconcile pass acts through (reconciler/act.h): an object writer, an
// event sink and a setup-step runner. Executor implements the first two, SetupStepRunner the
// third; unit tests substitute fakes, so a plan can be carried out with no cluster.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"
#include "executor/setup.h"
#include "informer/packed.h"
#include "kube/client.h"

namespace kstack::executor {

enum class Change { kNone, kCreated, kUpdated, kDeleted };
std::string_view to_string(Change change);

// The writes of a pass. See Executor for what each one does.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  virtual kube::Result<Change> apply(const kube::ResourceType& type,
                                     const boost::json::value& desired,
                                     const informer::PackedValue* live,
                                     boost::json::value* result = nullptr) = 0;
  virtual kube::Result<boost::json::value> force_apply(const kube::ResourceType& type,
                                                       const boost::json::value& desired) = 0;
  virtual kube::Result<Change> remove(const kube::ResourceType& type, std::string_view ns,
                                      std::string_view name, std::string_view uid = {},
                                      std::string_view propagation_policy = "Background",
                                      std::optional<std::int64_t> grace_period_seconds = {}) = 0;
  virtual kube::Result<boost::json::value> update_status(const kube::ResourceType& type,
                                                         const boost::json::value& object) = 0;
  virtual kube::Result<boost::json::value> set_finalizers(
      const kube::ResourceType& type, std::string_view ns, std::string_view name,
      std::string_view resource_version, const std::vector<std::string>& finalizers) = 0;
};

// Events about an object. Best effort: never fails.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void event(const informer::PackedValue& regarding, std::string_view type,
                     std::string_view reason, std::string_view action, std::string_view note) = 0;
  // Several notes of one reason, batched into as few Events as fit.
  virtual void events(const informer::PackedValue& regarding, std::string_view type,
                      std::string_view reason, std::string_view action,
                      const std::vector<std::string>& notes) = 0;
};

// One step of a member's setup (docs/spec.md §5), each at most a few short execs. A pass plans
// which step a member needs next; its outcome decides the step after.
enum class SetupStepKind {
  kWriteConfig,          // /etc/kstack/configmeta.json and env
  kReadConfigureStatus,  // configure.status (and the output tails when done)
  kCheckPackage,         // is the startscript installed
  kInstallPackage,       // fetch (configmap:// read here) and unpack the package
  kStartConfigure,       // launch `startscript --configure [arguments]` detached
  kStageUpgrade,         // unpack the next AppType's package into /opt/kstack/upgrade
  kPreupgrade,           // run /opt/kstack/upgrade/startscript --preupgrade ... (waits for it)
};
std::string_view to_string(SetupStepKind kind);

struct SetupStep {
  SetupStepKind kind = SetupStepKind::kWriteConfig;
  std::string role;  // the member's, for logs
  MemberTarget target;
  std::string configmeta;         // kWriteConfig
  std::string env;                // kWriteConfig
  catalog::SetupPackage package;  // kInstallPackage, kStageUpgrade
  std::string package_namespace;  // kInstallPackage, kStageUpgrade: where configmap:// is read
  // kStartConfigure: extra arguments after --configure; kPreupgrade: all of startscript's.
  std::vector<std::string> arguments;
  // The Stack's status.configGeneration the step was planned at: part of its outcome's key, so a
  // new configuration never reads an answer given for the old one.
  std::int64_t generation = 0;
};

struct SetupOutcome {
  // kConfigError: the setup itself is wrong (the member goes to config_error with `message`);
  // kRetry: transient or the container changed (try again on a later pass).
  enum class Kind { kDone, kConfigError, kRetry } kind = Kind::kDone;
  std::string message;
  SetupRunner::ConfigureStatus status;  // kReadConfigureStatus
  bool installed = false;               // kCheckPackage
  SetupRunner::RunResult run;           // kPreupgrade: the script's exit code and output tails
};

class SetupSteps {
 public:
  virtual ~SetupSteps() = default;
  virtual SetupOutcome run(const SetupStep& step) = 0;
};

// What a failed setup request means for the member (the one place that maps setup errors).
SetupOutcome::Kind classify_setup_error(const SetupError& error);

// The real steps: SetupRunner's execs, and a configmap:// package read from the API server.
class SetupStepRunner : public SetupSteps {
 public:
  SetupStepRunner(SetupRunner& runner, kube::Client& client) : runner_(runner), client_(client) {}
  SetupOutcome run(const SetupStep& step) override;

  // configmap://<name>/<key> read from `ns`: binaryData (base64) first, then data.
  kube::Result<std::string> package_payload(std::string_view ns,
                                            const catalog::SetupPackage& package);

 private:
  SetupRunner& runner_;
  kube::Client& client_;
};

}  // namespace kstack::executor
