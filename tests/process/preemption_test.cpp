// What the ranks agree a preemption was: every rank's first signal named, so
// that a SIGUSR1 seen first by some ranks is never logged as only SIGTERM.
#include "process/preemption.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace cifar {
namespace {

TEST(Preemption, EveryRanksFirstSignalIsNamed) {
  struct Row {
    std::vector<int> firsts;
    int signal;
    std::string by;
  };
  for (const Row& row : std::vector<Row>{{{0, 0}, 0, ""},
                                         {{SIGUSR1, 0}, SIGUSR1, "SIGUSR1"},
                                         {{SIGTERM, SIGTERM}, SIGTERM, "SIGTERM"},
                                         {{SIGUSR1, SIGTERM, 0}, SIGTERM, "SIGUSR1 and SIGTERM"},
                                         {{SIGTERM, SIGUSR1}, SIGTERM, "SIGUSR1 and SIGTERM"}}) {
    const AgreedPreemption agreed = agree_on_signals(row.firsts);
    EXPECT_EQ(agreed.signal, row.signal) << row.by;
    EXPECT_EQ(agreed.by, row.by);
  }
}

}  // namespace
}  // namespace cifar
