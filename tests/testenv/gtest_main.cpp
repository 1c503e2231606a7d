// main() of every integration test binary: registers the control-plane environment.
#include <gtest/gtest.h>

#include "tests/testenv/environment.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new kstack::testenv::Environment);  // owned by GoogleTest
  return RUN_ALL_TESTS();
}
