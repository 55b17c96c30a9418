// Failure agreement: every rank's exit code gathered to all, then one rule.
#include "comm/agreement.hpp"

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

struct Outcome {
  int exit_code = kExitOk;
  std::string message;
};

Outcome run_check(const std::function<void()>& check) {
  try {
    check();
  } catch (const Error& e) {
    return {e.exit_code(), e.what()};
  }
  return {};
}

// The lowest rank with a non-zero code reports; every rank throws its code.
void settle(int rank, const Outcome& mine, const std::vector<int>& codes) {
  for (size_t r = 0; r < codes.size(); ++r) {
    if (codes[r] == kExitOk) continue;
    const bool reporter = static_cast<size_t>(rank) == r;
    if (reporter) log::error(mine.message);
    throw AgreedFailure(codes[r], reporter);
  }
}

}  // namespace

void agree_on_startup(MPI_Comm comm, const std::function<void()>& check) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  const Outcome mine = run_check(check);
  std::vector<int> codes(static_cast<size_t>(size));
  MPI_CHECK(MPI_Allgather(&mine.exit_code, 1, MPI_INT, codes.data(), 1, MPI_INT, comm));
  settle(rank, mine, codes);
}

void fail_on_every_rank(const Error& error, int rank, int reporter) {
  if (rank == reporter) log::error(error.what());
  throw AgreedFailure(error.exit_code(), rank == reporter);
}

void agree_on(Communicator& comm, const std::function<void()>& check) {
  const Outcome mine = run_check(check);
  const auto gathered = comm.all_gather(torch::tensor({static_cast<int64_t>(mine.exit_code)})).contiguous();
  const int64_t* p = gathered.data_ptr<int64_t>();
  settle(comm.rank(), mine, std::vector<int>(p, p + gathered.numel()));
}

}  // namespace cifar
