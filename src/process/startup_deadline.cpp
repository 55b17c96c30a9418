// The start-up's one clock (see startup_deadline.hpp).
#include "process/startup_deadline.hpp"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "mpi/mpi_env.hpp"
#include "process/fault_injection.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

// Long enough for the other ranks, whose clocks started within moments of
// this one's, to print their own lines before the job ends.
constexpr unsigned kGraceSeconds = 2;

// Before MPI has started, the rank the launcher gave this process (-1 unknown).
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PMI_RANK"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return std::atoi(value);
  }
  return -1;
}

int this_rank() { return process_rank() >= 0 ? process_rank() : launcher_rank(); }

struct StartupClock {
  std::mutex mutex;
  std::string stage;
  StagePlace place = StagePlace::OwnWork;
  std::chrono::milliseconds limit{0};
  StartupFault fault;
  std::unique_ptr<Deadline> deadline;
};

StartupClock& clock_state() {
  static StartupClock state;
  return state;
}

void expire_startup(const std::string& stage, std::chrono::milliseconds limit) {
  StagePlace place = StagePlace::OwnWork;
  {
    StartupClock& c = clock_state();
    std::lock_guard<std::mutex> lock(c.mutex);
    place = c.place;
  }
  std::string message = startup_timeout_message(stage, place, limit);
  if (process_rank() < 0 && launcher_rank() >= 0) message = strprintf("launcher rank %d: ", launcher_rank()) + message;
  log::error(message + "; ending the job");
  sleep(kGraceSeconds);
  MpiEnvironment::abort_job(kExitCommTimeout);
}

void arm_stage(StartupClock& c, const std::string& stage, StagePlace place) {
  c.stage = stage;
  c.place = place;
  c.deadline->arm(stage, c.limit);
}

}  // namespace

void begin_startup(std::chrono::milliseconds limit) {
  StartupClock& c = clock_state();
  const StartupFault fault = startup_fault_from_environment();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.limit = limit;
    c.fault = fault;
    if (!c.deadline) c.deadline = std::make_unique<Deadline>(expire_startup);
  }
  enter_startup_stage("MPI start");
}

void set_startup_limit(std::chrono::milliseconds limit) {
  StartupClock& c = clock_state();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.limit = limit;
  if (c.deadline && !c.stage.empty()) arm_stage(c, c.stage, c.place);
}

void enter_startup_stage(const std::string& stage, StageMeeting meeting) {
  StartupClock& c = clock_state();
  StartupFault fault;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (!c.deadline) return;  // a program that keeps no start-up clock (the tools, the tests)
    arm_stage(c, stage, meeting == StageMeeting::Inside ? StagePlace::InsideCollectives : StagePlace::OwnWork);
    fault = c.fault;
  }
  strike_startup_fault(fault, this_rank(), stage);
}

void wait_for_other_ranks() {
  StartupClock& c = clock_state();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.place = StagePlace::WaitingForOthers;
}

void end_startup() {
  StartupClock& c = clock_state();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stage.clear();
  if (c.deadline) c.deadline->disarm();
}

std::string startup_timeout_message(const std::string& stage, StagePlace place, std::chrono::milliseconds limit) {
  std::string why;
  if (stage == "MPI start") {
    why =
        "MPI_Init waits for every rank of the job: a rank that exited or never started leaves the others here "
        "(the launcher's lines name it)";
  } else if (place == StagePlace::WaitingForOthers) {
    why =
        "this rank had done its part and waited for the others: a rank that stalled or died before this stage's "
        "collective holds them all (its own line, or the launcher's, names it)";
  } else if (place == StagePlace::InsideCollectives) {
    why =
        "this rank was still in the stage, whose collectives meet every rank: a rank that stalled or died holds "
        "them all, and so does a GPU that does not answer";
  } else {
    why =
        "this rank's own part of the stage did not finish (a file system, the GPU or the driver that does not "
        "answer), and the other ranks wait for it";
  }
  if (stage == "communication") why += "; this stage builds the communicators (NCCL's set-up: ncclCommInitRank)";
  return strprintf("start-up stage '%s' did not end within %.0f s (--startup-timeout): %s", stage.c_str(),
                   static_cast<double>(limit.count()) / 1000.0, why.c_str());
}

}  // namespace cifar
