// Prefetcher<T>: runs a producer function on a background thread and hands its
// results to one consumer in order, through a bounded queue (the producer
// waits when `depth` items are ready). The producer returning nullopt ends the
// stream; an exception thrown by the producer is rethrown by the consumer's
// next() after the items produced before it. Destruction stops and joins the
// thread even when the consumer quits early.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace cifar {

template <typename T>
class Prefetcher {
 public:
  using Produce = std::function<std::optional<T>()>;

  Prefetcher(Produce produce, size_t depth)
      : produce_(std::move(produce)), depth_(depth < 1 ? 1 : depth), thread_([this] { run(); }) {}
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    space_.notify_all();
    thread_.join();
  }

  // The next item; nullopt once the producer has finished. Rethrows its error.
  std::optional<T> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return !queue_.empty() || finished_; });
    if (!queue_.empty()) {
      T item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      space_.notify_one();
      return item;
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return std::nullopt;
  }

 private:
  void run() {
    try {
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          space_.wait(lock, [this] { return queue_.size() < depth_ || stop_; });
          if (stop_) break;
        }
        std::optional<T> item = produce_();  // outside the lock: this is the slow part
        std::lock_guard<std::mutex> lock(mutex_);
        if (!item) break;
        queue_.push_back(std::move(*item));
        ready_.notify_one();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    ready_.notify_all();
  }

  Produce produce_;
  size_t depth_;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<T> queue_;
  bool stop_ = false, finished_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts after every other member is built
};

}  // namespace cifar
