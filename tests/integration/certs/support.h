// Helpers of the certs integration tests (header-only: the folder's *_test.cpp files are globbed
// into one binary): webhook configurations that nothing calls, counting writes, reading what
// the cluster holds, and a recorder of the certificates handed to the server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "tests/integration/kube/client_fixture.h"
#include "validator/certs.h"

namespace kstack::validator::testing {

using namespace std::chrono_literals;

// Writes the client made so far (POST, PUT, PATCH, DELETE, any result).
inline std::uint64_t writes(kube::Client& client) {
  std::uint64_t n = 0;
  for (const auto& [key, count] : client.metrics().snapshot()) {
    const auto& verb = key.first;
    if (verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "DELETE") n += count;
  }
  return n;
}

// Names of the cluster-scoped configurations of one test (the namespace makes them unique).
struct WebhookNames {
  std::string validating;
  std::string mutating;
};

inline WebhookNames webhook_names(const std::string& ns) {
  return {ns + "-validating", ns + "-mutating"};
}

// Creates both configurations with an empty caBundle and a URL on a port nobody serves. They
// only match kstack.io kinds, which these tests never write; failurePolicy Ignore besides.
inline void create_webhook_configurations(kube::Client& client, const WebhookNames& names) {
  WebhookConfigurationOptions o;
  o.validating_name = names.validating;
  o.mutating_name = names.mutating;
  o.url_base = "https://127.0.0.1:1";
  o.failure_policy = "Ignore";
  auto v = client.create(kValidatingWebhookConfigurations, "", validating_webhook_configuration(o));
  ASSERT_TRUE(v) << v.error().to_string();
  auto m = client.create(kMutatingWebhookConfigurations, "", mutating_webhook_configuration(o));
  ASSERT_TRUE(m) << m.error().to_string();
}

// The decoded caBundle of every webhook of a configuration ("" where there is none).
inline std::vector<std::string> ca_bundles(kube::Client& client, const kube::ResourceType& type,
                                           const std::string& name) {
  std::vector<std::string> out;
  auto got = client.get(type, "", name);
  if (!got) {
    ADD_FAILURE() << "get " << name << ": " << got.error().to_string();
    return out;
  }
  for (const auto& hook : got->as_object().at("webhooks").as_array()) {
    const auto* cc = hook.as_object().if_contains("clientConfig");
    const auto* b = cc ? cc->as_object().if_contains("caBundle") : nullptr;
    out.push_back(b ? base64_decode(b->as_string()).value_or("<bad base64>") : std::string());
  }
  return out;
}

inline std::string secret_field(const boost::json::value& secret, const char* key) {
  const auto* data = secret.as_object().if_contains("data");
  const auto* v = data ? data->as_object().if_contains(key) : nullptr;
  return v ? base64_decode(v->as_string()).value_or("<bad base64>") : std::string();
}

inline boost::json::value get_secret(kube::Client& client, const std::string& ns,
                                     const std::string& name = kDefaultTlsSecretName) {
  auto got = client.get(kube::resources::kSecrets, ns, name);
  if (!got) throw std::runtime_error("get secret: " + got.error().to_string());
  return *got;
}

// Records what CertManager hands to the server; tests wait on it with a deadline.
class Deliveries {
 public:
  CertificateCallback callback() {
    return [this](const std::string& cert_pem, const std::string& key_pem) -> kube::Result<void> {
      if (auto ok = check_key_pair(cert_pem, key_pem); !ok) {
        ADD_FAILURE() << "delivered a certificate with the wrong key";
      }
      std::lock_guard lock(mu_);
      certs_.push_back(cert_pem);
      cv_.notify_all();
      return {};
    };
  }

  // Waits until at least `n` certificates were delivered; false at the deadline.
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return certs_.size() >= n; });
  }

  std::vector<std::string> certs() const {
    std::lock_guard lock(mu_);
    return certs_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> certs_;
};

inline std::string fingerprint(const std::string& cert_pem) {
  auto info = parse_certificate(cert_pem);
  return info ? info->sha256_fingerprint : std::string("<unparseable>");
}

}  // namespace kstack::validator::testing
