// The C++ model of kstack's kinds (docs/spec.md §2): AppType (a catalog entry), Stack (a user's
// request, with the status the operator writes) and KStackConfig (the operator's settings).
// The structs are a typed *view* of the object: each keeps the JSON it was decoded from in
// `raw`, so writing an object back never loses a field this model does not know. Optional
// fields stay optional here; defaults are resolved at use (catalog/defaults.h), never written
// into the AppType.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/flat_map.hpp>
#include <boost/json/value.hpp>

#include "kube/resource.h"

namespace kstack::catalog {

inline constexpr std::string_view kGroup = "kstack.io";
inline constexpr std::string_view kVersion = "v1beta1";
inline constexpr std::string_view kApiVersion = "kstack.io/v1beta1";
inline constexpr std::string_view kAppTypeKind = "AppType";
inline constexpr std::string_view kStackKind = "Stack";
inline constexpr std::string_view kKStackConfigKind = "KStackConfig";

// The one KStackConfig the operator reads, in its own namespace.
inline constexpr std::string_view kConfigName = "kstack-config";
inline constexpr std::string_view kDefaultOperatorNamespace = "kstack-system";
// Finalizer the operator puts on Stacks; label/annotation prefix it owns.
inline constexpr std::string_view kCleanupFinalizer = "kstack.io/cleanup";
inline constexpr std::string_view kOwnedPrefix = "kstack.io/";
// Annotation on a claim kstack let go of for a retention policy (value: whenScaled or
// whenDeleted): such a claim is never deleted and only re-adopted by a member of that name.
inline constexpr std::string_view kRetainedAnnotation = "kstack.io/retained";
// kubectl apply's copy of the object it applied (client-side apply): the whole object as
// escaped JSON, read by kubectl alone.
inline constexpr std::string_view kLastAppliedAnnotation =
    "kubectl.kubernetes.io/last-applied-configuration";

// spec.appCatalog values.
inline constexpr std::string_view kCatalogLocal = "local";
inline constexpr std::string_view kCatalogSystem = "system";
// spec.serviceType values; ClusterIP is the default when KStackConfig names none.
inline constexpr std::string_view kServiceTypeClusterIP = "ClusterIP";
inline constexpr std::string_view kServiceTypeNodePort = "NodePort";
inline constexpr std::string_view kServiceTypeLoadBalancer = "LoadBalancer";
// spec.namingScheme values; CrNameRole is the default (readable, deterministic names).
inline constexpr std::string_view kNamingCrNameRole = "CrNameRole";
inline constexpr std::string_view kNamingUID = "UID";
// Role lifecycle events (eventList); a role that lists none gets all three.
inline constexpr std::string_view kEventConfigure = "configure";
inline constexpr std::string_view kEventAddNodes = "addnodes";
inline constexpr std::string_view kEventDelNodes = "delnodes";
// Opt-in events of a live upgrade (docs/api.md "Upgrades"); never in the default list.
// preupgrade: `startscript --preupgrade --to-app <AppType>` on a member before it moves to the
// new template; upgradenodes: `--upgradenodes --role R --fqdns F` on the other members after
// members moved and were set up again.
inline constexpr std::string_view kEventPreUpgrade = "preupgrade";
inline constexpr std::string_view kEventUpgradeNodes = "upgradenodes";
// KStackConfig.clusterSvcDomainBase default.
inline constexpr std::string_view kDefaultClusterSvcDomainBase = ".svc.cluster.local";
// Upper bound on the members of one Stack (all roles), as KubeDirector.
inline constexpr std::int64_t kMaxStackMembers = 1000;

// Stack status.state values.
inline constexpr std::string_view kStackCreating = "creating";
inline constexpr std::string_view kStackReady = "ready";
inline constexpr std::string_view kStackUpdating = "updating";
inline constexpr std::string_view kStackError = "error";
// Every role scaled to zero by spec.stopped, claims and Services kept (docs/api.md "Stop").
inline constexpr std::string_view kStackStopped = "stopped";
// Member state values.
inline constexpr std::string_view kMemberCreatePending = "create_pending";
inline constexpr std::string_view kMemberCreating = "creating";
inline constexpr std::string_view kMemberReady = "ready";
inline constexpr std::string_view kMemberConfigError = "config_error";
inline constexpr std::string_view kMemberDeletePending = "delete_pending";
inline constexpr std::string_view kMemberDeleting = "deleting";
// The Stack is stopped: the member has no pod, its claim and status are kept.
inline constexpr std::string_view kMemberStopped = "stopped";

// memberRecovery (docs/api.md "Lost nodes"): what kstack does with a member whose node has been
// NotReady/Unknown for longer than nodeLostGraceSeconds.
// policy: Reschedule = force-delete the pod so that the StatefulSet makes it again on a live
// node; Off = leave it to the cluster.
inline constexpr std::string_view kRecoveryReschedule = "Reschedule";
inline constexpr std::string_view kRecoveryOff = "Off";
// localStorage: for a member whose claim is bound to a volume only the lost node can reach.
// Keep = wait for the node (the pod is not touched); Recreate = delete the claim too, so that
// the member starts empty elsewhere and the app re-replicates.
inline constexpr std::string_view kLocalStorageKeep = "Keep";
inline constexpr std::string_view kLocalStorageRecreate = "Recreate";
inline constexpr std::int64_t kDefaultNodeLostGraceSeconds = 60;

namespace resources {
extern const kube::ResourceType kAppTypes;        // kstack.io/v1beta1 apptypes
extern const kube::ResourceType kStacks;          // kstack.io/v1beta1 stacks
extern const kube::ResourceType kKStackConfigs;   // kstack.io/v1beta1 kstackconfigs
extern const kube::ResourceType kStorageClasses;  // storage.k8s.io/v1, cluster-scoped
}  // namespace resources

// Labels, annotations, resource lists: a handful of entries each, decoded for every Stack an
// admission review or a resync pass reads. Kept sorted in one vector (Boost.Container) rather
// than a tree: one allocation per map instead of one per entry, iterated in the same order.
using StringMap = boost::container::flat_map<std::string, std::string, std::less<>>;

// The metadata fields kstack looks at.
struct ObjectMeta {
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  StringMap labels;
  StringMap annotations;
  std::vector<std::string> finalizers;
  bool deleting = false;  // metadata.deletionTimestamp is set
};

// ---- AppType ----

struct Label {
  std::string name;
  std::string description;
};

struct SetupPackage {
  std::string package_url;            // file://, http(s)://, configmap://<name>/<key>
  std::optional<std::string> sha256;  // hex, checked before unpacking
};

// A configPackage field is tri-state: absent (inherit the default), explicit null (no
// package) or a package. KubeDirector lost this distinction once (see reference §8 #14).
struct PackageField {
  enum class State { kAbsent, kNone, kPackage };
  State state = State::kAbsent;
  SetupPackage package;  // meaningful when state == kPackage
};

struct Endpoint {
  std::optional<std::int64_t> port;
  std::string url_scheme;
  std::string path;
  bool is_dashboard = false;
  bool has_auth_token = false;
};

struct AppService {
  std::string id;
  Label label;
  std::optional<Endpoint> endpoint;
  std::string exported_service;
};

struct MinStorage {
  std::string size;  // a quantity
  bool ephemeral_mode_supported = false;
};

struct ContainerSpec {
  bool stdin_open = false;  // JSON `stdin` (a macro name in C, hence the suffix)
  bool tty = false;
};

// A role's health check, in the shape of a Kubernetes core/v1 Probe with exactly one handler
// (exec, tcpSocket or httpGet; grpc and the handlers' other fields are not offered). Numbers
// left out take the Kubernetes defaults when the pod is created; kstack never fills them in.
struct Probe {
  enum class Handler { kExec, kTcpSocket, kHttpGet };
  Handler handler = Handler::kExec;
  std::vector<std::string> command;  // exec
  // tcpSocket / httpGet: a number, or the name of a port the role declares (a service id).
  std::optional<std::int64_t> port_number;
  std::string port_name;
  std::optional<std::string> path;  // httpGet
  std::optional<std::int64_t> initial_delay_seconds;
  std::optional<std::int64_t> period_seconds;
  std::optional<std::int64_t> timeout_seconds;
  std::optional<std::int64_t> success_threshold;
  std::optional<std::int64_t> failure_threshold;
};

struct AppRole {
  std::string id;
  std::string cardinality;  // "N" or "N+"; see parse_cardinality
  std::optional<std::string> image_repo_tag;
  // The member container's command and arguments, as a Kubernetes container's: `command`
  // replaces the image's ENTRYPOINT, `args` its CMD; run directly, never through a shell.
  std::optional<std::vector<std::string>> command;
  std::optional<std::vector<std::string>> args;
  // Roles of this AppType whose every member must be ready before this role's members are
  // first created (start order only: a later scale-up or a dependency going unready does not
  // hold the role back).
  std::vector<std::string> depends_on;
  PackageField config_package;
  std::optional<std::vector<std::string>> persist_dirs;
  std::optional<std::vector<std::string>> event_list;
  StringMap min_resources;  // resource name -> quantity text
  std::optional<MinStorage> min_storage;
  ContainerSpec container_spec;
  // Copied onto the member's `app` container (docs/api.md "Probes").
  std::optional<Probe> readiness_probe;
  std::optional<Probe> liveness_probe;
  std::optional<Probe> startup_probe;
  // The fewest members of the role that must stay available through voluntary disruptions
  // (node drains, evictions): an integer >= 1 or a percentage "N%" (of the role's members,
  // rounded up), as a PodDisruptionBudget's minAvailable. null = no quorum declared, no PDB.
  boost::json::value min_available;
};

struct RoleServices {
  std::string role_id;
  std::vector<std::string> service_ids;
};

struct AppConfig {
  std::vector<RoleServices> role_services;
  std::vector<std::string> selected_roles;
  StringMap config_meta;
};

struct AppTypeSpec {
  Label label;
  std::string distro_id;
  std::string version;
  // AppTypes (names, in this AppType's namespace) a running Stack may move from to this one
  // by changing spec.app (docs/api.md "Upgrades"). Same distroID required.
  std::vector<std::string> upgrade_from;
  std::optional<std::int64_t> config_schema_version;
  std::optional<std::string> default_image_repo_tag;
  PackageField default_config_package;
  std::vector<AppService> services;
  std::vector<AppRole> roles;
  AppConfig config;
  std::optional<std::vector<std::string>> default_persist_dirs;
  std::optional<std::vector<std::string>> default_event_list;
  std::vector<std::string> capabilities;
  bool systemd_required = false;
  std::string logo_url;
};

struct AppType {
  ObjectMeta metadata;
  AppTypeSpec spec;
  boost::json::value raw;  // the object as received: serialisation keeps unknown fields
  // Instead of `raw`, when decoded with DecodeSource::kBorrow (catalog/parse.h): the object
  // decoded, which the caller keeps alive as long as this value and its copies.
  const boost::json::value* borrowed = nullptr;
};

// ---- Stack ----

// A member the model keeps as JSON (a role's env, affinity, tolerations): its own copy, or, in
// a model decoded with DecodeSource::kBorrow, the decoded object's member itself (no copy; it
// lives as long as `Stack::borrowed` does, and so do copies of it).
class JsonMember {
 public:
  JsonMember() = default;
  JsonMember(boost::json::value v) : own_(std::move(v)) {}  // NOLINT: as a json::value member
  JsonMember& operator=(boost::json::value v) {
    own_ = std::move(v);
    view_ = nullptr;
    return *this;
  }
  static JsonMember view(const boost::json::value& of) {
    JsonMember m;
    m.view_ = &of;
    return m;
  }

