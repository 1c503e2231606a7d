// One test control plane per GoogleTest binary: link `kstack_testenv_gtest` (it brings main())
// and call kstack::testenv::control_plane() from any test.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/testenv/control_plane.h"

namespace kstack::testenv {

// Users every test binary's control plane has: `alice` (only system:authenticated) and
// `bob` (group kstack-testers). Neither is granted anything by RBAC.
inline constexpr const char* kAlice = "alice";
inline constexpr const char* kBob = "bob";
inline constexpr const char* kTestersGroup = "kstack-testers";

// Starts the control plane (controller-manager on) before the first test and stops it after
// the last. A failed start is reported as a failure of the global set-up, and every test that
// calls control_plane() then fails too (it is never a silent skip).
class Environment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  static ControlPlane::Options default_options();
};

// The binary's control plane. Throws std::logic_error (GoogleTest reports the calling test as
// failed) if it is not running: the environment did not start it or was not registered.
ControlPlane& control_plane();

}  // namespace kstack::testenv
