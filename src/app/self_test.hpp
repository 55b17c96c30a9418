// `cifar_mpi --self-test`: the first command to run on a new node. Each rank
// makes its own tiny synthetic data file in a private temporary folder, then
// trains a few optimiser steps of each path the program has (SGD, Adam, bf16,
// fp16 with loss scaling, Muon, evaluation with test-time augmentation, data
// on the host, CUDA graphs with fused Adam and fused Nesterov SGD, graphs off
// against on bit for bit) and, with two or more ranks, the multi-rank paths
// (gradients all-reduced over every rank with the placement's backend, NCCL
// inside a CUDA graph). Rank 0 prints the CUDA stack and one table: each
// path PASS (with its final loss or accuracy), FAIL (the rank, its host and
// its first error line) or SKIP (the reason: "needs a GPU", "needs 2 or more
// ranks").
//
// A GPU failure often kills its process (a sticky CUDA error, a symbol lookup
// error, a segfault), so every single-rank path runs as a child process of
// its rank, this same program started as a one-rank training run on the
// rank's own device, under a time limit: a dying path is a FAIL, and the
// next one still runs. The child starts MPI as a world of its own, without
// the launcher's variables (process/child_process.hpp). The multi-rank paths
// cannot be children: they run in this job after the others, with the table
// so far already printed, and a failure there ends the job as a training
// run's does.
//
// Returns 0 when no path failed on any rank, kExitSelfTest otherwise,
// the same on every rank.
#pragma once

#include "config/run_config.hpp"
#include "mpi/mpi_env.hpp"

namespace cifar {

// TEST-ONLY: the row named by this variable gets an injected failure
// (CIFAR_FAULT_INJECT=rank=0,step=1,kind=throw in its child's environment),
// for the tests of how a failing row is reported.
inline constexpr const char* kSelfTestFailRowVariable = "CIFAR_SELF_TEST_FAIL_ROW";

int run_self_test(const MpiEnvironment& env, const RunConfig& config);

}  // namespace cifar
