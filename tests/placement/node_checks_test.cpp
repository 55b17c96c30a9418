// The node checks on made-up nodes: each check refuses its failure with the
// node's name and the fix, stays quiet on a healthy node, and NCCL's network
// is read from its own INFO lines (the shapes NCCL 2.18 to 2.2x prints).
#include <gtest/gtest.h>

#include "placement/node_checks.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

NodeFacts healthy_node() {
  NodeFacts f;
  f.host = "gpu-node-3";
  f.world_size = 16;
  f.local_size = 8;
  f.srun_direct = true;
  f.launcher_tasks = 16;
  f.checkpoint_dir = "/scratch/run/checkpoints";
  f.checkpoint_free = 10LL << 30;
  f.checkpoint_bytes = 100LL << 20;
  f.keep = 3;
  f.nccl_shares_node = true;
  f.shm_free = 32LL << 30;
  f.granted_gpus = 8;
  f.usable_gpus = 8;
  return f;
}

void healthy_node_passes() {
  EXPECT_TRUE(check_node(healthy_node()).empty());
  EXPECT_TRUE(check_node(NodeFacts{}).empty());  // nothing probed: nothing to refuse
  EXPECT_EQ(node_checks_exit_code({}), kExitOk);
}

void world_size_against_srun_tasks() {
  NodeFacts f = healthy_node();
  f.world_size = 1;  // PMI not wired: 16 one-rank jobs
  const auto failures = check_node(f);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].check, "world size");
  EXPECT_TRUE(mentions(failures[0].text(), "node gpu-node-3: world size: srun started this rank as one of 16"));
  EXPECT_TRUE(mentions(failures[0].fix, "srun --mpi=pmix"));
  EXPECT_FALSE(failures[0].node_at_fault);
  EXPECT_EQ(node_checks_exit_code(failures), kExitUsage);
  // mpirun's ranks (inside an allocation too) and a step on fewer nodes than the job.
  f.srun_direct = false;
  EXPECT_TRUE(check_node(f).empty());
  f = healthy_node();
  f.launcher_tasks = -1;
  EXPECT_TRUE(check_node(f).empty());
}

void checkpoint_space_for_the_kept_checkpoints() {
  NodeFacts f = healthy_node();
  f.checkpoint_free = 350LL << 20;  // keep 3 + 1 being written = 400 MiB
  auto failures = check_node(f);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].check, "checkpoint space");
  EXPECT_TRUE(mentions(failures[0].found, "has 350.0 MiB free, but the run needs 400.0 MiB: 4 new checkpoint(s)"));
  EXPECT_TRUE(mentions(failures[0].fix, "--keep-checkpoints"));
  EXPECT_EQ(failures[0].exit_code, kExitNodeCheck);
  EXPECT_FALSE(failures[0].node_at_fault);  // a shared file system's, not the node's
  f.checkpoint_local = true;                // the node's own disk: leave the node out
  EXPECT_TRUE(check_node(f)[0].node_at_fault);
  f.existing_checkpoints = 3;  // a resume: those already there take no new room
  EXPECT_TRUE(check_node(f).empty());
  f.model_file_bytes = 300LL << 20;
  EXPECT_EQ(check_node(f).size(), 1u);
  f.model_file_bytes = 0;
  f.existing_checkpoints = 4;  // one too many, pruned before the next write
  f.checkpoint_free = 0;
  EXPECT_TRUE(check_node(f).empty());
  f.existing_checkpoints = 0;  // a run of 3 steps writes 3 checkpoints at most
  f.max_writes = 3;
  f.checkpoint_free = 300LL << 20;
  EXPECT_TRUE(check_node(f).empty());
  f = healthy_node();
  f.checkpoint_dir.clear();  // a rank that writes no checkpoint
  f.checkpoint_free = 0;
  EXPECT_TRUE(check_node(f).empty());
}

