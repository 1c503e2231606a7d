// RulesHandler: kstack's AdmissionHandler. Dispatches on kind, subresource and operation to
// the pure rules in this folder, reading the catalog (AppTypes, Stacks, KStackConfig,
// StorageClasses) from the operator's watch caches through catalog::Catalog.
//
// validate(): 403 Forbidden when the request writes controller-owned fields
// (owned_fields.h), else 422 Invalid when any rule is violated; the message joins every
// problem with "; ", each naming its field path. Warnings (warnings.h) ride along.
// UPDATEs that leave the spec unchanged only get the owned-field check, so metadata edits
// (and the operator's finalizer removal) work even when the catalog has moved on.
// DELETE of Stacks and KStackConfig is always allowed (finalizers are the operator's job);
// DELETE of an AppType in use is refused, also in a collection DELETE, whose reviews carry an
// empty request.name (the name is then read from oldObject.metadata). Unknown kinds and
// CONNECT are allowed.
//
// mutate(): the defaulting patch (defaulting.h) for Stack CREATE/UPDATE; never denies.
//
// Thread-safe (no mutable state; the catalog's stores lock internally) and never throws: an
// unexpected exception becomes a 500 denial. Rules have no side effects, so dry-run requests
// need no special handling.
#pragma once

#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "validator/admission.h"
#include "validator/rules/owned_fields.h"

namespace kstack::validator {

// What the rules decided about one request, before it becomes an AdmissionResponse.
struct Verdict {
  Violations forbidden;  // controller-owned fields written by someone else (403)
  Violations invalid;    // rule violations (422)
  std::vector<std::string> warnings;
  bool allowed() const { return forbidden.empty() && invalid.empty(); }
};

struct RulesOptions {
  // request.userInfo.username of the operator (its service account).
  std::string operator_username = std::string(kDefaultOperatorUsername);
  // Where the operator reconciles Stacks (its --watch-namespace; "" = everywhere): only there
  // does mutation add the cleanup finalizer, which only a running controller removes.
  std::string finalizer_namespace;
};

class RulesHandler : public AdmissionHandler {
 public:
  // `catalog` must outlive the handler.
  explicit RulesHandler(const catalog::Catalog& catalog, RulesOptions options = {});

  AdmissionResponse validate(const AdmissionRequest& request) override;
  AdmissionResponse mutate(const AdmissionRequest& request) override;

  // The structured decision behind validate() (kstack validate prints it line by line).
  // Unlike validate() it may throw (std::bad_alloc).
  Verdict evaluate(const AdmissionRequest& request) const;

 private:
  AdmissionResponse do_validate(const AdmissionRequest& request) const;
  AdmissionResponse do_mutate(const AdmissionRequest& request) const;
  Violations validate_apptype_request(const AdmissionRequest& request) const;
  // `stack` is request.object decoded, with the problems decoding found in `decode_errors`.
  Violations validate_stack_request(const AdmissionRequest& request, const catalog::Stack& stack,
                                    const Violations& decode_errors) const;

  const catalog::Catalog& catalog_;
  RulesOptions options_;
};

}  // namespace kstack::validator
