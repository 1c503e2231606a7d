#include "informer/packed.h"

#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/json.hpp>

namespace kstack::informer {
namespace json = boost::json;

namespace {

using packed_detail::word;

// The interned member keys: field names that recur in the objects kstack caches (ConfigMaps,
// Stacks, StatefulSets, Pods, Services, PersistentVolumeClaims, Events, Leases), managedFields
// aside (the reflector drops them). An id is an index here; the table only grows at its end.
constexpr std::string_view kInternedKeys[] = {
    // every object
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "blockOwnerDeletion",
    "finalizers",
    "generateName",
    "spec",
    "status",
    "data",
    "binaryData",
    "type",
    "value",
    "key",
    // selectors, templates, conditions
    "selector",
    "matchLabels",
    "matchExpressions",
    "operator",
    "values",
    "template",
    "conditions",
    "lastTransitionTime",
    "lastProbeTime",
    "lastUpdateTime",
    "lastHeartbeatTime",
    "reason",
    "message",
    "observedGeneration",
    "state",
    // pod spec
    "containers",
    "initContainers",
    "image",
    "imagePullPolicy",
    "command",
    "args",
    "workingDir",
    "ports",
    "containerPort",
    "hostPort",
    "protocol",
    "env",
    "envFrom",
    "valueFrom",
    "fieldRef",
    "fieldPath",
    "resourceFieldRef",
    "configMapKeyRef",
    "secretKeyRef",
    "resources",
    "requests",
    "limits",
    "cpu",
    "memory",
    "storage",
    "volumeMounts",
    "mountPath",
    "subPath",
    "readOnly",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "dnsConfig",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "nodeSelector",
    "securityContext",
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "fsGroup",
    "schedulerName",
    "tolerations",
    "effect",
    "tolerationSeconds",
    "priority",
    "priorityClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "hostname",
    "subdomain",
    "affinity",
    "nodeAffinity",
    "podAffinity",
    "podAntiAffinity",
    "topologyKey",
    "weight",
    "podAffinityTerm",
    "requiredDuringSchedulingIgnoredDuringExecution",
    "preferredDuringSchedulingIgnoredDuringExecution",
    "volumes",
    "persistentVolumeClaim",
    "claimName",
    "emptyDir",
    "medium",
    "sizeLimit",
    "configMap",
    "secret",
    "secretName",
    "defaultMode",
    "items",
    "path",
    "projected",
    "sources",
    "serviceAccountToken",
    "expirationSeconds",
    "downwardAPI",
    "hostPath",
    "readinessProbe",
    "livenessProbe",
    "startupProbe",
    "exec",
    "httpGet",
    "tcpSocket",
    "port",
    "host",
    "scheme",
    "httpHeaders",
    "periodSeconds",
    "timeoutSeconds",
    "successThreshold",
    "failureThreshold",
    "initialDelaySeconds",
    "lifecycle",
    "preStop",
    "postStart",
    "stdin",
    "tty",
    "shareProcessNamespace",
    "readinessGates",
    "conditionType",
    "overhead",
    "runtimeClassName",
    // pod status
    "phase",
    "hostIP",
    "podIP",
    "podIPs",
    "ip",
    "startTime",
    "containerStatuses",
    "initContainerStatuses",
    "running",
    "startedAt",
    "terminated",
    "exitCode",
    "signal",
    "finishedAt",
    "containerID",
    "waiting",
    "lastState",
    "ready",
    "restartCount",
    "imageID",
    "started",
    "qosClass",
    "nominatedNodeName",
    // workloads
    "replicas",
    "serviceName",
    "podManagementPolicy",
    "updateStrategy",
    "rollingUpdate",
    "partition",
    "maxUnavailable",
    "maxSurge",
    "revisionHistoryLimit",
    "volumeClaimTemplates",
    "persistentVolumeClaimRetentionPolicy",
    "whenDeleted",
    "whenScaled",
    "minReadySeconds",
    "currentReplicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "currentRevision",
    "updateRevision",
    "collisionCount",
    // services and claims
    "clusterIP",
    "clusterIPs",
    "ipFamilies",
    "ipFamilyPolicy",
    "sessionAffinity",
    "targetPort",
    "nodePort",
    "publishNotReadyAddresses",
    "loadBalancer",
    "externalTrafficPolicy",
    "internalTrafficPolicy",
    "externalName",
    "accessModes",
    "storageClassName",
    "volumeMode",
    "volumeName",
    "capacity",
    "dataSource",
    // events and leases
    "involvedObject",
    "source",
    "component",
    "count",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "reportingComponent",
    "reportingInstance",
    "holderIdentity",
    "leaseDurationSeconds",
    "acquireTime",
    "renewTime",
    "leaseTransitions",
    // kstack's Stacks and AppTypes
    "app",
    "appCatalog",
    "serviceType",
    "namingScheme",
    "paused",
    "stopped",
    "roles",
    "id",
    "members",
    "clusterService",
    "templateRevision",
    "pod",
    "service",
    "pvc",
    "node",
    "role",
    "updatedMembers",
    "memberRecovery",
    "podLabels",
    "podAnnotations",
    "serviceLabels",
    "serviceAnnotations",
    "configPackage",
    "packageURL",
    "sha256",
    "endpoint",
    "services",
};

std::optional<std::uint32_t> intern_id(std::string_view key) {
  // Never destroyed: a reflector thread may still pack while the program exits.
  static const auto* const ids = [] {
    auto* m = new std::unordered_map<std::string_view, std::uint32_t>();
    for (std::size_t i = 0; i < std::size(kInternedKeys); ++i) {
      m->emplace(kInternedKeys[i], static_cast<std::uint32_t>(i));
    }
    return m;
  }();
  const auto it = ids->find(key);
  if (it == ids->end()) return std::nullopt;
  return it->second;
}

constexpr std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }
constexpr std::size_t string_node_size(std::size_t length) { return align4(4 + length + 1); }
std::size_t key_node_size(std::string_view key) {
  return intern_id(key) ? 4 : string_node_size(key.size());
}

[[noreturn]] void wrong_kind(json::kind expected, json::kind found) {
  throw std::invalid_argument("packed value: expected " + std::string(json::to_string(expected)) +
                              ", found " + std::string(json::to_string(found)));
}

std::uint32_t checked_payload(std::size_t n, std::string_view what) {
  if (n > packed_detail::kMaxPayload) {
    throw std::length_error("packed value: " + std::string(what) + " of " + std::to_string(n) +
                            " is larger than the packed format holds");
  }
  return static_cast<std::uint32_t>(n);
}

// The size of value's node as Writer lays it out: for a DOM (what pack() allocates) and for a
// packed value (what it took), with the same code since both read alike.
template <class Value>
std::size_t node_size(const Value& v) {
  switch (v.kind()) {
    case json::kind::null:
    case json::kind::bool_:
      return 4;
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return 12;
    case json::kind::string:
      return string_node_size(v.get_string().size());
    case json::kind::array: {
      std::size_t n = 4 + 4 * v.get_array().size();
      for (const auto& e : v.get_array()) n += node_size(e);
      return n;
    }
    case json::kind::object: {
      std::size_t n = 4 + 4 * v.get_object().size();
      for (const auto& m : v.get_object()) {
        n += key_node_size(m.key()) + node_size(m.value());
      }
      return n;
    }
  }
  return 4;
}

class Writer {
 public:
  explicit Writer(char* out) : out_(out) {}
  std::size_t written() const { return at_; }

