// The renewal decision over the Secret's material, and CertManager: the webhook's TLS Secret
// (created, renewed, adopted from other replicas), the hand-over of the serving certificate to
// the running server, and the caBundle of kstack's webhook configurations. Key material is
// never logged.
#include "validator/certs.h"

#include <algorithm>
#include <climits>

#include <arpa/inet.h>
#include <boost/json.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "informer/backoff.h"

namespace kstack::validator {
namespace json = boost::json;

namespace {

using Clock = std::chrono::system_clock;
using kube::ErrorKind;

// Guarded writes that lose a race are retried after re-reading, at most this often per pass.
constexpr int kMaxWriteAttempts = 5;
// Wake a little after a renewal time so that the pass finds it due.
constexpr std::chrono::milliseconds kWakeSlack{20};

bool is_ip_literal(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

std::string data_field(const json::value& secret, const char* key) {
  const auto* data = secret.is_object() ? secret.get_object().if_contains("data") : nullptr;
  const auto* field = data && data->is_object() ? data->get_object().if_contains(key) : nullptr;
  if (field == nullptr || !field->is_string()) return {};
  return base64_decode(field->get_string()).value_or(std::string());
}

TlsMaterial read_material(const json::value& secret) {
  return TlsMaterial{data_field(secret, kCaCertKey), data_field(secret, kCaPrivateKeyKey),
                     data_field(secret, kTlsCertKey), data_field(secret, kTlsPrivateKeyKey)};
}

void write_material(json::object& data, const TlsMaterial& m) {
  data[kCaCertKey] = base64_encode(m.ca_bundle_pem);
  data[kCaPrivateKeyKey] = base64_encode(m.ca_key_pem);
  data[kTlsCertKey] = base64_encode(m.cert_pem);
  data[kTlsPrivateKeyKey] = base64_encode(m.key_pem);
}

json::value new_secret(const std::string& ns, const std::string& name, const TlsMaterial& m) {
  json::object data;
  write_material(data, m);
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata",
       json::object{{"name", name},
                    {"namespace", ns},
                    {"labels", json::object{{"app.kubernetes.io/name", "kstack"},
                                            {"app.kubernetes.io/component", "webhook-tls"}}}}},
      {"type", "kubernetes.io/tls"},
      {"data", std::move(data)}};
}

// A one-line description of the serving certificate for the log (public data only).
std::string describe_serving(const TlsMaterial& m) {
  auto info = parse_certificate(m.cert_pem);
  if (!info) return "unparseable";
  return fmt::format("serial={} not_after={:%FT%TZ}", info->serial_hex,
                     fmt::gmtime(Clock::to_time_t(info->not_after)));
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(std::max(n, 0)));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.empty()) return std::string();
  if (text.size() % 4 != 0 || text.size() > INT_MAX) return std::nullopt;
  std::size_t padding = 0;
  while (padding < 2 && text[text.size() - 1 - padding] == '=') ++padding;
  std::string out(text.size() / 4 * 3, '\0');
  // EVP_DecodeBlock counts the padding as zero bytes: drop them.
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || static_cast<std::size_t>(n) < padding) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The renewal decision.

namespace {

// The canonical text of an IP literal ("::0001" → "::1"), as CertificateInfo reports SANs.
std::string canonical_ip(const std::string& ip) {
  unsigned char buf[16];
  char text[INET6_ADDRSTRLEN] = {};
  const int family = inet_pton(AF_INET, ip.c_str(), buf) == 1    ? AF_INET
                     : inet_pton(AF_INET6, ip.c_str(), buf) == 1 ? AF_INET6
                                                                 : 0;
  if (family == 0 || inet_ntop(family, buf, text, sizeof text) == nullptr) return ip;
  return text;
}

// Why the serving certificate must be re-issued, or "" when it is good at `now`.
std::string serving_problem(const TlsMaterial& m, const std::string& ca_bundle_pem,
                            const CertificatePolicy& policy, Clock::time_point now) {
  auto info = parse_certificate(m.cert_pem);
  if (!info) return "no serving certificate";
  if (!check_key_pair(m.cert_pem, m.key_pem)) return "serving key missing or not matching";
  if (auto ok = verify_server_certificate(m.cert_pem, ca_bundle_pem, now); !ok) {
    return "serving certificate does not verify against the CA bundle (" + ok.error().message + ")";
  }
  for (const auto& dns : policy.dns_names) {
    if (std::find(info->dns_names.begin(), info->dns_names.end(), dns) == info->dns_names.end()) {
      return "serving certificate lacks DNS name " + dns;
    }
  }
  for (const auto& ip : policy.ip_addresses) {
    const auto& ips = info->ip_addresses;
    if (std::find(ips.begin(), ips.end(), canonical_ip(ip)) == ips.end()) {
      return "serving certificate lacks IP address " + ip;
    }
  }
  if (now >= info->renew_at(policy.renew_fraction)) return "serving certificate due for renewal";
  return {};
}

}  // namespace

