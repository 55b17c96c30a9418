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

}  // namespace
}  // namespace cifar
