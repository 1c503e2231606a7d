// What a member's setup package reads (docs/spec.md §5): /etc/kstack/configmeta.json, in
// KubeDirector's layout so its setup scripts read it unchanged (reference §4.5), and
// /etc/kstack/env, the same facts as shell variables for plain `sh` scripts. Pure functions of the
// Stack, its AppType, the KStackConfig and the current members; no I/O.
//
// /etc/kstack/env — every line `export NAME='value'`, every value single-quoted (a `'` inside
// becomes `'\''`), so `$(...)`, backticks, `;`, quotes and newlines reach the script literally:
//   KSTACK_STACK             the Stack's name
//   KSTACK_NAMESPACE         its namespace
//   KSTACK_ROLE              this member's role id
//   KSTACK_POD               this member's pod name
//   KSTACK_NODE_ID           this member's node id (decimal)
//   KSTACK_FQDN              this member's FQDN, <pod>.<headless>.<namespace><clusterSvcDomainBase>
//   KSTACK_HOSTNAME          the same FQDN (as configmeta's node.hostname)
//   KSTACK_DOMAIN            <headless>.<namespace><clusterSvcDomainBase>
//   KSTACK_DISTRO_ID         the AppType's distroID
//   KSTACK_APP_VERSION       the AppType's version
//   KSTACK_ROLES             the role ids that have members, space-separated, in role order
//   KSTACK_ROLE_<R>_FQDNS    per role with members: its members' FQDNs, comma-separated
//   KSTACK_ROLE_<R>_COUNT    per role with members: how many
//   KSTACK_ROLE_<R>_NODE_IDS per role with members: node ids, comma-separated (FQDNS order)
//   KSTACK_SERVICE_<S>_PORT  per service of this member's role that has a port
//   KSTACK_CONFIG_<K>        per AppType config.configMeta entry
//   KSTACK_UPGRADE_FROM_APP, KSTACK_UPGRADE_FROM_REVISION
//                            only while the member is set up after moving to a new template
// <R>, <S>, <K> are the id or key upper-cased, every character other than A-Z and 0-9 turned
// into `_` (role "data-node" -> KSTACK_ROLE_DATA_NODE_FQDNS). configMeta keys that are empty or
// that map to the same name as another key are left out, as is any value holding a NUL byte
// (a shell variable cannot hold one); configmeta.json still has them all.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/model.h"

namespace kstack::reconciler {

struct ConfigMember {
  std::string role;
  std::string pod;
  std::string fqdn;  // <pod>.<member domain>, as DesiredState::fqdn
  std::int64_t node_id = 0;
};

// Given while a member is set up again after moving to a new template (docs/api.md
// "Upgrades"): the AppType and StatefulSet revision its last setup finished in. configmeta's
// node.upgrade_from and KSTACK_UPGRADE_FROM_APP / _REVISION carry them.
struct UpgradeFrom {
  std::string app;
  std::string revision;
};

struct ConfigInput {
  const catalog::Stack* stack = nullptr;  // never null
  const catalog::AppType* app = nullptr;  // never null
  const catalog::KStackConfig* config = nullptr;
  std::string headless_service;
  // Every current member of every role, grouped by role in role order, then by ordinal. Roles
  // are listed in the order they first appear here; a role with no member appears nowhere.
  std::vector<ConfigMember> members;
};

// The only nodegroup KubeDirector (and kstack) has.
inline constexpr std::string_view kNodegroupId = "1";
// Stands for an unknown flavor field, as KubeDirector.
inline constexpr std::string_view kNotApplicable = "n/a";

// <headless>.<namespace><clusterSvcDomainBase>: configmeta's node.domain.
std::string member_domain(const ConfigInput& in);

// The configmeta document for `self` (one of in.members). Documents for two members of the same
// input differ only in `node`.
boost::json::value configmeta(const ConfigInput& in, const ConfigMember& self,
                              const UpgradeFrom* upgrade = nullptr);
// configmeta serialised compactly with every object's keys sorted (as Go's encoding/json does
// for maps), so equal inputs give equal bytes; ends with a newline.
std::string configmeta_text(const ConfigInput& in, const ConfigMember& self,
                            const UpgradeFrom* upgrade = nullptr);
// The content of /etc/kstack/env for `self` (see the top of this file).
std::string env_file(const ConfigInput& in, const ConfigMember& self,
                     const UpgradeFrom* upgrade = nullptr);

// SHA-256 (lowercase hex) of what configmeta says about the stack — everything but `node` — and
// of the version of these file formats. Equal for every member of one input; it moves when
// membership, the app's settings or a role's flavor changes, so a member whose last written
// fingerprint differs needs its files rewritten. The env file holds nothing configmeta lacks.
std::string config_fingerprint(const ConfigInput& in);

// `value` as one POSIX sh word that expands to exactly `value`: '...' with ' as '\''.
std::string shell_quote(std::string_view value);
// An id as part of a variable name: ASCII letters upper-cased, anything else but digits -> '_'.
std::string env_name_part(std::string_view id);

}  // namespace kstack::reconciler