  void value(const json::value& v) {
    switch (v.kind()) {
      case json::kind::null:
        put_word(header(v.kind(), 0));
        return;
      case json::kind::bool_:
        put_word(header(v.kind(), v.get_bool() ? 1 : 0));
        return;
      case json::kind::int64:
        number(v.kind(), v.get_int64());
        return;
      case json::kind::uint64:
        number(v.kind(), v.get_uint64());
        return;
      case json::kind::double_:
        number(v.kind(), v.get_double());
        return;
      case json::kind::string:
        string(v.get_string());
        return;
      case json::kind::array: {
        const auto& a = v.get_array();
        const std::size_t node = at_;
        put_word(header(v.kind(), checked_payload(a.size(), "an array's size")));
        const std::size_t table = at_;
        at_ += 4 * a.size();
        std::size_t i = 0;
        for (const auto& e : a) {
          put_offset(table + 4 * i++, at_ - node);
          value(e);
        }
        return;
      }
      case json::kind::object: {
        const auto& o = v.get_object();
        const std::size_t node = at_;
        put_word(header(v.kind(), checked_payload(o.size(), "an object's size")));
        const std::size_t table = at_;
        at_ += 4 * o.size();
        std::size_t i = 0;
        for (const auto& m : o) {
          put_offset(table + 4 * i++, at_ - node);
          key(m.key());
          value(m.value());
        }
        return;
      }
    }
  }

