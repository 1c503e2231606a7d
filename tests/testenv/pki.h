// The test control plane's PKI, generated fresh per control plane with the openssl CLI:
// a CA, the apiserver's serving certificate and the service-account signing key pair.
#pragma once

#include <filesystem>
#include <string>

#include <tl/expected.hpp>

namespace kstack::testenv {

struct Pki {
  std::filesystem::path ca_cert;  // also --client-ca-file, --root-ca-file, cluster signing
  std::filesystem::path ca_key;
  std::filesystem::path serving_cert;  // SANs: kServingSans
  std::filesystem::path serving_key;
  std::filesystem::path sa_key;  // RSA private key (--service-account-signing-key-file)
  std::filesystem::path sa_pub;  // its public key (--service-account-key-file)
  std::string ca_pem;
};

// Names the apiserver answers to: loopback, and the in-cluster names/ClusterIP of the
// `kubernetes` Service (first address of --service-cluster-ip-range=10.0.0.0/16).
inline constexpr const char* kServingSans =
    "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
    "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.0.0.1";

// Writes the PKI into `dir` (created if needed).
tl::expected<Pki, std::string> make_pki(const std::filesystem::path& dir);

}  // namespace kstack::testenv
