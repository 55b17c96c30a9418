// CUDA_VISIBLE_DEVICES read as CUDA reads it, and which (device request,
// variable, driver) blames the node: only --device cuda, on a driver that
// runs the build's CUDA, with fewer usable GPUs than granted.
#include <gtest/gtest.h>

#include "placement/node_checks.hpp"
#include "placement/visible_devices.hpp"

namespace cifar {
namespace {

TEST(VisibleDevices, CountsWhatCudaWouldSee) {
  struct Case {
    const char* value;
    std::optional<int> granted;
  };
  const Case cases[] = {
      {nullptr, std::nullopt},  // unset: every GPU of the node
      {"", 0},                  // set and empty: none
      {"0", 1},
      {"0,1", 2},
      {"3, 5 ,7", 3},                                   // spaces around entries
      {"-1", 0},                                        // the usual way to hide every GPU
      {"NoDevFiles", 0},                                // Slurm, when it allocated none
      {"0,-1,1", 1},                                    // CUDA stops at the first invalid entry
      {"GPU-8f1c2d3e-aaaa-bbbb-cccc-0123456789ab", 1},  // Slurm 26.05: UUIDs
      {"GPU-8f1c2d3e,MIG-4b2e0a11/1/0", 2},
      {"GPU-", 0},
  };
  for (const auto& c : cases) EXPECT_EQ(granted_gpu_count(c.value), c.granted) << (c.value ? c.value : "(unset)");
}

// Entry i is CUDA's device i: what a child process on this rank's device i
// is given, trimmed, and never past the first invalid entry.
TEST(VisibleDevices, EntriesInCudasOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(granted_gpu_entries(nullptr), V{});
  EXPECT_EQ(granted_gpu_entries("3, 5 ,7"), (V{"3", "5", "7"}));
  EXPECT_EQ(granted_gpu_entries("GPU-8f1c2d3e,MIG-4b2e0a11/1/0"), (V{"GPU-8f1c2d3e", "MIG-4b2e0a11/1/0"}));
  EXPECT_EQ(granted_gpu_entries("0,-1,1"), V{"0"});
}

// The table: request, variable, whether the driver runs the build's CUDA, the
// GPUs CUDA can use, and whether the node is blamed (exit code 7, the node
// written to the failed-nodes file). What the run does otherwise is said
// beside each row.
TEST(VisibleDevices, OnlyANodeAtFaultIsBlamed) {
  struct Case {
    bool cuda_requested;
    const char* visible;
    bool driver_runs_build;
    int usable;
    bool blamed;
    const char* then;
  };
  const Case cases[] = {
      {true, "0,1", true, 1, true, "a GPU fell off the bus: exit 7, the node left out"},
      {true, "GPU-aaa,MIG-bbb", true, 1, true, "the same with Slurm 26.05's UUIDs"},
      {true, "0,1", true, 2, false, "trains on both"},
      {true, "0,1", false, 0, false, "the stack check refuses the driver: exit 2"},
      {true, "-1", true, 0, false, "no GPU granted: the placement refuses --device cuda, exit 2"},
      {true, "NoDevFiles", true, 0, false, "the same"},
      {true, nullptr, true, 0, false, "unset: no grant to hold the node to"},
      {false, "0,1", true, 0, false, "--device auto: trains on the CPU and says why"},
      {false, "0,1", false, 0, false, "--device auto on a driver too old: the stack check, exit 2"},
      {false, "-1", true, 0, false, "--device auto: the CPU"},
      {false, "NoDevFiles", false, 0, false, "--device auto without a driver: the CPU"},
  };
  for (const auto& c : cases) {
    NodeFacts f;
    f.host = "node7";
    f.granted_gpus = gpus_held_to(c.cuda_requested, c.driver_runs_build, c.visible);
    if (f.granted_gpus > 0) f.usable_gpus = c.usable;
    const std::vector<NodeFailure> failures = check_node(f);
    const std::string row = std::string(c.cuda_requested ? "cuda " : "auto ") + (c.visible ? c.visible : "(unset)") +
                            (c.driver_runs_build ? " driver ok" : " driver unusable") + ": " + c.then;
    ASSERT_EQ(failures.size(), c.blamed ? 1u : 0u) << row;
    if (c.blamed) {
      EXPECT_EQ(failures[0].check, "GPUs") << row;
      EXPECT_EQ(failures[0].host, "node7") << row;
      EXPECT_EQ(node_checks_exit_code(failures), 7) << row;
      EXPECT_TRUE(failures[0].node_at_fault) << row;
    }
  }
}

}  // namespace
}  // namespace cifar
