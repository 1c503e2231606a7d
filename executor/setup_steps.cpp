// The real setup steps (executor/actuators.h): each one SetupRunner call, its error mapped to
// what it means for the member; a configmap:// package is read here, from the API server.
#include <boost/json.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "executor/actuators.h"

namespace kstack::executor {
namespace json = boost::json;

namespace {

// Standard base64 (RFC 4648) with padding, as ConfigMap binaryData is encoded. OpenSSL is
// already linked for TLS; EVP_DecodeBlock counts padding as zero bytes, removed here.
kube::Result<std::string> base64_decode(std::string_view text, std::string_view what) {
  std::string clean;
  clean.reserve(text.size());
  for (char c : text) {
    if (c != '\n' && c != '\r') clean += c;
  }
  if (clean.size() % 4 != 0) {
    return kube::make_error(kube::ErrorKind::kInvalid,
                            fmt::format("{}: not valid base64 (length {})", what, clean.size()));
  }
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) {
    return kube::make_error(kube::ErrorKind::kInvalid, fmt::format("{}: not valid base64", what));
  }
  std::size_t size = static_cast<std::size_t>(n);
  if (!clean.empty() && clean.back() == '=') --size;
  if (clean.size() >= 2 && clean[clean.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

const json::object* object_at(const json::object* obj, std::string_view key) {
  if (obj == nullptr) return nullptr;
  const auto* v = obj->if_contains(key);
  return v != nullptr && v->is_object() ? &v->as_object() : nullptr;
}

SetupOutcome failed(const SetupError& error, std::string_view step) {
  return SetupOutcome{
      classify_setup_error(error), fmt::format("{}: {}", step, error.message), {}, false, {}};
}

// package_payload's errors: those it made itself (no HTTP answer, kInvalid) say the package
// reference is wrong; what the API server answered is classified as any setup step's is.
SetupError payload_error(kube::Error e) {
  if (e.http_status == 0 && e.is(kube::ErrorKind::kInvalid)) {
    return {SetupErrorKind::kConfig, std::move(e.message), std::nullopt};
  }
  return classify(std::move(e));
}

}  // namespace

std::string_view to_string(SetupStepKind kind) {
  switch (kind) {
    case SetupStepKind::kWriteConfig:
      return "write /etc/kstack";
    case SetupStepKind::kReadConfigureStatus:
      return "read configure.status";
    case SetupStepKind::kCheckPackage:
      return "check the setup package";
    case SetupStepKind::kInstallPackage:
      return "install the setup package";
    case SetupStepKind::kStartConfigure:
      return "start startscript --configure";
    case SetupStepKind::kStageUpgrade:
      return "stage the next setup package";
    case SetupStepKind::kPreupgrade:
      return "run startscript --preupgrade";
  }
  return "setup step";
}

// A wrong setup: config_error; anything else (a changed container, transport, timeout, an API
// error such as a 422 from the server) is tried again on a later pass.
SetupOutcome::Kind classify_setup_error(const SetupError& error) {
  return error.is(SetupErrorKind::kConfig) ? SetupOutcome::Kind::kConfigError
                                           : SetupOutcome::Kind::kRetry;
}

kube::Result<std::string> SetupStepRunner::package_payload(std::string_view ns,
                                                           const catalog::SetupPackage& package) {
  constexpr std::string_view kScheme = "configmap://";
  std::string_view rest = std::string_view(package.package_url).substr(kScheme.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= rest.size()) {
    return kube::make_error(
        kube::ErrorKind::kInvalid,
        fmt::format("packageURL {}: expected configmap://<name>/<key>", package.package_url));
  }
  const std::string name(rest.substr(0, slash));
  const std::string key(rest.substr(slash + 1));
  auto cm = client_.get(kube::resources::kConfigMaps, ns, name);
  if (!cm) {
    if (cm.error().kind == kube::ErrorKind::kNotFound) {
      return kube::make_error(
          kube::ErrorKind::kInvalid,
          fmt::format("packageURL {}: ConfigMap {}/{} not found", package.package_url, ns, name));
    }
    return tl::unexpected(cm.error());
  }
  const auto* obj = cm->if_object();
  if (const auto* binary = object_at(obj, "binaryData")) {
    if (const auto* v = binary->if_contains(key); v && v->is_string()) {
      return base64_decode(v->as_string(), fmt::format("ConfigMap {} binaryData[{}]", name, key));
    }
  }
  if (const auto* data = object_at(obj, "data")) {
    if (const auto* v = data->if_contains(key); v && v->is_string()) {
      return std::string(v->as_string());
    }
  }
  return kube::make_error(kube::ErrorKind::kInvalid,
                          fmt::format("packageURL {}: ConfigMap {}/{} has no key \"{}\" in "
                                      "binaryData or data",
                                      package.package_url, ns, name, key));
}

SetupOutcome SetupStepRunner::run(const SetupStep& step) {
  const auto& target = step.target;
  switch (step.kind) {
    case SetupStepKind::kWriteConfig: {
      auto written = runner_.write_config(target, step.configmeta, step.env);
      if (!written) return failed(written.error(), to_string(step.kind));
      return {};
    }
    case SetupStepKind::kReadConfigureStatus: {
      auto status = runner_.configure_status(target);
      if (!status) return failed(status.error(), to_string(step.kind));
      SetupOutcome out;
      out.status = std::move(*status);
      return out;
    }
    case SetupStepKind::kCheckPackage: {
      auto installed = runner_.package_installed(target);
      if (!installed) return failed(installed.error(), to_string(step.kind));
      SetupOutcome out;
      out.installed = *installed;
      return out;
    }
    case SetupStepKind::kInstallPackage:
    case SetupStepKind::kStageUpgrade: {
      std::string payload;
      const bool from_configmap = step.package.package_url.starts_with("configmap://");
      if (from_configmap) {
        auto p = package_payload(step.package_namespace, step.package);
        if (!p) return failed(payload_error(p.error()), "read the setup package");
        payload = std::move(*p);
      }
      const auto dir = step.kind == SetupStepKind::kStageUpgrade ? kUpgradeDir : kSetupDir;
      auto done =
          runner_.install_package(target, step.package, from_configmap ? &payload : nullptr, dir);
      if (!done) return failed(done.error(), fmt::format("install {}", step.package.package_url));
      return {};
    }
    case SetupStepKind::kStartConfigure: {
      auto started = runner_.start_configure(target, step.arguments);
      if (!started) return failed(started.error(), to_string(step.kind));
      return {};
    }
    case SetupStepKind::kPreupgrade: {
      auto ran = runner_.run_startscript(target, step.arguments, kUpgradeDir);
      if (!ran) return failed(ran.error(), to_string(step.kind));
      SetupOutcome out;
      out.run = std::move(*ran);
      return out;
    }
  }
  return {};
}

}  // namespace kstack::executor
