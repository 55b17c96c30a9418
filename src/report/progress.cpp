// Progress lines (see progress.hpp).
#include "report/progress.hpp"

#include <algorithm>
#include <cmath>

#include "util/log.hpp"

namespace cifar {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  if (s >= 3600) return strprintf("%ldh%02ldm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return strprintf("%ldm%02lds", s / 60, s % 60);
  return strprintf("%lds", s);
}

std::string progress_line(int epoch, long batch, long batches, double loss, double images_per_second,
                          double eta_seconds) {
  return strprintf("Epoch: %d | Batch: %ld/%ld | Loss: %.4f | %.0f img/s | ETA %s", epoch, batch, batches, loss,
                   images_per_second, format_duration(eta_seconds).c_str());
}

std::optional<StepReport> ProgressReporter::after_batch(int epoch, long batch, long steps_done, int64_t epoch_images,
                                                        const torch::Tensor& loss) const {
  if (!printing_ || batch % log_every_ != 0) return std::nullopt;
  const double elapsed =
      std::max(1e-9, std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count());
  StepReport r{epoch, batch, steps_done, loss.item<double>(), static_cast<double>(epoch_images * world_size_) / elapsed,
               0};
  // Batches since this epoch (or this resumed part of it) started.
  const double seconds_per_batch = elapsed / static_cast<double>(batch + 1);
  r.eta_seconds = seconds_per_batch * static_cast<double>(plan_.remaining_batches(epoch, batch, steps_done));
  log::info(progress_line(epoch, batch, plan_.batches_per_epoch, r.loss, r.images_per_second, r.eta_seconds));
  return r;
}

}  // namespace cifar
