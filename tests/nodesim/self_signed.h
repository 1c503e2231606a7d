// A self-signed serving certificate for the exec endpoint, generated at start. The API server
// does not verify kubelet certificates unless it runs with --kubelet-certificate-authority.
#pragma once

#include <string>
#include <vector>

#include <tl/expected.hpp>

namespace kstack::nodesim {

struct CertificatePem {
  std::string cert;
  std::string key;
};

// ECDSA P-256, valid for a year, CN kstack-nodesim, with the given SANs ("IP:127.0.0.1",
// "DNS:localhost", ...).
tl::expected<CertificatePem, std::string> self_signed_certificate(
    const std::vector<std::string>& sans);

}  // namespace kstack::nodesim
