// Names of the objects kstack derives from a Stack (docs/spec.md §4), under its naming scheme:
//  - CrNameRole: headless Service `s`, StatefulSet `s-<role>`, pods and member Services
//    `s-<role>-<ordinal>`, PVCs `data-s-<role>-<ordinal>`;
//  - UID (KubeDirector's generated names, made deterministic): headless Service
//    `kshs-<h(uid)>`, StatefulSet `ksss-<h(uid, role)>`, pods and member Services
//    `<StatefulSet>-<ordinal>`, PVCs `data-<pod>`, where h is 10 hex digits of a 64-bit
//    FNV-1a hash. The names are short and fixed-length whatever the Stack's name.
// One place, so the admission length checks and the reconciler can never disagree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kstack::catalog {

struct Stack;
struct KStackConfig;

// The volumeClaimTemplate name; PVCs are `<template>-<pod>`.
inline constexpr std::string_view kDataVolumeName = "data";

// Kubernetes limits the derived names must respect.
inline constexpr std::size_t kMaxDnsLabel = 63;       // Services, pod hostnames, label values
inline constexpr std::size_t kMaxDnsSubdomain = 253;  // PVCs and most object names
// A StatefulSet labels its pods controller-revision-hash=<name>-<hash of up to 10 chars>,
// a label value (≤ 63): names longer than 52 make every pod creation fail.
inline constexpr std::size_t kMaxStatefulSetName = 52;

// CrNameRole names, from the Stack's name.
std::string headless_service_name(std::string_view stack_name);
std::string statefulset_name(std::string_view stack_name, std::string_view role_id);
// Pod and member Service share the name.
std::string member_name(std::string_view stack_name, std::string_view role_id,
                        std::int64_t ordinal);
std::string pvc_name(std::string_view stack_name, std::string_view role_id, std::int64_t ordinal);

// 10 lower-case hex digits of the 64-bit FNV-1a hash of `text` (stable across builds).
std::string short_hash(std::string_view text);

// The names one Stack's objects get under its effective naming scheme. Everything that builds
// or checks an owned object's name goes through this.
class ObjectNames {
 public:
  // uid_scheme false: CrNameRole from `stack_name`; true: UID names from `uid`.
  ObjectNames(bool uid_scheme, std::string stack_name, std::string uid);
  // The Stack's effective scheme (spec.namingScheme, else the KStackConfig's default, else
  // CrNameRole); config may be null.
  static ObjectNames of(const Stack& stack, const KStackConfig* config);

  bool uid_scheme() const { return uid_scheme_; }
  std::string headless_service() const;
  std::string statefulset(std::string_view role_id) const;
  std::string member(std::string_view role_id, std::int64_t ordinal) const;
  std::string pvc(std::string_view role_id, std::int64_t ordinal) const;

 private:
  bool uid_scheme_;
  std::string stack_name_;
  std::string uid_;
};

}  // namespace kstack::catalog
