// multinode_allreduce_loop <seconds>: a job that keeps every rank busy in
// all-reduces for up to <seconds>, so that a test can take a host away in the
// middle of it. Each rank reports "ready" after its first all-reduce and the
// sums are checked on every round (rank r contributes r+1, the sum is known).
// Exits 0 when the time is up; any failure ends the whole job non-zero.
#include <chrono>
#include <cstdlib>
#include <string>

#include "comm/mpi_communicator.hpp"
#include "mpi/mpi_env.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace {

double parse_seconds(int argc, char** argv) {
  char* end = nullptr;
  const double s = argc == 2 ? std::strtod(argv[1], &end) : -1;
  if (argc != 2 || *end != '\0' || s <= 0)
    throw cifar::ConfigError("usage: multinode_allreduce_loop <seconds> (a positive number of seconds to run)");
  return s;
}

void run(const cifar::MpiEnvironment& env, double seconds) {
  using namespace cifar;
  using Clock = std::chrono::steady_clock;
  // A timeout longer than the run: losing a host must be detected by the
  // launcher, not by our own collective timeout.
  MpiCommunicator comm(env.comm(), std::chrono::milliseconds(static_cast<long>(seconds * 2000) + 60000));
  const int size = comm.size();
  const double expected = size * (size + 1) / 2.0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  long rounds = 0;
  while (Clock::now() < end) {
    torch::Tensor t = torch::full({1024}, static_cast<double>(comm.rank() + 1), torch::kFloat64);
    comm.all_reduce(t, ReduceOp::Sum);
    if (t.min().item<double>() != expected || t.max().item<double>() != expected)
      throw Error(strprintf("round %ld: all_reduce gave %g..%g, expected %g", rounds, t.min().item<double>(),
                            t.max().item<double>(), expected));
    if (rounds++ == 0) log::rank_line("ready");
  }
  log::rank_line(strprintf("done after %ld all-reduce rounds", rounds));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cifar;
  try {
    MpiEnvironment env(&argc, &argv);
    run(env, parse_seconds(argc, argv));
    return kExitOk;
  } catch (const Error& e) {
    log::error(e.what());
    MpiEnvironment::abort_job(e.exit_code());
  }
}
