// The start-up's deadline. Every collective before the first step is a
// blocking MPI call or NCCL's ncclCommInitRank, and none of them can time out:
// a rank that died before them, or one whose GPU hangs in NCCL's set-up,
// would leave the others waiting until the job's time limit. So the whole
// start-up runs under one clock, re-armed at each stage: MPI's start, the
// reading of the options, then each stage of the start-up sequence
// (train/startup.hpp). A stage that does not end within --startup-timeout
// ends the job (exit code 4, as a stalled collective during training), each
// rank first saying on its own line the stage it was in and whether it was
// still doing its own part or waiting for the other ranks: the rank that
// stalled, or the launcher's line about the one that died, names the cause.
//
// One start-up per process at a time (a process has one MPI job); a later
// start-up (a second run in the same process) arms the clock again.
#pragma once

#include <chrono>
#include <string>

namespace cifar {

// Arms the clock for MPI's start (the first stage), with `limit` for every
// stage until set_startup_limit() changes it.
void begin_startup(std::chrono::milliseconds limit);
// The limit of this and later stages (the configuration's --startup-timeout).
void set_startup_limit(std::chrono::milliseconds limit);
// How a stage meets the other ranks, for the message when it runs out of time.
enum class StageMeeting {
  AtItsEnd,  // its own work, then one agreement: wait_for_other_ranks() marks the change
  Inside,    // collectives within its work (building communicators, NCCL's set-up)
};

// Starts `stage` ("MPI start", "options", "data", ...) with a fresh clock.
// The test-only start-up fault (CIFAR_STARTUP_FAULT, fault_injection.hpp)
// strikes here.
void enter_startup_stage(const std::string& stage, StageMeeting meeting = StageMeeting::AtItsEnd);
// This rank's own part of the stage is done: it now waits for the others.
void wait_for_other_ranks();
// The first step begins: no more clock.
void end_startup();

// Where a rank was in its stage when the clock ran out.
enum class StagePlace { OwnWork, WaitingForOthers, InsideCollectives };

// The message of a stage past its limit.
std::string startup_timeout_message(const std::string& stage, StagePlace place, std::chrono::milliseconds limit);

}  // namespace cifar