void shared_memory_for_nccl() {
  NodeFacts f = healthy_node();
  f.shm_free = 64LL << 20;  // Docker's default
  auto failures = check_node(f);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].check, "/dev/shm");
  EXPECT_TRUE(mentions(failures[0].found, "64.0 MiB free for 8 NCCL ranks"));
  EXPECT_TRUE(mentions(failures[0].fix, "--shm-size"));
  EXPECT_TRUE(failures[0].node_at_fault);
  f.shm_free = kMinShmBytes;
  EXPECT_TRUE(check_node(f).empty());
  f.shm_free = 0;
  f.nccl_shares_node = false;  // MPI, or one rank on the node
  EXPECT_TRUE(check_node(f).empty());
}

void gpus_granted_against_usable() {
  NodeFacts f = healthy_node();
  f.usable_gpus = 7;
  auto failures = check_node(f);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].check, "GPUs");
  EXPECT_TRUE(mentions(failures[0].found, "gave this rank 8 GPU(s) (CUDA_VISIBLE_DEVICES) but CUDA can use only 7"));
  EXPECT_TRUE(failures[0].node_at_fault);
  f.granted_gpus = 1;  // per-task binding: one each
  f.usable_gpus = 1;
  EXPECT_TRUE(check_node(f).empty());
}

// One process for the checks on made-up nodes (each test binary start loads LibTorch).
TEST(NodeChecks, EachCheckRefusesItsFailure) {
  healthy_node_passes();
  world_size_against_srun_tasks();
  checkpoint_space_for_the_kept_checkpoints();
  shared_memory_for_nccl();
  gpus_granted_against_usable();
}

TEST(NodeChecks, NcclNetworkFromItsLog) {
  // NCCL 2.19 and later.
  EXPECT_EQ(nccl_network_from_log({"gpu-node-3:4711:4711 [0] NCCL INFO Bootstrap : Using ib0:10.1.0.3<0>",
                                   "gpu-node-3:4711:4711 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB "
                                   "; OOB ib0:10.1.0.3<0>",
                                   "gpu-node-3:4711:4711 [0] NCCL INFO Using network IB"}),
            "IB");
  EXPECT_EQ(nccl_network_from_log({"gpu-node-3:4711:4711 [0] NCCL INFO NET/IB : No device found.",
                                   "gpu-node-3:4711:4711 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.3<0>",
                                   "gpu-node-3:4711:4711 [0] NCCL INFO Using network Socket"}),
            "Socket");
  EXPECT_EQ(nccl_network_from_log({"n:1:1 [0] NCCL INFO Using network AWS Libfabric"}), "AWS Libfabric");
  // Older lines without "Using network": the NET/<transport> line.
  EXPECT_EQ(nccl_network_from_log({"n:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.3<0>"}), "Socket");
  EXPECT_EQ(nccl_network_from_log({"n:1:1 [0] NCCL INFO cudaDriverVersion 12040"}), "");

  const auto failures = check_nccl_network("gpu-node-3", "Socket", false);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_TRUE(mentions(failures[0].text(), "node gpu-node-3: NCCL network: NCCL chose TCP sockets"));
  EXPECT_TRUE(mentions(failures[0].fix, "--allow-socket-network"));
  EXPECT_TRUE(check_nccl_network("gpu-node-3", "Socket", true).empty());
  EXPECT_TRUE(check_nccl_network("gpu-node-3", "IB", false).empty());
  EXPECT_TRUE(check_nccl_network("gpu-node-3", "", false).empty());
}

TEST(NodeChecks, FailuresSurviveTheirEncoding) {
  NodeFacts f = healthy_node();
  f.world_size = 1;
  f.shm_free = 1;
  const auto failures = check_node(f);
  ASSERT_EQ(failures.size(), 2u);
  const auto back = decode_failures(encode_failures(failures));
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].text(), failures[i].text());
    EXPECT_EQ(back[i].exit_code, failures[i].exit_code);
    EXPECT_EQ(back[i].node_at_fault, failures[i].node_at_fault);
  }
  EXPECT_TRUE(decode_failures("").empty());
}

}  // namespace
}  // namespace cifar
