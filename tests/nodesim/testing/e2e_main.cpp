// main() of e2e test binaries with simulated nodes: registers the e2e control plane.
#include <gtest/gtest.h>

#include "tests/nodesim/testing/e2e.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(
      new kstack::testenv::e2e::Environment);  // owned by GoogleTest
  return RUN_ALL_TESTS();
}
