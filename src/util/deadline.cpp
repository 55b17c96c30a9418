// A clock on its own thread (see deadline.hpp).
#include "util/deadline.hpp"

#include <utility>

namespace cifar {

Deadline::Deadline(Expiry on_expiry) : on_expiry_(std::move(on_expiry)), thread_([this] { watch(); }) {}

Deadline::~Deadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Deadline::arm(std::string what, std::chrono::milliseconds limit) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    what_ = std::move(what);
    limit_ = limit;
    due_ = std::chrono::steady_clock::now() + limit;
  }
  changed_.notify_all();
}

// No notification: a later due time needs no earlier wake-up, and a beat
// comes often (the thread re-reads the due time when it wakes).
void Deadline::beat() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (armed_) due_ = std::chrono::steady_clock::now() + limit_;
}

void Deadline::disarm() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }
  changed_.notify_all();
}

void Deadline::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      changed_.wait(lock);
      continue;
    }
    if (std::chrono::steady_clock::now() < due_) {
      changed_.wait_until(lock, due_);
      continue;
    }
    armed_ = false;  // once per arming
    const std::string what = what_;
    const std::chrono::milliseconds limit = limit_;
    lock.unlock();
    on_expiry_(what, limit);
    lock.lock();
  }
}

}  // namespace cifar