 private:
  static std::uint32_t header(json::kind k, std::uint32_t payload) {
    return static_cast<std::uint32_t>(k) | (payload << packed_detail::kKindBits);
  }
  void put_word(std::uint32_t w) {
    std::memcpy(out_ + at_, &w, 4);
    at_ += 4;
  }
  void put_offset(std::size_t where, std::size_t offset) {
    const auto w = checked_payload(offset, "an offset");
    std::memcpy(out_ + where, &w, 4);
  }
  template <class T>
  void number(json::kind k, T n) {
    put_word(header(k, 0));
    std::memcpy(out_ + at_, &n, sizeof n);
    at_ += sizeof n;
  }
  void key(std::string_view k) {
    if (const auto id = intern_id(k)) {
      put_word(header(json::kind::string, packed_detail::kInternedKey | *id));
    } else if (k.size() >= packed_detail::kInternedKey) {
      throw std::length_error("packed value: a key of " + std::to_string(k.size()) +
                              " bytes is longer than the packed format holds");
    } else {
      string(k);
    }
  }
  void string(std::string_view s) {
    put_word(header(json::kind::string, checked_payload(s.size(), "a string's length")));
    std::memcpy(out_ + at_, s.data(), s.size());
    const std::size_t end = at_ - 4 + string_node_size(s.size());
    std::memset(out_ + at_ + s.size(), 0, end - at_ - s.size());  // the NUL and padding
    at_ = end;
  }

  char* out_;
  std::size_t at_ = 0;
};

template <class Value>
bool numbers_equal(const PackedValue& a, const Value& b) {
  // As Boost.JSON compares numbers: int64 and uint64 by value, doubles only with doubles.
  if (a.is_double() || b.is_double())
    return a.is_double() && b.is_double() && a.get_double() == b.get_double();
  if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
  if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
  const auto signed_v = a.is_int64() ? a.get_int64() : b.get_int64();
  const auto unsigned_v = a.is_uint64() ? a.get_uint64() : b.get_uint64();
  return signed_v >= 0 && static_cast<std::uint64_t>(signed_v) == unsigned_v;
}

}  // namespace

const PackedObject& PackedValue::as_object() const {
  if (!is_object()) wrong_kind(json::kind::object, kind());
  return get_object();
}
const PackedArray& PackedValue::as_array() const {
  if (!is_array()) wrong_kind(json::kind::array, kind());
  return get_array();
}
const PackedString& PackedValue::as_string() const {
  if (!is_string()) wrong_kind(json::kind::string, kind());
  return get_string();
}
bool PackedValue::as_bool() const {
  if (!is_bool()) wrong_kind(json::kind::bool_, kind());
  return get_bool();
}
std::int64_t PackedValue::as_int64() const {
  if (!is_int64()) wrong_kind(json::kind::int64, kind());
  return get_int64();
}

template <class T>
T PackedValue::to_number(std::error_code& ec) const {
  json::value scalar;
  switch (kind()) {
    case json::kind::int64:
      scalar = get_int64();
      break;
    case json::kind::uint64:
      scalar = get_uint64();
      break;
    case json::kind::double_:
      scalar = get_double();
      break;
    default:
      break;  // not a number: Boost.JSON's to_number reports it
  }
  boost::system::error_code bec;
  T out = scalar.to_number<T>(bec);
  ec = bec;
  return out;
}
template std::int64_t PackedValue::to_number<std::int64_t>(std::error_code&) const;
template std::uint64_t PackedValue::to_number<std::uint64_t>(std::error_code&) const;
template std::int32_t PackedValue::to_number<std::int32_t>(std::error_code&) const;
template std::uint32_t PackedValue::to_number<std::uint32_t>(std::error_code&) const;
template double PackedValue::to_number<double>(std::error_code&) const;

