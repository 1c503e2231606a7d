// How `kstack apply` (and delete, scale) tells people why the API server refused a write: every
// field error on its own line. The API server passes an admission webhook's denial on as one
// message, `admission webhook "validate.kstack.io" denied the request: <e1>; <e2>; ...`, with
// no details.causes (kstack's webhook joins its field errors with "; ", catalog::join); a 422
// Invalid from the CRD schema carries details.causes, one per field.
#pragma once

#include <string>
#include <vector>

#include "kube/error.h"

namespace kstack::cmd {

struct ErrorReport {
  // Refused for what the object says (admission denial or 422 Invalid): the user must change
  // the manifest, exit code 2. Otherwise (connection, permission, server trouble) exit code 1.
  bool denied = false;
  std::string headline;             // the refusal without the field errors
  std::vector<std::string> fields;  // "<field>: <reason>", one per field error
};

ErrorReport explain(const kube::Error& error);

// Splits a webhook's joined message at each "; " that starts another "<field path>: " error.
std::vector<std::string> split_field_errors(const std::string& joined);

}  // namespace kstack::cmd
