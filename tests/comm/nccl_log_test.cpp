// The capture of NCCL's set-up log, with lines in NCCL's shapes printed to
// stdout in its place: the capture returns them all, and stdout gets back the
// lines the user would have seen (WARN and other lines; INFO only when asked).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "comm/nccl_log.hpp"
#include "support/scoped_env.hpp"

namespace cifar {
namespace {

using test::ScopedEnv;

void print_nccl_lines() {
  std::printf("n1:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n");
  std::printf("n1:10:10 [0] NCCL INFO Using network Socket\n");
  std::printf("n1:10:10 [0] NCCL WARN NET/IB : No device found.\n");
  std::fflush(stdout);
}

void captures_and_prints_back_what_the_user_would_see() {
  const ScopedEnv env({{"NCCL_DEBUG_FILE", std::nullopt}, {"NCCL_DEBUG", "WARN"}, {"NCCL_DEBUG_SUBSYS", std::nullopt}});
  testing::internal::CaptureStdout();
  std::vector<std::string> lines;
  {
    NcclLogCapture capture(true);
    ASSERT_TRUE(capture.capturing());
    EXPECT_STREQ(std::getenv("NCCL_DEBUG"), "INFO");  // raised for the capture
    EXPECT_STREQ(std::getenv("NCCL_DEBUG_SUBSYS"), "INIT");
    print_nccl_lines();
    lines = capture.finish();
    EXPECT_FALSE(capture.capturing());
  }
  const std::string shown = testing::internal::GetCapturedStdout();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "n1:10:10 [0] NCCL INFO Using network Socket");
  EXPECT_EQ(shown, "n1:10:10 [0] NCCL WARN NET/IB : No device found.\n");
}

void user_asked_for_info_sees_everything() {
  const ScopedEnv env({{"NCCL_DEBUG_FILE", std::nullopt}, {"NCCL_DEBUG", "INFO"}});
  testing::internal::CaptureStdout();
  NcclLogCapture capture(true);
  print_nccl_lines();
  EXPECT_EQ(capture.finish().size(), 3u);
  EXPECT_EQ(testing::internal::GetCapturedStdout().size(), 155u);
}

void nothing_when_disabled_or_written_to_a_file() {
  const ScopedEnv env(ScopedEnv::Values{{"NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p"}});
  NcclLogCapture to_file(true);
  EXPECT_FALSE(to_file.capturing());
  EXPECT_TRUE(to_file.finish().empty());
  NcclLogCapture off(false);
  EXPECT_FALSE(off.capturing());
}

// One process for the three cases (each test binary start loads LibTorch).
TEST(NcclLogCapture, CapturesWhatNcclPrintsAndShowsWhatTheUserAskedFor) {
  captures_and_prints_back_what_the_user_would_see();
  user_asked_for_info_sees_everything();
  nothing_when_disabled_or_written_to_a_file();
}

}  // namespace
}  // namespace cifar