const PackedValue* PackedValue::find_pointer(std::string_view pointer, std::error_code& ec) const {
  ec.clear();
  const PackedValue* at = this;
  if (pointer.empty()) return at;
  if (pointer.front() != '/') {
    ec = std::make_error_code(std::errc::invalid_argument);
    return nullptr;
  }
  std::string token;
  std::size_t pos = 1;
  while (true) {
    const std::size_t end = std::min(pointer.find('/', pos), pointer.size());
    token.clear();
    for (std::size_t i = pos; i < end; ++i) {
      if (pointer[i] != '~') {
        token += pointer[i];
      } else if (i + 1 < end && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        token += pointer[++i] == '0' ? '~' : '/';
      } else {
        ec = std::make_error_code(std::errc::invalid_argument);
        return nullptr;
      }
    }
    if (const auto* o = at->if_object()) {
      at = o->if_contains(token);
    } else if (const auto* a = at->if_array()) {
      std::size_t index = 0;
      bool numeric = !token.empty() && (token == "0" || token.front() != '0');
      for (char c : token) {
        if (c < '0' || c > '9' || index > (std::size_t{1} << 40)) numeric = false;
        if (numeric) index = index * 10 + static_cast<std::size_t>(c - '0');
      }
      at = numeric ? a->if_contains(index) : nullptr;
    } else {
      at = nullptr;
    }
    if (at == nullptr) {
      ec = std::make_error_code(std::errc::no_such_file_or_directory);
      return nullptr;
    }
    if (end == pointer.size()) return at;
    pos = end + 1;
  }
}

json::value PackedValue::to_value(json::storage_ptr sp) const {
  switch (kind()) {
    case json::kind::null:
      return json::value(nullptr, sp);
    case json::kind::bool_:
      return json::value(get_bool(), sp);
    case json::kind::int64:
      return json::value(get_int64(), sp);
    case json::kind::uint64:
      return json::value(get_uint64(), sp);
    case json::kind::double_:
      return json::value(get_double(), sp);
    case json::kind::string:
      return json::value(json::string(get_string().subview(), sp));
    case json::kind::array: {
      json::array a(sp);
      a.reserve(get_array().size());
      for (const auto& e : get_array()) a.push_back(e.to_value(sp));
      return json::value(std::move(a));
    }
    case json::kind::object: {
      json::object o(get_object().size(), sp);
      for (const auto& m : get_object()) o.emplace(m.key(), m.value().to_value(sp));
      return json::value(std::move(o));
    }
  }
  return json::value(nullptr, sp);
}

std::string_view packed_detail::interned_key(std::uint32_t id) { return kInternedKeys[id]; }

const PackedValue& PackedArray::at(std::size_t i) const {
  if (i >= size()) {
    throw std::out_of_range("packed array: index " + std::to_string(i) + " past its " +
                            std::to_string(size()) + " elements");
  }
  return (*this)[i];
}

PackedObject::iterator PackedObject::find(std::string_view key) const {
  const std::size_t n = size();
  for (std::size_t i = 0; i < n; ++i) {
    if (member(i).key() == key) return {this, i};
  }
  return end();
}

const PackedValue& PackedObject::at(std::string_view key) const {
  if (const auto* v = if_contains(key)) return *v;
  throw std::out_of_range("packed object: no member \"" + std::string(key) + "\"");
}

namespace {

// Deep equality of a packed value with a DOM or another packed value.
template <class Value>
bool equal(const PackedValue& a, const Value& b) {
  if (a.is_number() && b.is_number()) return numbers_equal(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::null:
      return true;
    case json::kind::bool_:
      return a.get_bool() == b.get_bool();
    case json::kind::string:
      return a.get_string().subview() == std::string_view(b.get_string());
    case json::kind::array: {
      const auto& pa = a.get_array();
      const auto& ba = b.get_array();
      if (pa.size() != ba.size()) return false;
      for (std::size_t i = 0; i < pa.size(); ++i) {
        if (!equal(pa[i], ba[i])) return false;
      }
      return true;
    }
    case json::kind::object: {
      const auto& po = a.get_object();
      const auto& bo = b.get_object();
      if (po.size() != bo.size()) return false;
      for (const auto& m : po) {
        const auto* other = bo.if_contains(m.key());
        if (other == nullptr || !equal(m.value(), *other)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

bool operator==(const PackedValue& a, const json::value& b) { return equal(a, b); }
bool operator==(const PackedValue& a, const PackedValue& b) { return &a == &b || equal(a, b); }

std::size_t packed_size(const json::value& value) { return node_size(value); }
std::size_t packed_size(const PackedValue& value) { return node_size(value); }

PackedPtr pack(const json::value& value) {
  const std::size_t size = node_size(value);
  // One allocation for the control block and the words; aliasing gives the root's type.
  auto block = std::make_shared_for_overwrite<std::uint32_t[]>(size / 4);
  Writer w(reinterpret_cast<char*>(block.get()));
  w.value(value);
  return PackedPtr(block, reinterpret_cast<const PackedValue*>(block.get()));
}

}  // namespace kstack::informer
