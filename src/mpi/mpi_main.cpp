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
  } catch (const Error& e) {
    log::error(e.what());
    MpiEnvironment::abort_job(e.exit_code());
  } catch (const std::exception& e) {
    log::error(std::string("unexpected failure: ") + e.what());
    MpiEnvironment::abort_job(kExitFailure);
  }
}

}  // namespace cifar
