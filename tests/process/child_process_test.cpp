// Child programs under a time limit (process/child_process.hpp): the exit
// code, a killing signal and a time limit each come back as the outcome, the
// output lands in the log, the environment is the one given, and the
// launcher's variables are told from the user's.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "data/test_files.hpp"
#include "process/child_process.hpp"

namespace cifar {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ChildOutcome run_shell(const std::string& script, const std::string& log, std::vector<std::string> env = {},
                       double limit = 10) {
  return run_child({{"/bin/sh", "-c", script}, std::move(env), log, limit});
}

// Each ending comes back as the outcome, with the output in the log.
TEST(ChildProcess, ExitCodeSignalAndStartFailureComeBack) {
  const test::TempDir dir;
  const ChildOutcome ok = run_shell("echo out; echo err >&2", dir.file("ok.log"));
  EXPECT_TRUE(ok.ok()) << ok.text();
  EXPECT_EQ(read_all(dir.file("ok.log")), "out\nerr\n");
  const ChildOutcome three = run_shell("exit 3", dir.file("three.log"));
  EXPECT_FALSE(three.ok());
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.text(), "exit code 3");
  const ChildOutcome killed = run_shell("kill -SEGV $$", dir.file("segv.log"));
  EXPECT_EQ(killed.signal, 11);
  EXPECT_FALSE(killed.ok());
  EXPECT_NE(killed.text().find("killed by signal 11"), std::string::npos) << killed.text();
  const ChildOutcome missing = run_child({{dir.file("no-such-program")}, {}, dir.file("missing.log"), 10});
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.text().find("no-such-program"), std::string::npos) << missing.text();
}

TEST(ChildProcess, TheTimeLimitKillsItsWholeGroup) {
  const test::TempDir dir;
  // A grandchild that would outlive its parent goes with the group.
  const ChildOutcome hung = run_shell("sleep 30 & sleep 30", dir.file("hung.log"), {}, 0.3);
  EXPECT_TRUE(hung.timed_out);
  EXPECT_FALSE(hung.ok());
  EXPECT_LT(hung.seconds, 10);
  EXPECT_NE(hung.text().find("timed out after"), std::string::npos) << hung.text();
}

TEST(ChildProcess, ItGetsTheEnvironmentGivenAndNoOther) {
  const test::TempDir dir;
  const ChildOutcome run = run_shell("echo \"[$ONLY][$HOME]\"", dir.file("env.log"), {"ONLY=this"});
  EXPECT_TRUE(run.ok()) << run.text();
  EXPECT_EQ(read_all(dir.file("env.log")), "[this][]\n");
}

TEST(ChildProcess, LauncherVariablesAreToldFromTheUsersAndLeftOut) {
  for (const char* launcher :
       {"OMPI_COMM_WORLD_RANK", "OMPI_MCA_ess", "PMIX_RANK", "PMI_FD", "HYDRA_PROXY_PORT", "MPI_LOCALRANKID",
        "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"})
    EXPECT_TRUE(is_launcher_variable(launcher)) << launcher;
  for (const char* user : {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "SLURM_JOB_ID",
                           "SLURM_CPUS_PER_TASK", "CUDA_VISIBLE_DEVICES", "PATH", "TMPDIR"})
    EXPECT_FALSE(is_launcher_variable(user)) << user;
  ::setenv("CIFAR_CHILD_TEST_DROP", "1", 1);
  ::setenv("CIFAR_CHILD_TEST_KEEP", "1", 1);
  const auto env = environment_without([](const std::string& name) { return name == "CIFAR_CHILD_TEST_DROP"; });
  EXPECT_EQ(std::count(env.begin(), env.end(), "CIFAR_CHILD_TEST_DROP=1"), 0);
  EXPECT_EQ(std::count(env.begin(), env.end(), "CIFAR_CHILD_TEST_KEEP=1"), 1);
  ::unsetenv("CIFAR_CHILD_TEST_DROP");
  ::unsetenv("CIFAR_CHILD_TEST_KEEP");
}

}  // namespace
}  // namespace cifar