  const boost::json::value& get() const noexcept { return view_ != nullptr ? *view_ : own_; }
  const boost::json::value& operator*() const noexcept { return get(); }
  const boost::json::value* operator->() const noexcept { return &get(); }
  // Whether this is a view of a borrowed object's member rather than a copy.
  bool is_view() const noexcept { return view_ != nullptr; }
  friend bool operator==(const JsonMember& a, const boost::json::value& b) { return a.get() == b; }

 private:
  boost::json::value own_;
  const boost::json::value* view_ = nullptr;
};

struct ResourceRequirements {
  StringMap requests;  // resource name -> quantity text
  StringMap limits;
};

struct StorageSpec {
  std::string size;
  std::optional<std::string> storage_class_name;
};

// A Stack role's (or KStackConfig's default) member recovery; unset fields fall back to the
// KStackConfig's, then to Reschedule / kDefaultNodeLostGraceSeconds / Keep.
struct MemberRecovery {
  std::optional<std::string> policy;  // kRecovery*
  std::optional<std::int64_t> node_lost_grace_seconds;
  std::optional<std::string> local_storage;  // kLocalStorage*
};

struct StackRole {
  std::string id;
  std::optional<std::int64_t> members;
  ResourceRequirements resources;
  std::optional<StorageSpec> storage;
  JsonMember env;       // array of core EnvVar, or null
  JsonMember affinity;  // core Affinity, or null
  StringMap node_selector;
  JsonMember tolerations;  // array of core Toleration, or null
  StringMap pod_labels;
  StringMap pod_annotations;
  StringMap service_labels;
  StringMap service_annotations;
  std::string service_account_name;
  // How many members of the role may be unavailable at once while it rolls to a new template
  // (absent: 1). A member already unavailable may always move.
  std::optional<std::int64_t> max_unavailable;
  MemberRecovery member_recovery;
};

// spec.persistentVolumeClaimRetentionPolicy: what happens to member PVCs when the Stack scales
// down (whenScaled) or is deleted (whenDeleted). Absent = Delete, as docs/spec.md §4 says.
inline constexpr std::string_view kRetentionDelete = "Delete";
inline constexpr std::string_view kRetentionRetain = "Retain";
struct PvcRetentionPolicy {
  std::optional<std::string> when_scaled;
  std::optional<std::string> when_deleted;
};

struct StackSpec {
  std::string app;
  std::optional<std::string> app_catalog;
  std::optional<std::string> service_type;
  std::optional<std::string> naming_scheme;
  std::vector<StackRole> roles;
  PvcRetentionPolicy pvc_retention;
  // Stops a rollout between members: no member starts to move while set (those moving finish).
  bool paused = false;
  // Every role at zero members, claims, Services and status kept; false again brings every
  // member back on its own claim (docs/api.md "Stop and resume").
  bool stopped = false;
};

struct Condition {
  std::string type;    // Ready | Progressing | Degraded
  std::string status;  // True | False | Unknown
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339
  std::int64_t observed_generation = 0;
  bool operator==(const Condition&) const = default;
};

struct NotifyCmd {
  std::vector<std::string> arguments;  // e.g. --addnodes --role worker --fqdns a,b
  bool operator==(const NotifyCmd&) const = default;
};

struct MemberStateDetail {
  std::string config_error_detail;
  std::optional<std::int64_t> last_config_data_generation;
  std::optional<std::int64_t> last_setup_generation;
  std::string configuring_container;
  std::string last_configured_container;
  std::string last_known_container_state;
  std::vector<NotifyCmd> pending_notify_cmds;
  std::string start_script_stdout_message;
  std::string start_script_stderr_message;
  std::string scheduling_error_message;
  // The last notification (--addnodes/--delnodes) that failed for good, with why; cleared
  // when a later one succeeds.
  std::string last_notify_error;
  // The template revision and AppType the member's setup last finished in: a later container
  // of another revision is an upgrade (or a rollback) and runs `--configure --upgrade-from`.
  std::string last_configured_revision;
  std::string last_configured_app;
  // The setup package that setup ran ("<url>[@<sha256>]", as the pod template's
  // kstack.io/setup-package): a member whose pod still runs an older template is set up with
  // it again, and only with it (an annotation on a pod is not trusted on its own).
  std::string last_configured_package;
  // The member's --preupgrade for a rollout: the StatefulSet update revision it ran for, the
  // container it ran in, whether it exited 0, and when it did not, why with its output tails.
  std::string preupgrade_revision;
  std::string preupgrade_container;
  bool preupgrade_succeeded = false;
  std::string upgrade_error;
  std::string preupgrade_stdout;
  std::string preupgrade_stderr;
  // When kstack let the member go to the update revision (RFC 3339); it must be ready on it
  // within the rollout's deadline, or the rollout stops (UpgradeFailed).
  std::string moved_at;
  // Member recovery (memberRecovery): what kstack did or waits for because the member's node
  // was lost, for people ("" when nothing); and whether the member was made again with new,
  // empty claims (localStorage: Recreate): until its setup finishes, the other members get
  // --delnodes for it before it is set up, then --addnodes.
  std::string recovery;
  bool replacing = false;
  bool operator==(const MemberStateDetail&) const = default;
};

struct MemberStatus {
  std::string pod;
  std::string service;
  std::string pvc;
  std::int64_t node_id = 0;
  std::string state;  // kMember* values
  // What the member's pod runs: its StatefulSet revision (label controller-revision-hash) and
  // the AppType its template was made from (annotation kstack.io/app). Empty without a pod.
  std::string template_revision;
  std::string app;
  MemberStateDetail state_detail;
  bool operator==(const MemberStatus&) const = default;
};

struct RoleStatus {
  std::string id;
  std::string stateful_set;
  std::vector<MemberStatus> members;
  // The rollout: the StatefulSet's update revision (the template the members move to), how
  // many members run it, and the partition kstack set (members at or above it may move).
  std::string update_revision;
  std::int64_t updated_members = 0;
  std::int64_t partition = 0;
  bool operator==(const RoleStatus&) const = default;
};

struct MemberStateRollup {
  bool membership_changing = false;
  bool members_down = false;
  bool members_initializing = false;
  bool members_waiting = false;
  bool members_restarting = false;
  bool config_errors = false;
  bool members_not_scheduled = false;
  bool operator==(const MemberStateRollup&) const = default;
};

struct StackStatus {
  std::int64_t observed_generation = 0;
  std::string state;  // kStack* values
  std::vector<Condition> conditions;
  std::string cluster_service;
  std::int64_t last_node_id = 0;
  std::int64_t config_generation = 0;
  std::vector<RoleStatus> roles;
  MemberStateRollup member_state_rollup;
  // Printer columns of `kubectl get stacks` (deploy/crds/stacks.yaml): READY shows
  // memberSummary, "<ready>/<desired>".
  std::int64_t ready_members = 0;
  std::int64_t desired_members = 0;
  std::string member_summary;
  // Members that run their role's current template, over all roles, and "<updated>/<desired>"
  // (the UPDATED column).
  std::int64_t updated_members = 0;
  std::string update_summary;
  // Field by field: to_json(StackStatus) is lossless (every field is written unless it holds
  // its default), so this agrees with comparing the serialised forms.
  bool operator==(const StackStatus&) const = default;
};

struct Stack {
  ObjectMeta metadata;
  StackSpec spec;
  std::optional<StackStatus> status;
  boost::json::value raw;                        // the object as received (see AppType::raw)
  const boost::json::value* borrowed = nullptr;  // see AppType::borrowed
};

// ---- KStackConfig ----

struct KStackConfigSpec {
  std::optional<std::string> default_storage_class_name;
  std::optional<std::string> default_service_type;
  std::optional<std::string> default_naming_scheme;
  std::optional<std::string> cluster_svc_domain_base;
  StringMap pod_labels;
  StringMap pod_annotations;
  StringMap service_labels;
  StringMap service_annotations;
  MemberRecovery member_recovery;  // defaults for every Stack role
};

struct KStackConfig {
  ObjectMeta metadata;
  KStackConfigSpec spec;
  boost::json::value raw;
};

}  // namespace kstack::catalog
