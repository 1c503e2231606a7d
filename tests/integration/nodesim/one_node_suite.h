// A GoogleTest fixture base for a suite whose tests share one simulated node, started once for
// the suite: `class Probes : public OneNodeSuite<kProbeNode> {...}` with
// `inline constexpr char kProbeNode[] = "probe-node";`.
#pragma once

#include <memory>

#include <gtest/gtest.h>

#include "tests/nodesim/testing/e2e.h"

namespace kstack::testenv::e2e {

template <const char* kNodeName>
class OneNodeSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    NodeSimulatorOptions options;
    options.node_name = kNodeName;
    auto sim = NodeSimulator::start(control_plane(), options);
    ASSERT_TRUE(sim) << sim.error();
    simulator() = std::move(*sim);
  }
  static void TearDownTestSuite() { simulator().reset(); }
  static std::unique_ptr<NodeSimulator>& simulator() {
    static std::unique_ptr<NodeSimulator> sim;
    return sim;
  }
};

}  // namespace kstack::testenv::e2e
