// The admission webhook as one component, run by every operator replica: informers over
// AppTypes, Stacks, the KStackConfig and StorageClasses feed the Catalog the rules read; the
// HTTPS server answers /validate and /mutate; the CertManager keeps its serving certificate
// (and the webhook configurations' caBundle) current — or certificate files are watched.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/error.h"
#include "validator/server.h"

namespace kstack::informer {
class InformerFactory;
}

namespace kstack::validator {

struct WebhookOptions {
  std::string system_namespace = "kstack-system";  // the operator's namespace
  std::string operator_username;                   // empty: the rules' default identity
  std::string watch_namespace;  // the controller's ("" = all): new Stacks get its finalizer there
  ServerOptions server;
  // Self-managed certificates (default) ...
  std::vector<std::string> extra_sans;       // e.g. 127.0.0.1 for clientConfig.url
  std::chrono::seconds serving_lifetime{0};  // 0 = the CertManager's default
  std::string validating_configuration;      // empty = the CertManager's default name
  std::string mutating_configuration;
  // ... or files from outside (cert-manager); both set = files, reloaded when they change.
  std::string cert_file;
  std::string key_file;
  std::chrono::milliseconds informer_sync_timeout{60'000};
  // The process's shared caches (the operator's, also used by the controller; their owner
  // stops them after the webhook). Null: the webhook makes and stops its own.
  std::shared_ptr<informer::InformerFactory> informers;
};

class Webhook {
 public:
  virtual ~Webhook() = default;
  virtual std::uint16_t port() const = 0;
  // Caches synced and the server serving (for /readyz).
  virtual bool ready() const = 0;
  virtual ServerStats stats() const = 0;
  virtual void stop() = 0;
};

// Starts (or joins) the informers, waits for their first sync, obtains a certificate, starts
// serving.
kube::Result<std::unique_ptr<Webhook>> start_webhook(std::shared_ptr<kube::Client> client,
                                                     WebhookOptions options);

}  // namespace kstack::validator
