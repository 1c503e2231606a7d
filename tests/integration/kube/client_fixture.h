// Helpers for integration tests of kube/: clients for the test control plane's users and a
// namespace per test.
#pragma once

#include <memory>
#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/client.h"
#include "tests/testenv/environment.h"

namespace kstack::kube::testing {

inline Config config_for(std::string_view user) {
  auto& cp = testenv::control_plane();
  Config c;
  c.server = cp.server();
  c.ca_pem = cp.ca_pem();
  c.credentials = static_token(cp.token(user));
  c.source = "test control plane";
  c.qps = 0;  // tests are not rate limited unless they ask
  return c;
}

inline std::shared_ptr<Client> client_for(std::string_view user) {
  auto c = Client::create(config_for(user));
  if (!c) throw std::runtime_error(c.error().to_string());
  return *c;
}

inline std::shared_ptr<Client> admin() { return client_for(testenv::kAdminUser); }

// A fresh namespace named after the running test.
inline std::string make_namespace(Client& client) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string("t-") + info->name();
  for (auto& ch : name)
    ch = static_cast<char>(std::isalnum(static_cast<unsigned char>(ch)) ? std::tolower(ch) : '-');
  if (name.size() > 60) name.resize(60);
  while (name.back() == '-') name.pop_back();
  boost::json::value ns = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  auto r = client.create(resources::kNamespaces, "", ns);
  if (!r && !r.error().is(ErrorKind::kAlreadyExists)) {
    ADD_FAILURE() << "create namespace " << name << ": " << r.error().to_string();
  }
  return name;
}

inline boost::json::value config_map(std::string_view name, boost::json::object data = {{"k", "v"}},
                                     boost::json::object labels = {}) {
  boost::json::object md{{"name", name}};
  if (!labels.empty()) md["labels"] = std::move(labels);
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", std::move(md)},
          {"data", std::move(data)}};
}

inline std::string str_at(const boost::json::value& v, std::string_view pointer) {
  boost::system::error_code ec;
  const auto* p = v.find_pointer(pointer, ec);
  if (p == nullptr || !p->is_string()) return {};
  return std::string(p->get_string());
}

}  // namespace kstack::kube::testing
