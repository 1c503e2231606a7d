// The webhook's TLS, managed by the operator itself: a self-signed CA and a serving certificate
// for the webhook Service (OpenSSL 3, ECDSA P-256), kept in a kubernetes.io/tls Secret that
// every replica shares, renewed well before expiry and handed to the running server without a
// restart, and the CA written into the `caBundle` of kstack's webhook configurations. Also the
// builder of those configurations (the operator, the deploy manifests' generator and the tests
// use the same rules).
//
//   pki.cpp                    certificate generation, parsing and verification (OpenSSL)
//   webhook_configuration.cpp  Validating/MutatingWebhookConfiguration JSON
//   certs.cpp                  the renewal decision, and CertManager: the Secret, caBundle
//                              injection, the renewal loop
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "kube/client.h"
#include "kube/error.h"
#include "kube/resource.h"
#include "kube/transport.h"

namespace kstack::validator {

// ---------------------------------------------------------------------------------------------
// Defaults (named once; the operator's flags default to these).

inline constexpr std::chrono::seconds kDefaultCaLifetime{10LL * 365 * 24 * 3600};  // 10 years
inline constexpr std::chrono::seconds kDefaultServingLifetime{365LL * 24 * 3600};  // 1 year
// Renew at two thirds of a certificate's lifetime, as cert-manager's default renewBefore.
inline constexpr double kDefaultRenewFraction = 2.0 / 3.0;
// notBefore is moved back by this much (at most a tenth of the lifetime) for clock skew.
inline constexpr std::chrono::seconds kMaxNotBeforeBackdate{60};
inline constexpr const char* kDefaultTlsSecretName = "kstack-webhook-tls";
inline constexpr const char* kDefaultWebhookServiceName = "kstack-webhook";
inline constexpr const char* kDefaultValidatingWebhookConfigurationName =
    "kstack-validating-webhook";
inline constexpr const char* kDefaultMutatingWebhookConfigurationName = "kstack-mutating-webhook";
inline constexpr std::uint16_t kDefaultWebhookPort = 9443;
inline constexpr int kWebhookTimeoutSeconds = 10;
// The Secret is read again at least this often, to pick up a renewal by another replica.
inline constexpr std::chrono::milliseconds kDefaultCertRecheckInterval{30'000};
// Never loop faster than this, even when a renewal is overdue.
inline constexpr std::chrono::milliseconds kDefaultMinCertRecheckDelay{1'000};
// A webhook configuration that does not exist yet (the manifests create it) is looked for again
// this often.
inline constexpr std::chrono::milliseconds kMissingWebhookConfigurationRetry{5'000};

// Keys of the Secret (type kubernetes.io/tls). ca.crt holds the CA bundle clients should trust:
// the current CA first, then older CAs still valid (overlap during a CA rotation); ca.key is
// the current CA's key, stored so any replica can renew.
inline constexpr const char* kTlsCertKey = "tls.crt";
inline constexpr const char* kTlsPrivateKeyKey = "tls.key";
inline constexpr const char* kCaCertKey = "ca.crt";
inline constexpr const char* kCaPrivateKeyKey = "ca.key";

// admissionregistration.k8s.io/v1, cluster-scoped.
extern const kube::ResourceType kValidatingWebhookConfigurations;
extern const kube::ResourceType kMutatingWebhookConfigurations;

// ---------------------------------------------------------------------------------------------
// Certificates (pki.cpp). Keys are ECDSA P-256, signatures SHA-256, serials 159 random bits,
// PEM everywhere (keys as PKCS#8). No function here logs, and errors never contain key material.

struct CertificateAndKey {
  std::string cert_pem;
  std::string key_pem;
};

struct CaOptions {
  std::string common_name = "kstack-webhook-ca";
  std::chrono::seconds lifetime = kDefaultCaLifetime;
  // The issue time; default now. (Tests pass a time to check renewal decisions.)
  std::optional<std::chrono::system_clock::time_point> issued_at;
};

struct ServingCertificateOptions {
  std::string common_name;                // default: the first DNS name
  std::vector<std::string> dns_names;     // subjectAltName DNS entries
  std::vector<std::string> ip_addresses;  // subjectAltName IP entries (v4 or v6 literals)
  std::chrono::seconds lifetime = kDefaultServingLifetime;  // cut to the CA's notAfter
  std::optional<std::chrono::system_clock::time_point> issued_at;
};

// A self-signed CA: basicConstraints CA:TRUE (critical), keyUsage keyCertSign + cRLSign.
kube::Result<CertificateAndKey> generate_ca(const CaOptions& options);

// A serving certificate signed by `ca`: CA:FALSE, digitalSignature, extendedKeyUsage serverAuth,
// the given SANs. Fails with kInvalidArgument when there is no SAN or one does not parse.
kube::Result<CertificateAndKey> generate_serving_certificate(
    const CertificateAndKey& ca, const ServingCertificateOptions& options);

// The names a Service is reached by: <svc>, <svc>.<ns>, <svc>.<ns>.svc,
// <svc>.<ns>.svc.cluster.local.
std::vector<std::string> service_dns_names(std::string_view service, std::string_view ns);

struct CertificateInfo {
  std::string subject_common_name;
  std::string serial_hex;          // uppercase hex, as `openssl x509 -serial`
  std::string sha256_fingerprint;  // lowercase hex of the DER's SHA-256
  std::chrono::system_clock::time_point not_before;
  std::chrono::system_clock::time_point not_after;
  bool is_ca = false;
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_addresses;  // canonical text form
  std::string pem;                        // this certificate alone

  std::chrono::seconds lifetime() const;
  // not_before + fraction × lifetime.
  std::chrono::system_clock::time_point renew_at(double fraction) const;
};

// The first certificate of `pem`.
kube::Result<CertificateInfo> parse_certificate(std::string_view pem);
// Every certificate of a bundle (at least one).
kube::Result<std::vector<CertificateInfo>> parse_certificates(std::string_view pem);
// Succeeds when `key_pem` is the private key of the first certificate of `cert_pem`.
kube::Result<void> check_key_pair(std::string_view cert_pem, std::string_view key_pem);
// Verifies the first certificate of `cert_pem` as a TLS server certificate that chains to one of
// the CAs in `ca_bundle_pem`, valid at `at`. Names are not checked (see CertificateInfo).
kube::Result<void> verify_server_certificate(std::string_view cert_pem,
                                             std::string_view ca_bundle_pem,
                                             std::chrono::system_clock::time_point at);

// ---------------------------------------------------------------------------------------------
// The renewal decision (certs.cpp), pure apart from key generation: what the Secret should hold.

// What the Secret holds (PEM, decoded).
struct TlsMaterial {
  std::string ca_bundle_pem;  // ca.crt: current CA first, then older CAs still trusted
  std::string ca_key_pem;     // ca.key: the current CA's key
  std::string cert_pem;       // tls.crt
  std::string key_pem;        // tls.key
  bool operator==(const TlsMaterial&) const = default;
};

struct CertificatePolicy {
  std::vector<std::string> dns_names;     // the serving certificate must cover all of these
  std::vector<std::string> ip_addresses;  // and these
  std::chrono::seconds ca_lifetime = kDefaultCaLifetime;
  std::chrono::seconds serving_lifetime = kDefaultServingLifetime;
  double renew_fraction = kDefaultRenewFraction;
};

struct Renewal {
  TlsMaterial material;
  bool ca_rotated = false;      // a new CA was created (the first one, or a rotation)
  bool serving_issued = false;  // a new serving certificate was issued
  std::string reason;           // for the log: why, e.g. "serving certificate due for renewal"
};

// Decides at `now` whether `current` must change, and computes the replacement:
//  - the CA is replaced when it is missing, unusable (no matching key, expired) or past its
//    renewal time; still-valid older CAs stay in the bundle so certificates they signed keep
//    verifying, and are dropped once expired;
//  - the serving certificate is re-issued when it is missing, does not match its key, does not
//    verify against the bundle, misses a required name, or is past its renewal time. When the
//    CA rotates in the same step, it is signed by the outgoing CA (if still usable): a new CA
//    signs only after it has been published in the bundle, so clients never see a certificate
//    from a CA they do not trust yet.
// Returns nullopt when nothing is due.
kube::Result<std::optional<Renewal>> renew_if_due(const TlsMaterial& current,
                                                  const CertificatePolicy& policy,
                                                  std::chrono::system_clock::time_point now);

// When renew_if_due will next have something to do for `material` (a renewal, or an old CA to
// drop); `now` if the material is unusable.
std::chrono::system_clock::time_point next_renewal(const TlsMaterial& material,
                                                   double renew_fraction,
                                                   std::chrono::system_clock::time_point now);

// ---------------------------------------------------------------------------------------------
// Webhook configurations (webhook_configuration.cpp): kstack's kinds only (apptypes, stacks,
// stacks/status, kstackconfigs in kstack.io/v1beta1), never core resources, so a kstack outage
// cannot block the cluster.

struct WebhookConfigurationOptions {
  std::string validating_name = kDefaultValidatingWebhookConfigurationName;
  std::string mutating_name = kDefaultMutatingWebhookConfigurationName;
  // clientConfig.service, used when `url_base` is empty.
  std::string service_namespace;
  std::string service_name = kDefaultWebhookServiceName;
  std::uint16_t service_port = kDefaultWebhookPort;
  // clientConfig.url = url_base + "/validate" | "/mutate", e.g. "https://127.0.0.1:9443" (local
  // runs and tests).
  std::string url_base;
  std::string ca_bundle_pem;  // written base64-encoded into every webhook's caBundle
  std::string failure_policy = "Fail";
  int timeout_seconds = kWebhookTimeoutSeconds;
};

// apptypes, stacks, stacks/status, kstackconfigs on CREATE, UPDATE, DELETE → POST
// <...>/validate, webhook "validate.kstack.io".
boost::json::value validating_webhook_configuration(const WebhookConfigurationOptions& options);
// Stacks (not stacks/status) on CREATE, UPDATE → POST <...>/mutate, webhook "mutate.kstack.io":
// only what the defaulting touches. deploy/webhook.yaml holds the same rules.
boost::json::value mutating_webhook_configuration(const WebhookConfigurationOptions& options);

// Standard base64 (with padding) as Kubernetes stores `[]byte` fields, and back.
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

// ---------------------------------------------------------------------------------------------
// CertManager (certs.cpp).

// Hands a new serving certificate to the server (AdmissionServer::set_certificate).
using CertificateCallback =
    std::function<kube::Result<void>(const std::string& cert_pem, const std::string& key_pem)>;

struct CertManagerOptions {
  std::string namespace_name;  // of the Secret and the webhook Service; required
  std::string secret_name = kDefaultTlsSecretName;
  std::string service_name = kDefaultWebhookServiceName;
  // More SANs for the serving certificate; IP literals become IP SANs, the rest DNS names.
  std::vector<std::string> extra_sans;
  std::chrono::seconds ca_lifetime = kDefaultCaLifetime;
  std::chrono::seconds serving_lifetime = kDefaultServingLifetime;
  double renew_fraction = kDefaultRenewFraction;
  // Configurations whose webhooks get the caBundle; an empty name is skipped.
  std::string validating_webhook_configuration = kDefaultValidatingWebhookConfigurationName;
  std::string mutating_webhook_configuration = kDefaultMutatingWebhookConfigurationName;
  // Called from ensure() with the serving certificate when it differs from the last one handed
  // over (so on the first pass); a failure fails the pass and the hand-over is tried again.
  CertificateCallback on_certificate;
  // run(): the Secret is re-read at least this often, and never more often than the minimum.
  std::chrono::milliseconds recheck_interval = kDefaultCertRecheckInterval;
  std::chrono::milliseconds min_recheck_delay = kDefaultMinCertRecheckDelay;
};

struct CertStatus {
  CertificateInfo serving;
  std::vector<CertificateInfo> cas;  // the bundle, current CA first
  std::chrono::system_clock::time_point next_renewal;
  bool written = false;    // this pass created or renewed the Secret
  bool delivered = false;  // this pass handed a (new) certificate to on_certificate
  // Named configurations that do not exist yet; looked for again on the next ensure().
  std::vector<std::string> missing_webhook_configurations;
};

class CertManager {
 public:
  CertManager(std::shared_ptr<kube::Client> client, CertManagerOptions options);

  // One pass: reads the Secret; creates it, or renews what is due, with writes guarded so that
  // replicas never overwrite each other (the loser of a race adopts the winner's material);
  // writes the CA bundle into every webhook of both configurations where it differs (before the
  // hand-over, so a new CA is trusted before anything it signed is served); then hands the
  // serving certificate to on_certificate. A pass with nothing to do makes no write. A missing
  // configuration is not an error (see CertStatus). Thread-safe (passes are serialized).
  kube::Result<CertStatus> ensure();

  // ensure() until `cancel` fires: again at the next renewal time, and at least every
  // recheck_interval (another replica may have renewed); errors are retried with backoff.
  void run(const kube::CancelToken& cancel);

  // The last successful pass, if any.
  std::optional<CertStatus> last_status() const;

 private:
  kube::Result<TlsMaterial> reconcile_secret(bool& written);
  kube::Result<bool> deliver(const TlsMaterial& material);
  kube::Result<std::vector<std::string>> inject_ca_bundle(const std::string& ca_bundle_pem);
  kube::Result<bool> inject_into(const kube::ResourceType& type, const std::string& name,
                                 const std::string& ca_bundle_b64);
  std::chrono::milliseconds delay_after(const CertStatus& status) const;

  std::shared_ptr<kube::Client> client_;
  CertManagerOptions options_;
  CertificatePolicy policy_;

  std::mutex pass_mu_;           // one ensure() at a time
  CertificateAndKey delivered_;  // last handed to on_certificate
  mutable std::mutex status_mu_;
  std::optional<CertStatus> last_status_;
};

}  // namespace kstack::validator
