// Failure agreement at several world sizes: a check that fails on some ranks
// makes every rank throw AgreedFailure with the lowest failing rank's exit
// code, reported by that rank only; a check that passes everywhere returns.
#include <gtest/gtest.h>

#include "comm/agreement.hpp"
#include "comm/mpi_communicator.hpp"
#include "support/mpi_test_env.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

MpiCommunicator& control() {
  static MpiCommunicator c(test::env().comm());
  return c;
}

// Ranks >= 1 fail: odd ranks with a configuration error, even ones at run time.
void failing_check() {
  const int rank = control().rank();
  if (rank == 0) return;
  if (rank % 2 == 1) throw ConfigError("rank " + std::to_string(rank) + " has a bad value");
  throw Error("rank " + std::to_string(rank) + " failed");
}

template <typename Agree>
void expect_agreed_failure(Agree agree) {
  try {
    agree(failing_check);
    EXPECT_EQ(control().size(), 1) << "only a world of one rank has no failing rank";
  } catch (const AgreedFailure& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage) << "rank 1, the lowest failing one, failed with a configuration error";
    EXPECT_EQ(e.reported(), control().rank() == 1);
  }
}

TEST(Agreement, StartupCheckOverMpi) {
  agree_on_startup(test::env().comm(), [] {});
  expect_agreed_failure([](auto check) { agree_on_startup(test::env().comm(), check); });
}

TEST(Agreement, RunTimeCheckOverACommunicator) {
  agree_on(control(), [] {});
  expect_agreed_failure([](auto check) { agree_on(control(), check); });
}

}  // namespace
}  // namespace cifar
