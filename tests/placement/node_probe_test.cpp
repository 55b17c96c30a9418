// The live node probes on this machine: the launcher's task count from the
// environment, the checkpoint folder's space (a folder not made yet is
// measured at the nearest one above it), the needs handed in from the floors
// above, and which rank and backend each probe applies to.
#include <gtest/gtest.h>

#include "placement/node_probe.hpp"
#include "support/scoped_env.hpp"
#include "test_files.hpp"

namespace cifar {
namespace {

using test::ScopedEnv;
using test::TempDir;

World rank_on_node(int number, int local_size = 1) {
  World w;
  w.rank = number;
  w.size = 4;
  w.local_size = local_size;
  w.node_name = "node-1";
  return w;
}

TEST(NodeProbe, LauncherTasksFromSlurm) {
  const RunConfig config;
  {
    ScopedEnv env({{"SLURM_STEP_NUM_TASKS", std::nullopt}, {"SLURM_NTASKS", std::nullopt}});
    const NodeFacts f = probe_launch_facts(config, rank_on_node(0));
    EXPECT_EQ(f.host, "node-1");
    EXPECT_EQ(f.world_size, 4);
    EXPECT_EQ(f.launcher_tasks, -1);  // not under srun: the check is skipped
  }
  {
    ScopedEnv env({{"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_NTASKS", "16"}});
    EXPECT_EQ(probe_launch_facts(config, rank_on_node(0)).launcher_tasks, 8);  // the step's, before the job's
  }
  {
    ScopedEnv env({{"SLURM_STEP_NUM_TASKS", std::nullopt}, {"SLURM_NTASKS", "16"}});
    EXPECT_EQ(probe_launch_facts(config, rank_on_node(0)).launcher_tasks, 16);
  }
}

TEST(NodeProbe, CheckpointSpaceOnTheWritingRank) {
  TempDir dir;
  RunConfig config;
  config.checkpoint.dir = dir.file("run/checkpoints");  // not made yet
  config.checkpoint.keep = 5;
  config.output.model = dir.file("model.pth");
  ResourceNeeds needs;
  needs.model_state_bytes = 1000;
  needs.checkpoint_bytes = 4000;
  needs.max_writes = 7;
  needs.existing_checkpoints = 2;

  EXPECT_TRUE(writes_checkpoints(config, rank_on_node(0)));
  const NodeFacts f = probe_resource_facts(config, rank_on_node(0), "mpi", needs);
  EXPECT_EQ(f.checkpoint_dir, config.checkpoint.dir);
  EXPECT_GT(f.checkpoint_free, 0);
  EXPECT_EQ(f.checkpoint_bytes, 4000);
  EXPECT_EQ(f.keep, 5);
  EXPECT_EQ(f.max_writes, 7);
  EXPECT_EQ(f.existing_checkpoints, 2);
  EXPECT_EQ(f.model_file_bytes, 1000);  // the model file goes to the same file system
  EXPECT_FALSE(f.nccl_shares_node);
  EXPECT_EQ(f.shm_free, -1);

  // Another rank writes nothing, and without --checkpoint-dir no rank does.
  EXPECT_FALSE(writes_checkpoints(config, rank_on_node(1)));
  EXPECT_EQ(probe_resource_facts(config, rank_on_node(1), "mpi", needs).checkpoint_dir, "");
  config.checkpoint.dir = "";
  EXPECT_FALSE(writes_checkpoints(config, rank_on_node(0)));
  EXPECT_EQ(probe_resource_facts(config, rank_on_node(0), "mpi", needs).checkpoint_free, -1);
}

TEST(NodeProbe, SharedMemoryOnlyForNcclWithSeveralLocalRanks) {
  const RunConfig config;
  const NodeFacts nccl = probe_resource_facts(config, rank_on_node(1, 2), "nccl", {});
  EXPECT_TRUE(nccl.nccl_shares_node);
  EXPECT_GE(nccl.shm_free, 0);
  EXPECT_FALSE(probe_resource_facts(config, rank_on_node(1, 1), "nccl", {}).nccl_shares_node);
  EXPECT_FALSE(probe_resource_facts(config, rank_on_node(1, 2), "mpi", {}).nccl_shares_node);
}

}  // namespace
}  // namespace cifar
