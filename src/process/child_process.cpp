// Child programs under a time limit (child_process.hpp).
#include "process/child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>  // environ, with _GNU_SOURCE (g++ defines it)

#include <array>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "util/log.hpp"

namespace cifar {

namespace {

using Clock = std::chrono::steady_clock;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));  // NOLINT: posix_spawn's signature
  out.push_back(nullptr);
  return out;
}

// The child's stdin from /dev/null, stdout and stderr into the log.
class FileActions {
 public:
  explicit FileActions(const std::string& log) {
    posix_spawn_file_actions_init(&actions_);
    posix_spawn_file_actions_addopen(&actions_, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions_, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions_, STDOUT_FILENO, STDERR_FILENO);
  }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_{};
};

// A process group of its own (the time limit kills it whole), no blocked
// signals, and every signal's default action: the parent's handlers and
// ignored signals (a launcher may ignore some) are not the child's.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    posix_spawnattr_init(&attr_);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr_, &none);
    posix_spawnattr_setsigdefault(&attr_, &all);
    posix_spawnattr_setpgroup(&attr_, 0);
    posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  const posix_spawnattr_t* get() const { return &attr_; }

 private:
  posix_spawnattr_t attr_{};
};

// Waits for `pid` until `deadline`; true with `status` set when it ended.
bool wait_until(pid_t pid, Clock::time_point deadline, int& status) {
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;  // not our child any more: nothing to wait for
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::string ChildOutcome::text() const {
  if (!start_error.empty()) return start_error;
  if (timed_out) return strprintf("timed out after %.0f s", seconds);
  if (signal != 0) return strprintf("killed by signal %d (%s)", signal, ::strsignal(signal));
  return strprintf("exit code %d", exit_code);
}

ChildOutcome run_child(const ChildSpec& spec) {
  ChildOutcome outcome;
  const auto start = Clock::now();
  const FileActions actions(spec.log);
  const SpawnAttributes attributes;
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> env = c_strings(spec.env);
  pid_t pid = 0;
  const int error = ::posix_spawn(&pid, argv[0], actions.get(), attributes.get(), argv.data(), env.data());
  if (error != 0) {
    outcome.start_error = "cannot start " + spec.argv[0] + ": " + std::strerror(error);
    return outcome;
  }
  int status = 0;
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.time_limit_s));
  if (!wait_until(pid, deadline, status)) {
    outcome.timed_out = true;
    ::kill(-pid, SIGKILL);
    wait_until(pid, Clock::time_point::max(), status);
  }
  // Whatever the child left running in its group (helpers it started) goes with it.
  ::kill(-pid, SIGKILL);
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (outcome.timed_out) return outcome;
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  return outcome;
}

std::vector<std::string> environment_without(bool (*drop)(const std::string& name)) {
  std::vector<std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string assignment(*entry);
    if (!drop(assignment.substr(0, assignment.find('=')))) env.push_back(assignment);
  }
  return env;
}

bool is_launcher_variable(const std::string& name) {
  if (name == "OMPI_ALLOW_RUN_AS_ROOT" || name == "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM") return false;
  // PMI covers PMIx's PMIX_* and the PMI_RANK, PMI_FD, PMI_SIZE of PMI-1 and -2.
  static const std::array<const char*, 5> kLauncherPrefixes = {"OMPI_", "PMI", "HYDRA_", "MPI_LOCAL", "SLURM_STEP"};
  for (const char* prefix : kLauncherPrefixes)
    if (starts_with(name, prefix)) return true;
  // Slurm's per-task and per-step variables; the job's (SLURM_JOB_ID,
  // SLURM_CPUS_PER_TASK, ...) stay, as they describe the allocation.
  static const std::array<const char*, 12> kSlurmTask = {"SLURM_PROCID",          "SLURM_LOCALID",
                                                         "SLURM_NODEID",          "SLURM_NTASKS",
                                                         "SLURM_NPROCS",          "SLURM_TASK_PID",
                                                         "SLURM_GTIDS",           "SLURM_TASKS_PER_NODE",
                                                         "SLURM_NTASKS_PER_NODE", "SLURM_LAUNCH_NODE_IPADDR",
                                                         "SLURM_SRUN_COMM_HOST",  "SLURM_SRUN_COMM_PORT"};
  for (const char* slurm : kSlurmTask)
    if (name == slurm) return true;
  return false;
}

}  // namespace cifar
