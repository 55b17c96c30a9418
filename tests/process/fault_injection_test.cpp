// The test-only fault injection's variable (process/fault_injection.hpp):
// only the named rank fails, only at its step; a malformed value is refused.
#include <gtest/gtest.h>

#include "process/fault_injection.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

TEST(FaultInjection, OnlyTheNamedRankFailsAtItsStep) {
  const FaultInjector rank1(1, "rank=1,step=5,kind=throw");
  EXPECT_NO_THROW(rank1.at_step(4));
  EXPECT_NO_THROW(rank1.at_step(6));
  try {
    rank1.at_step(5);
    FAIL() << "no fault at step 5";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitFailure);
    EXPECT_NE(std::string(e.what()).find("rank 1 fails as optimiser step 5 begins"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(FaultInjector(0, "step=5,rank=1").at_step(5));
  EXPECT_NO_THROW(FaultInjector().at_step(0));
}

TEST(FaultInjection, MalformedValuesAreRefused) {
  for (const char* text :
       {"rank=1", "step=2", "rank=x,step=2", "rank=1,step=2,kind=hang", "rank=1,step=-1", "rank=1,step=2,when=now"})
    EXPECT_THROW(FaultInjector(1, text), ConfigError) << text;
}

TEST(FaultInjection, StartupFaultNamesRankStageAndKind) {
  const StartupFault exits = parse_startup_fault("rank=1,stage=MPI-start,kind=exit");
  EXPECT_EQ(exits.rank, 1);
  EXPECT_EQ(exits.stage, "MPI start");  // '-' stands for a space
  EXPECT_FALSE(exits.stall);
  const StartupFault stalls = parse_startup_fault("kind=stall,stage=node resources,rank=0");
  EXPECT_EQ(stalls.rank, 0);
  EXPECT_EQ(stalls.stage, "node resources");
  EXPECT_TRUE(stalls.stall);
  // Another rank's fault, or another stage's, does nothing here.
  EXPECT_NO_FATAL_FAILURE(strike_startup_fault(stalls, 1, "node resources"));
  EXPECT_NO_FATAL_FAILURE(strike_startup_fault(stalls, 0, "data"));
}

TEST(FaultInjection, MalformedStartupFaultsAreRefused) {
  for (const char* text :
       {"rank=1,stage=data", "rank=1,kind=exit", "stage=data,kind=exit", "rank=1,stage=data,kind=hang",
        "rank=-1,stage=data,kind=exit", "rank=1,stage=,kind=exit", "rank=1,stage=data,kind=exit,x=1"})
    EXPECT_THROW(parse_startup_fault(text), ConfigError) << text;
}

}  // namespace
}  // namespace cifar
