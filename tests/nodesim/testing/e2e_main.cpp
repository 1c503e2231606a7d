// main() of e2e test binaries with simulated nodes: enters the pod network, registers the e2e
// control plane.
#include <iostream>

#include <gtest/gtest.h>

#include "tests/nodesim/testing/e2e.h"
#include "tests/nodesim/testing/pod_network.h"

int main(int argc, char** argv) {
  // First, with one thread: the binary re-executes itself in its own network namespace so that
  // every pod IP of every simulated node is a local, non-loopback address (pod_network.h).
  if (auto error = kstack::testenv::e2e::enter_pod_network(); !error.empty()) {
    std::cerr << "kstack e2e: cannot enter the pod network namespace: " << error << "\n";
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(
      new kstack::testenv::e2e::Environment);  // owned by GoogleTest
  return RUN_ALL_TESTS();
}
