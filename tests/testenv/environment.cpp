// The per-binary test control plane (see environment.h).
#include "tests/testenv/environment.h"

#include <chrono>
#include <iostream>
#include <stdexcept>

namespace kstack::testenv {
namespace {

std::unique_ptr<ControlPlane>& instance() {
  static std::unique_ptr<ControlPlane> control_plane;
  return control_plane;
}

std::string& start_error() {
  static std::string error;
  return error;
}

std::string first_lines(const std::string& text, int count) {
  size_t end = 0;
  for (int i = 0; i < count && end != std::string::npos; ++i) {
    end = text.find('\n', end == 0 ? 0 : end + 1);
  }
  return text.substr(0, end);
}

}  // namespace

ControlPlane::Options Environment::default_options() {
  ControlPlane::Options options;
  options.controller_manager = true;
  options.users = {TestUser{kAlice, {}, {}}, TestUser{kBob, {kTestersGroup}, {}}};
  return options;
}

void Environment::SetUp() {
  auto begin = std::chrono::steady_clock::now();
  auto started = ControlPlane::start(default_options());
  if (!started) {
    // Not FAIL(): a fatal failure here makes GoogleTest report every test as *skipped*.
    // Instead the full reason is reported once here, and every test that asks for the
    // control plane fails (control_plane() throws).
    start_error() = started.error();
    ADD_FAILURE() << "kstack test control plane did not start:\n" << started.error();
    return;
  }
  instance() = std::move(*started);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - begin);
  std::cerr << "kstack-testenv: control plane at " << instance()->server() << " ready in "
            << took.count() << " ms (work dir " << instance()->work_dir().string() << ")\n";
}

void Environment::TearDown() { instance().reset(); }

ControlPlane& control_plane() {
  if (!instance()) {
    if (!start_error().empty()) {
      throw std::logic_error(
          "the kstack test control plane did not start (details in the "
          "global set-up failure above): " +
          first_lines(start_error(), 2));
    }
    throw std::logic_error(
        "the kstack test control plane is not running (is the binary linked with "
        "kstack_testenv_gtest?)");
  }
  return *instance();
}

}  // namespace kstack::testenv