kube::Result<std::optional<Renewal>> renew_if_due(const TlsMaterial& current,
                                                  const CertificatePolicy& policy,
                                                  Clock::time_point now) {
  Renewal out;
  out.material = current;
  std::vector<std::string> reasons;

  const auto bundle =
      parse_certificates(current.ca_bundle_pem).value_or(std::vector<CertificateInfo>{});
  const CertificateInfo* ca = bundle.empty() ? nullptr : &bundle.front();
  const bool ca_usable = ca != nullptr && ca->is_ca && now < ca->not_after &&
                         check_key_pair(ca->pem, current.ca_key_pem).has_value();
  const bool ca_due = ca_usable && now >= ca->renew_at(policy.renew_fraction);

  // Older CAs stay trusted until they expire: certificates they signed may still be served.
  std::string kept_cas;
  std::size_t kept = 0;
  for (std::size_t i = ca_usable && !ca_due ? 1 : 0; i < bundle.size(); ++i) {
    if (bundle[i].is_ca && now < bundle[i].not_after) {
      kept_cas += bundle[i].pem;
      ++kept;
    }
  }

  CertificateAndKey signer{ca_usable ? ca->pem : std::string(), current.ca_key_pem};
  std::optional<CertificateAndKey> outgoing;
  if (!ca_usable || ca_due) {
    reasons.emplace_back(ca_due ? "CA due for renewal"
                         : bundle.empty()
                             ? "no CA"
                             : "CA unusable (key missing or not matching, or expired)");
    if (ca_usable) outgoing = signer;
    CaOptions ca_options;
    ca_options.lifetime = policy.ca_lifetime;
    ca_options.issued_at = now;
    auto fresh = generate_ca(ca_options);
    if (!fresh) return tl::unexpected(std::move(fresh.error()));
    signer = std::move(*fresh);
    out.material.ca_bundle_pem = signer.cert_pem + kept_cas;
    out.material.ca_key_pem = signer.key_pem;
    out.ca_rotated = true;
  } else if (kept + 1 != bundle.size()) {
    reasons.emplace_back("expired CA dropped from the bundle");
    out.material.ca_bundle_pem = signer.cert_pem + kept_cas;
  }

  if (auto why = serving_problem(current, out.material.ca_bundle_pem, policy, now); !why.empty()) {
    reasons.push_back(std::move(why));
    ServingCertificateOptions serving;
    serving.dns_names = policy.dns_names;
    serving.ip_addresses = policy.ip_addresses;
    serving.lifetime = policy.serving_lifetime;
    serving.issued_at = now;
    // A CA new in this step signs nothing yet: it is not in anyone's caBundle so far.
    auto issued = generate_serving_certificate(outgoing.value_or(signer), serving);
    if (!issued) return tl::unexpected(std::move(issued.error()));
    out.material.cert_pem = std::move(issued->cert_pem);
    out.material.key_pem = std::move(issued->key_pem);
    out.serving_issued = true;
  }

  if (reasons.empty()) return std::optional<Renewal>();
  out.reason = fmt::format("{}", fmt::join(reasons, "; "));
  return std::optional<Renewal>(std::move(out));
}

Clock::time_point next_renewal(const TlsMaterial& material, double renew_fraction,
                               Clock::time_point now) {
  auto bundle = parse_certificates(material.ca_bundle_pem);
  auto serving = parse_certificate(material.cert_pem);
  if (!bundle || !serving) return now;
  Clock::time_point next =
      std::min(bundle->front().renew_at(renew_fraction), serving->renew_at(renew_fraction));
  for (std::size_t i = 1; i < bundle->size(); ++i) next = std::min(next, (*bundle)[i].not_after);
  return next;
}

// ---------------------------------------------------------------------------------------------
// CertManager.

