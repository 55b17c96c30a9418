// cifar_mpi: catch preemption signals, start MPI, parse the configuration,
// then check the environment, test the node's paths, or train. Errors are caught in one place,
// run_mpi_main (mpi/mpi_main.hpp).
#include "app/check_env.hpp"
#include "app/registries.hpp"
#include "app/self_test.hpp"
#include "comm/agreement.hpp"
#include "config/run_config.hpp"
#include "mpi/mpi_main.hpp"
#include "process/preemption.hpp"
#include "process/startup_deadline.hpp"
#include "train/trainer.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

int main(int argc, char** argv) {
  using namespace cifar;
  // Before MPI and the configuration: a SIGTERM or SIGUSR1 in the first
  // moments of a job (a launcher forwarding a preemption) is recorded, and the
  // trainer stops cleanly with exit code 3 instead of dying by the signal.
  install_preemption_handlers();
  // From here to the first step, every stage runs against the clock: MPI's
  // start cannot time out by itself.
  begin_startup(milliseconds_of(startup_timeout_on_command_line(argc, argv)));
  return run_mpi_main(argc, argv, [](MpiEnvironment& env, int argc, char** argv) {
    const RegisteredNames names = registered_names();
    RunConfig config;
    enter_startup_stage("options");
    agree_on_startup(env.comm(), [&] {
      config = parse_config(argc, argv, names);
      wait_for_other_ranks();
    });
    set_startup_limit(milliseconds_of(config.comm.startup_timeout_seconds));
    if (config.help || config.check_env || config.self_test || !config.checkpoint.enabled())
      release_preemption_handlers();
    announce_stop_handlers(env.world().rank);  // after the agreement: every rank has its handlers
    if (config.help) {
      if (env.world().rank == 0) std::fputs(config_help(names).c_str(), stdout);
      return kExitOk;
    }
    if (env.world().rank == 0)
      for (const auto& note : config.inert_options) log::warn(note);
    if (config.check_env) return run_check_env(env, config);
    if (config.self_test) return run_self_test(env, config);
    Trainer trainer(env, config);
    return trainer.train();
  });
}
