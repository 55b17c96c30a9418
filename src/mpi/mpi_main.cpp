// Top-level error policy for MPI programs.
#include "mpi/mpi_main.hpp"

#include <optional>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

int run_mpi_main(int argc, char** argv, const std::function<int(MpiEnvironment&, int, char**)>& body) {
  std::optional<MpiEnvironment> env;
  try {
    env.emplace(&argc, &argv);
    return body(*env, argc, argv);
  } catch (const AgreedFailure& e) {
    return e.exit_code();  // reported once by the lowest failing rank; every rank exits cleanly
  } catch (const std::exception& e) {
    end_job_for(e, "");
  }
}

void end_job_for(const std::exception& failure, const std::string& context) {
  const auto* error = dynamic_cast<const Error*>(&failure);
  const std::string cause = error ? failure.what() : std::string("unexpected failure: ") + failure.what();
  log::error(context.empty() ? cause : context + ": " + cause);
  MpiEnvironment::abort_job(error ? error->exit_code() : kExitFailure);
}

}  // namespace cifar
