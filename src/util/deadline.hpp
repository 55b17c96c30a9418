// Deadline: a clock kept by a thread of its own, for waits that nothing else
// can interrupt (a blocking MPI call, ncclCommInitRank, a driver call that
// hangs). Armed with what is being waited for and a limit; when the limit
// passes before it is re-armed or disarmed, the thread calls the expiry
// handler with that description, which ends the job. Re-arming it often is a
// heartbeat: a watchdog thread that beats its own Deadline is watched in turn.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace cifar {

class Deadline {
 public:
  // `on_expiry(what, limit)` runs on the deadline's thread, at most once per
  // arming; it normally ends the process.
  using Expiry = std::function<void(const std::string& what, std::chrono::milliseconds limit)>;

  explicit Deadline(Expiry on_expiry);
  ~Deadline();  // stops the thread (an expiry in progress finishes first)
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  // (Re)starts the clock: `what` must end within `limit`.
  void arm(std::string what, std::chrono::milliseconds limit);
  // Restarts the clock with the current description and limit (a heartbeat);
  // nothing when disarmed.
  void beat();
  // Stops the clock until the next arm().
  void disarm();

 private:
  void watch();

  Expiry on_expiry_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false;
  bool stopping_ = false;
  std::string what_;
  std::chrono::milliseconds limit_{0};
  std::chrono::steady_clock::time_point due_;
  std::thread thread_;  // last: starts once the members above exist
};

// A limit given in seconds (an option's value), as a Deadline takes it.
inline std::chrono::milliseconds milliseconds_of(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

}  // namespace cifar
