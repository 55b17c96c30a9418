// Step-phase timing and its per-epoch report (see profile.hpp).
#include "report/profile.hpp"

#include <torch/torch.h>

#include <algorithm>

#include "gpu/torch_stream.hpp"
#include "util/log.hpp"

namespace cifar {

const char* StepProfile::name(Phase p) {
  static const char* names[] = {"data wait",           "forward",   "backward", "waiting for slower ranks",
                                "comm not overlapped", "optimizer", "other"};
  return names[p];
}

void StepProfile::start_epoch() {
  if (!enabled_) return;
  seconds_.fill(0.0);
  wait_starts_.clear();
  waits_.clear();
  mark_ = std::chrono::steady_clock::now();
}

void StepProfile::mark(Phase phase) {
  // The compute stream only: a device-wide synchronisation would wait for
  // NCCL's stream too and show every all-reduce as overlapped. Waiting for
  // the all-reduce is on the compute stream (an event wait) where it is not.
  if (device_.is_cuda()) synchronize_compute_stream(device_.index());
  const auto now = std::chrono::steady_clock::now();
  seconds_[phase] += std::chrono::duration<double>(now - mark_).count();
  mark_ = now;
}

void StepProfile::end(Phase phase) {
  if (enabled_) mark(phase);
}

void StepProfile::end_comm_wait() {
  if (!enabled_) return;
  wait_starts_.push_back(std::chrono::duration<double>(mark_.time_since_epoch()).count());
  const double before = seconds_[kCommWait];
  mark(kCommWait);
  waits_.push_back(seconds_[kCommWait] - before);
}

double StepProfile::straggling_seconds(Communicator& comm) const {
  const auto counts = comm.all_gather(torch::tensor({static_cast<int64_t>(wait_starts_.size())}).to(device_)).cpu();
  if (wait_starts_.empty() || !(counts == counts[0]).all().item<bool>()) return 0.0;  // same answer on every rank
  const auto all =
      comm.all_gather(torch::tensor(wait_starts_, torch::TensorOptions().dtype(torch::kFloat64)).to(device_));
  const auto latest = std::get<0>(all.cpu().max(0)).contiguous();
  const double* p = latest.data_ptr<double>();
  return straggler_seconds(wait_starts_, waits_, std::vector<double>(p, p + latest.numel()));
}

void StepProfile::report(Communicator& comm, int epoch, bool one_host) const {
  std::vector<double> mine(seconds_.begin(), seconds_.end());
  if (one_host) {
    const double straggling = straggling_seconds(comm);
    mine[kStragglerWait] += straggling;
    mine[kCommWait] -= straggling;
  }
  auto secs = torch::tensor(mine, torch::TensorOptions().dtype(torch::kFloat64)).to(device_);
  comm.all_reduce(secs, ReduceOp::Sum);
  secs = secs.cpu();
  const double total = std::max(1e-9, secs.sum().item<double>());
  std::string line = strprintf("Profile epoch %d (sum over %d ranks, %.1f s):", epoch, comm.size(), total);
  for (int p = 0; p < kNumPhases; ++p) {
    const auto phase = static_cast<Phase>(p);
    if (!one_host && phase == kStragglerWait) continue;
    const char* label = !one_host && phase == kCommWait ? "comm wait (incl. slower ranks)" : name(phase);
    line += strprintf("%s %s %.1f%%", p == 0 ? "" : ",", label, 100.0 * secs[p].item<double>() / total);
  }
  log::info(line);
}

double straggler_seconds(const std::vector<double>& starts, const std::vector<double>& waits,
                         const std::vector<double>& latest_starts) {
  double total = 0;
  for (size_t i = 0; i < starts.size() && i < waits.size() && i < latest_starts.size(); ++i) {
    total += std::clamp(latest_starts[i] - starts[i], 0.0, waits[i]);
  }
  return total;
}

}  // namespace cifar
