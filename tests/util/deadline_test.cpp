// Deadline: the expiry comes once, with what was armed, unless beats or a
// disarm come first. No timing is asserted: the limits are far apart (a
// loaded machine only makes the expiry later).
#include "util/deadline.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>

namespace cifar {
namespace {

using std::chrono::milliseconds;

// Records each expiry; `expired` resolves at the first.
struct Expiries {
  std::mutex mutex;
  std::string what;
  milliseconds limit{0};
  std::atomic<int> count{0};
  std::promise<void> first;

  Deadline::Expiry handler() {
    return [this](const std::string& w, milliseconds l) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        what = w;
        limit = l;
      }
      if (count.fetch_add(1) == 0) first.set_value();
    };
  }
};

TEST(Deadline, ExpiresOnceWithWhatWasArmed) {
  Expiries e;
  std::future<void> expired = e.first.get_future();
  Deadline deadline(e.handler());
  deadline.arm("stage 'data'", milliseconds(20));
  ASSERT_EQ(expired.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  std::this_thread::sleep_for(milliseconds(100));  // a second expiry would come within this
  EXPECT_EQ(e.count.load(), 1);
  std::lock_guard<std::mutex> lock(e.mutex);
  EXPECT_EQ(e.what, "stage 'data'");
  EXPECT_EQ(e.limit, milliseconds(20));
}

TEST(Deadline, ReArmingReplacesTheStage) {
  Expiries e;
  std::future<void> expired = e.first.get_future();
  Deadline deadline(e.handler());
  deadline.arm("first", std::chrono::hours(1));
  deadline.arm("second", milliseconds(10));
  ASSERT_EQ(expired.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  std::lock_guard<std::mutex> lock(e.mutex);
  EXPECT_EQ(e.what, "second");
}

TEST(Deadline, BeatsKeepItFromExpiringAndDisarmStopsIt) {
  Expiries e;
  Deadline deadline(e.handler());
  // Beats 100 times a limit, for two and a half limits: without them it would expire.
  deadline.arm("heartbeat", std::chrono::seconds(1));
  for (int i = 0; i < 250; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    deadline.beat();
  }
  deadline.disarm();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(e.count.load(), 0);
}

TEST(Deadline, BeatDoesNotArm) {
  Expiries e;
  Deadline deadline(e.handler());
  deadline.beat();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(e.count.load(), 0);
}

TEST(Deadline, MillisecondsOfSeconds) {
  EXPECT_EQ(milliseconds_of(300), milliseconds(300000));
  EXPECT_EQ(milliseconds_of(0.25), milliseconds(250));
}

}  // namespace
}  // namespace cifar
