#include "validator/admission.h"

namespace kstack::validator {

AdmissionResponse AdmissionResponse::deny(int code, std::string reason, std::string message) {
  AdmissionResponse r;
  r.allowed = false;
  r.code = code;
  r.reason = std::move(reason);
  r.message = std::move(message);
  return r;
}

}  // namespace kstack::validator
