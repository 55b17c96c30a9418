// The node checks on made-up nodes: each check refuses its failure with the
// node's name and the fix, stays quiet on a healthy node, and NCCL's network
// is read from its own INFO lines (the shapes NCCL 2.18 to 2.2x prints).
#include <gtest/gtest.h>

#include <limits>

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
  // A shared file system's, not the node's: a restart anywhere fails the same way, so exit 2 (no restart).
  EXPECT_EQ(failures[0].exit_code, kExitUsage);
  EXPECT_FALSE(failures[0].node_at_fault);
  EXPECT_EQ(node_checks_exit_code(failures), kExitUsage);
  f.checkpoint_local = true;  // the node's own disk: exit 7, leave the node out
  EXPECT_TRUE(check_node(f)[0].node_at_fault);
  EXPECT_EQ(check_node(f)[0].exit_code, kExitNodeCheck);
  f.existing_checkpoints = 3;  // a resume: those already there take no new room
  EXPECT_TRUE(check_node(f).empty());
  f.model_file_bytes = 300LL << 20;  // written after the last prune: beside 3 checkpoints, not 4
  EXPECT_TRUE(check_node(f).empty());
  f.model_file_bytes = 351LL << 20;
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

// The space check's decision, a table: the peak a run holds at once is the
// larger of its last checkpoint's write (the kept ones and the new file,
// counting only the checkpoints the run writes) and its model file's (beside
// the kept ones, after the last prune); checkpoints already there take no
// new room; no overflow at the integer limits.
struct SpaceRow {
  const char* what;
  int keep;
  long writes;    // max_writes: -1 unknown
  int existing;   // checkpoints already there
  int64_t each;   // one checkpoint
  int64_t model;  // the model file on the same file system
  int64_t free;
  bool refused;
};

void checkpoint_space_table() {
  constexpr int64_t MiB = 1LL << 20;
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  constexpr int kIntMax = std::numeric_limits<int>::max();
  constexpr long kLongMax = std::numeric_limits<long>::max();
  const SpaceRow rows[] = {
      {"keep 3, unknown writes: 3 kept + 1 written", 3, -1, 0, 100 * MiB, 0, 400 * MiB, false},
      {"keep 3, one byte short of 4 files", 3, -1, 0, 100 * MiB, 0, 400 * MiB - 1, true},
      {"a run that writes one checkpoint needs one", 3, 1, 0, 100 * MiB, 0, 100 * MiB, false},
      {"a run that writes two needs two", 3, 2, 0, 100 * MiB, 0, 200 * MiB - 1, true},
      {"the model after the last prune: max(4, 3 + model)", 3, 10, 0, 100 * MiB, 100 * MiB, 400 * MiB, false},
      {"the model larger than a checkpoint", 3, 10, 0, 100 * MiB, 150 * MiB, 450 * MiB - 1, true},
      {"one write and the model: max(1, 1 + model)", 3, 1, 0, 100 * MiB, 50 * MiB, 150 * MiB, false},
      {"no writes: the model alone", 3, 0, 0, 100 * MiB, 50 * MiB, 50 * MiB, false},
      {"a resume with 3 there: the new write only", 3, 10, 3, 100 * MiB, 0, 100 * MiB, false},
      {"a resume with 3 there, the model beside them", 3, 10, 3, 100 * MiB, 100 * MiB, 100 * MiB, false},
      {"keep INT_MAX, unknown writes: no overflow", kIntMax, -1, 0, 100 * MiB, 0, 1LL << 50, true},
      {"keep INT_MAX, LONG_MAX writes: INT_MAX + 1 files", kIntMax, kLongMax, 0, 1, 0, kIntMax + 1LL, false},
      {"keep INT_MAX, LONG_MAX writes, one byte short", kIntMax, kLongMax, 0, 1, 0, kIntMax, true},
      {"keep INT_MAX, two writes", kIntMax, 2, 0, 100 * MiB, 0, 200 * MiB, false},
      {"keep INT_MAX, INT_MAX there", kIntMax, kLongMax, kIntMax, 100 * MiB, 0, 100 * MiB, false},
      {"a checkpoint of INT64_MAX bytes: saturates", kIntMax, -1, 0, kInt64Max, kInt64Max, kInt64Max - 1, true},
      {"keep 1, many writes: 1 kept + 1 written", 1, kLongMax, 0, kInt64Max / 2, 0, kInt64Max - 1, false},
  };
  for (const SpaceRow& r : rows) {
    NodeFacts f = healthy_node();
    f.keep = r.keep;
    f.max_writes = r.writes;
    f.existing_checkpoints = r.existing;
    f.checkpoint_bytes = r.each;
    f.model_file_bytes = r.model;
    f.checkpoint_free = r.free;
    const auto failures = check_node(f);
    EXPECT_EQ(!failures.empty(), r.refused) << r.what << (failures.empty() ? "" : ": " + failures[0].found);
  }
}

// The refusal's numbers read differently whenever it refuses: one decimal,
// more where they would round equal, the bytes where even six do.
void checkpoint_space_numbers_differ() {
  NodeFacts f = healthy_node();
  f.keep = 1;
  f.max_writes = 1;
  f.checkpoint_bytes = (49LL << 20) / 10;  // 4.9 MiB
  f.checkpoint_free = f.checkpoint_bytes - (8 << 10);
  auto failures = check_node(f);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_TRUE(mentions(failures[0].found, "has 4.89 MiB free, but the run needs 4.90 MiB: 1 new checkpoint(s)"))
      << failures[0].found;
  f.checkpoint_bytes = 5138025;  // 4.900002 MiB, as one byte less reads with six decimals
  f.checkpoint_free = 5138024;
  failures = check_node(f);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_TRUE(
      mentions(failures[0].found, "has 4.9 MiB (5138024 bytes) free, but the run needs 4.9 MiB (5138025 bytes)"))
      << failures[0].found;
  f.checkpoint_free = (100LL << 20) - 1;  // far apart: one decimal
  f.checkpoint_bytes = 200LL << 20;
  failures = check_node(f);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_TRUE(mentions(failures[0].found, "has 100.0 MiB free, but the run needs 200.0 MiB")) << failures[0].found;
}

// One process for the checks on made-up nodes (each test binary start loads LibTorch).
TEST(NodeChecks, EachCheckRefusesItsFailure) {
  healthy_node_passes();
  world_size_against_srun_tasks();
  checkpoint_space_for_the_kept_checkpoints();
  checkpoint_space_table();
  checkpoint_space_numbers_differ();
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