CertManager::CertManager(std::shared_ptr<kube::Client> client, CertManagerOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  policy_.dns_names = service_dns_names(options_.service_name, options_.namespace_name);
  for (const auto& san : options_.extra_sans) {
    auto& list = is_ip_literal(san) ? policy_.ip_addresses : policy_.dns_names;
    if (std::find(list.begin(), list.end(), san) == list.end()) list.push_back(san);
  }
  policy_.ca_lifetime = options_.ca_lifetime;
  policy_.serving_lifetime = options_.serving_lifetime;
  policy_.renew_fraction = options_.renew_fraction;
}

std::optional<CertStatus> CertManager::last_status() const {
  std::lock_guard lock(status_mu_);
  return last_status_;
}

kube::Result<TlsMaterial> CertManager::reconcile_secret(bool& written) {
  const auto& ns = options_.namespace_name;
  const auto& name = options_.secret_name;
  for (int attempt = 0; attempt < kMaxWriteAttempts; ++attempt) {
    auto got = client_->get(kube::resources::kSecrets, ns, name);
    if (!got && !got.error().is(ErrorKind::kNotFound)) return tl::unexpected(got.error());
    const TlsMaterial current = got ? read_material(*got) : TlsMaterial{};
    auto renewal = renew_if_due(current, policy_, Clock::now());
    if (!renewal) return tl::unexpected(std::move(renewal.error()));
    if (!renewal->has_value()) return current;
    const Renewal& r = **renewal;

    if (!got) {
      auto created =
          client_->create(kube::resources::kSecrets, ns, new_secret(ns, name, r.material));
      if (created) {
        spdlog::info("webhook certs: created secret {}/{} ({})", ns, name,
                     describe_serving(r.material));
        written = true;
        return r.material;
      }
      if (!created.error().is(ErrorKind::kAlreadyExists)) return tl::unexpected(created.error());
      spdlog::debug("webhook certs: secret {}/{} created by another replica; adopting it", ns,
                    name);
      continue;
    }

    // PUT of what was read: its resourceVersion makes a concurrent renewal a Conflict.
    json::value updated = *got;
    json::object* obj = updated.if_object();
    if (obj == nullptr) {
      return kube::make_error(ErrorKind::kDecode,
                              fmt::format("GET secret {}/{}: the answer is {}, not an object", ns,
                                          name, json::to_string(updated.kind())));
    }
    if (!(*obj)["data"].is_object()) (*obj)["data"] = json::object{};
    write_material((*obj)["data"].get_object(), r.material);
    auto put = client_->update(kube::resources::kSecrets, ns, updated);
    if (put) {
      spdlog::info("webhook certs: renewed secret {}/{}: {} (ca_rotated={}, {})", ns, name,
                   r.reason, r.ca_rotated, describe_serving(r.material));
      written = true;
      return r.material;
    }
    if (!put.error().is(ErrorKind::kConflict)) return tl::unexpected(put.error());
    spdlog::debug("webhook certs: secret {}/{} changed by another replica; re-reading", ns, name);
  }
  return kube::make_error(
      ErrorKind::kConflict,
      fmt::format("secret {}/{} kept changing during {} attempts", ns, name, kMaxWriteAttempts));
}

kube::Result<bool> CertManager::deliver(const TlsMaterial& material) {
  if (material.cert_pem == delivered_.cert_pem && material.key_pem == delivered_.key_pem) {
    return false;
  }
  if (options_.on_certificate) {
    if (auto r = options_.on_certificate(material.cert_pem, material.key_pem); !r) {
      return tl::unexpected(std::move(r.error()));
    }
  }
  delivered_ = {material.cert_pem, material.key_pem};
  return true;
}

