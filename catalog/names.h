// Names of the objects kstack derives from a Stack under the CrNameRole scheme (docs/spec.md §4):
// headless Service `s`, StatefulSet `s-<role>`, pods and member Services `s-<role>-<ordinal>`,
// PVCs `data-s-<role>-<ordinal>`. One place, so the admission length checks and the
// reconciler can never disagree. (The UID scheme's names are fixed-length and need no check.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kstack::catalog {

// The volumeClaimTemplate name; PVCs are `<template>-<pod>`.
inline constexpr std::string_view kDataVolumeName = "data";

// Kubernetes limits the derived names must respect.
inline constexpr std::size_t kMaxDnsLabel = 63;       // Services, pod hostnames, label values
inline constexpr std::size_t kMaxDnsSubdomain = 253;  // PVCs and most object names
// A StatefulSet labels its pods controller-revision-hash=<name>-<hash of up to 10 chars>,
// a label value (≤ 63): names longer than 52 make every pod creation fail.
inline constexpr std::size_t kMaxStatefulSetName = 52;

std::string headless_service_name(std::string_view stack_name);
std::string statefulset_name(std::string_view stack_name, std::string_view role_id);
// Pod and member Service share the name.
std::string member_name(std::string_view stack_name, std::string_view role_id,
                        std::int64_t ordinal);
std::string pvc_name(std::string_view stack_name, std::string_view role_id, std::int64_t ordinal);

}  // namespace kstack::catalog
