#include "validator/webhook.h"

#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "catalog/model.h"
#include "informer/factory.h"
#include "validator/certs.h"
#include "validator/rules/handler.h"

namespace kstack::validator {
namespace {

informer::InformerScope watch_all(const kube::ResourceType& type, std::string ns = {}) {
  return {type, std::move(ns), {}, {}};
}

class WebhookImpl final : public Webhook {
 public:
  WebhookImpl(std::shared_ptr<kube::Client> client, WebhookOptions options)
      : client_(std::move(client)), options_(std::move(options)) {}
  ~WebhookImpl() override { stop(); }

  kube::Result<void> start() {
    // Informers: the rules read the catalog from these caches only (docs/spec.md §3).
    // Shared with the controller where the scopes are equal (the KStackConfig's is the
    // controller's: the rules read that one object only).
    factory_ = options_.informers;
    if (!factory_) {
      factory_ = std::make_shared<informer::InformerFactory>(client_);
      own_factory_ = true;
    }
    apptypes_ = &factory_->informer(watch_all(catalog::resources::kAppTypes));
    stacks_ = &factory_->informer(watch_all(catalog::resources::kStacks));
    auto config = watch_all(catalog::resources::kKStackConfigs, options_.system_namespace);
    config.field_selector = fmt::format("metadata.name={}", catalog::kConfigName);
    configs_ = &factory_->informer(config);
    classes_ = &factory_->informer(watch_all(catalog::resources::kStorageClasses));
    catalog::CatalogOptions co;
    co.system_namespace = options_.system_namespace;
    catalog_ = std::make_unique<catalog::Catalog>(
        catalog::CatalogStores{&apptypes_->store(), &stacks_->store(), &configs_->store(),
                               &classes_->store()},
        co);
    RulesOptions ro;
    if (!options_.operator_username.empty()) ro.operator_username = options_.operator_username;
    ro.finalizer_namespace = options_.watch_namespace;
    rules_ = std::make_unique<RulesHandler>(*catalog_, ro);
    factory_->start();
    const std::pair<const char*, informer::SharedInformer*> caches[] = {
        {"apptypes", apptypes_},
        {"stacks", stacks_},
        {"kstackconfigs", configs_},
        {"storageclasses", classes_}};
    for (const auto& [name, inf] : caches) {
      if (!inf->wait_for_sync(options_.informer_sync_timeout)) {
        return kube::make_error(
            kube::ErrorKind::kTimeout,
            fmt::format("webhook: the {} cache did not sync within {} ms (can kstack list and "
                        "watch {}?)",
                        name, options_.informer_sync_timeout.count(), name));
      }
    }

    ServerOptions so = options_.server;
    if (!options_.cert_file.empty() || !options_.key_file.empty()) {
      CertificateFiles files{options_.cert_file, options_.key_file};
      auto pems = read_certificate_files(files);
      if (!pems) return tl::unexpected(pems.error());
      so.cert_pem = pems->cert_pem;
      so.key_pem = pems->key_pem;
      auto server = start_admission_server(so, *rules_);
      if (!server) return tl::unexpected(server.error());
      server_ = std::move(*server);
      CertificateWatchOptions wo;
      wo.files = files;
      wo.on_reload = [](const kube::Result<void>& r) {
        if (r) {
          spdlog::info("webhook: serving certificate reloaded from files");
        } else {
          spdlog::warn("webhook: certificate files not reloaded: {}", r.error().to_string());
        }
      };
      watcher_ = std::make_unique<CertificateFileWatcher>(*server_, wo, std::move(*pems));
      return {};
    }

    // Self-managed: the first ensure() hands over the certificate to start with; later ones
    // (renewals) swap it into the running server.
    CertManagerOptions cm;
    cm.namespace_name = options_.system_namespace;
    cm.extra_sans = options_.extra_sans;
    if (options_.serving_lifetime.count() > 0) cm.serving_lifetime = options_.serving_lifetime;
    if (!options_.validating_configuration.empty()) {
      cm.validating_webhook_configuration = options_.validating_configuration;
    }
    if (!options_.mutating_configuration.empty()) {
      cm.mutating_webhook_configuration = options_.mutating_configuration;
    }
    cm.on_certificate = [this](const std::string& cert,
                               const std::string& key) -> kube::Result<void> {
      std::lock_guard lock(mu_);
      if (server_) return server_->set_certificate(cert, key);
      pending_cert_ = cert;
      pending_key_ = key;
      return {};
    };
    certs_ = std::make_unique<CertManager>(client_, cm);
    auto status = certs_->ensure();
    if (!status) return tl::unexpected(status.error());
    {
      std::lock_guard lock(mu_);
      so.cert_pem = pending_cert_;
      so.key_pem = pending_key_;
      auto server = start_admission_server(so, *rules_);
      if (!server) return tl::unexpected(server.error());
      server_ = std::move(*server);
    }
    cert_thread_ = std::thread([this] { certs_->run(cancel_); });
    return {};
  }

  std::uint16_t port() const override { return server_ ? server_->port() : 0; }

  bool ready() const override {
    return server_ && server_->serving() && apptypes_ && apptypes_->has_synced() &&
           stacks_->has_synced() && configs_->has_synced() && classes_->has_synced();
  }

  ServerStats stats() const override { return server_ ? server_->stats() : ServerStats{}; }

  void stop() override {
    if (stopped_.exchange(true)) return;
    cancel_.cancel();
    if (cert_thread_.joinable()) cert_thread_.join();
    if (watcher_) watcher_->stop();
    if (server_) server_->stop();
    if (own_factory_) factory_->stop();
  }

 private:
  std::shared_ptr<kube::Client> client_;
  WebhookOptions options_;
  std::shared_ptr<informer::InformerFactory> factory_;
  bool own_factory_ = false;
  informer::SharedInformer *apptypes_ = nullptr, *stacks_ = nullptr, *configs_ = nullptr,
                           *classes_ = nullptr;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<RulesHandler> rules_;
  std::unique_ptr<CertManager> certs_;
  std::unique_ptr<AdmissionServer> server_;
  std::unique_ptr<CertificateFileWatcher> watcher_;
  std::mutex mu_;
  std::string pending_cert_, pending_key_;
  kube::CancelToken cancel_;
  std::thread cert_thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

kube::Result<std::unique_ptr<Webhook>> start_webhook(std::shared_ptr<kube::Client> client,
                                                     WebhookOptions options) {
  auto webhook = std::make_unique<WebhookImpl>(std::move(client), std::move(options));
  if (auto r = webhook->start(); !r) return tl::unexpected(r.error());
  return webhook;
}

}  // namespace kstack::validator