kube::Result<bool> CertManager::inject_into(const kube::ResourceType& type, const std::string& name,
                                            const std::string& ca_bundle_b64) {
  for (int attempt = 0; attempt < kMaxWriteAttempts; ++attempt) {
    auto got = client_->get(type, "", name);
    if (!got) {
      if (!got.error().is(ErrorKind::kNotFound)) return tl::unexpected(got.error());
      spdlog::warn("webhook certs: {} {} does not exist yet; will retry", type.kind, name);
      return false;
    }
    json::value config = std::move(*got);
    if (!config.is_object()) {
      return kube::make_error(ErrorKind::kDecode,
                              fmt::format("GET {} {}: the answer is {}, not an object", type.kind,
                                          name, json::to_string(config.kind())));
    }
    std::size_t changed = 0;
    std::size_t hook_count = 0;
    if (auto* hooks = config.get_object().if_contains("webhooks"); hooks && hooks->is_array()) {
      hook_count = hooks->get_array().size();
      for (auto& hook : hooks->get_array()) {
        if (!hook.is_object()) continue;
        json::value& cc = hook.get_object()["clientConfig"];
        if (!cc.is_object()) cc = json::object{};
        const auto* current = cc.get_object().if_contains("caBundle");
        if (current && current->is_string() && current->get_string() == ca_bundle_b64) continue;
        cc.get_object()["caBundle"] = ca_bundle_b64;
        ++changed;
      }
    }
    if (changed == 0) return true;
    // PUT with the resourceVersion read: an edit in between (webhooks added or reordered) is a
    // Conflict, and the indexes are recomputed on a fresh read.
    auto put = client_->update(type, "", config);
    if (put) {
      spdlog::info("webhook certs: wrote caBundle into {} of {} webhooks of {} {}", changed,
                   hook_count, type.kind, name);
      return true;
    }
    if (put.error().is(ErrorKind::kNotFound)) return false;
    if (!put.error().is(ErrorKind::kConflict)) return tl::unexpected(put.error());
  }
  return kube::make_error(
      ErrorKind::kConflict,
      fmt::format("{} {} kept changing during {} attempts", type.kind, name, kMaxWriteAttempts));
}

kube::Result<std::vector<std::string>> CertManager::inject_ca_bundle(
    const std::string& ca_bundle_pem) {
  const std::string b64 = base64_encode(ca_bundle_pem);
  std::vector<std::string> missing;
  const std::pair<const kube::ResourceType*, const std::string*> targets[] = {
      {&kValidatingWebhookConfigurations, &options_.validating_webhook_configuration},
      {&kMutatingWebhookConfigurations, &options_.mutating_webhook_configuration}};
  for (const auto& [type, name] : targets) {
    if (name->empty()) continue;
    auto found = inject_into(*type, *name, b64);
    if (!found) return tl::unexpected(std::move(found.error()));
    if (!*found) missing.push_back(*name);
  }
  return missing;
}

kube::Result<CertStatus> CertManager::ensure() {
  if (options_.namespace_name.empty()) {
    return kube::make_error(ErrorKind::kInvalidArgument, "CertManager needs a namespace");
  }
  std::lock_guard lock(pass_mu_);
  CertStatus status;
  auto material = reconcile_secret(status.written);
  if (!material) return tl::unexpected(std::move(material.error()));

  // The bundle is published before the certificate is served: with a rotated CA, clients
  // learn it first.
  auto missing = inject_ca_bundle(material->ca_bundle_pem);
  auto delivered = deliver(*material);
  if (!delivered) return tl::unexpected(std::move(delivered.error()));
  if (!missing) return tl::unexpected(std::move(missing.error()));

  status.delivered = *delivered;
  if (status.delivered) {
    spdlog::info("webhook certs: serving certificate handed to the server ({}{})",
                 describe_serving(*material), status.written ? "" : ", from the secret as found");
  }
  status.missing_webhook_configurations = std::move(*missing);
  auto serving = parse_certificate(material->cert_pem);
  auto cas = parse_certificates(material->ca_bundle_pem);
  if (!serving || !cas) {
    return kube::make_error(ErrorKind::kInternal, "the certificate material does not parse");
  }
  status.serving = std::move(*serving);
  status.cas = std::move(*cas);
  status.next_renewal = next_renewal(*material, options_.renew_fraction, Clock::now());
  std::lock_guard status_lock(status_mu_);
  last_status_ = status;
  return status;
}

std::chrono::milliseconds CertManager::delay_after(const CertStatus& status) const {
  auto delay =
      std::chrono::ceil<std::chrono::milliseconds>(status.next_renewal - Clock::now()) + kWakeSlack;
  delay = std::min(delay, options_.recheck_interval);
  if (!status.missing_webhook_configurations.empty()) {
    delay = std::min(delay, kMissingWebhookConfigurationRetry);
  }
  return std::max(delay, options_.min_recheck_delay);
}

void CertManager::run(const kube::CancelToken& cancel) {
  informer::Backoff backoff;
  while (!cancel.cancelled()) {
    auto pass = ensure();
    std::chrono::milliseconds delay;
    if (pass) {
      backoff.reset();
      delay = delay_after(*pass);
    } else {
      delay = backoff.next();
      spdlog::warn("webhook certs: secret {}/{}: {}; retrying in {} ms", options_.namespace_name,
                   options_.secret_name, pass.error().to_string(), delay.count());
    }
    if (!informer::sleep_for(delay, cancel)) return;
  }
}

}  // namespace kstack::validator
