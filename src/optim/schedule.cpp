// Learning-rate schedules (see schedule.hpp).
#include "optim/schedule.hpp"

#include <algorithm>
#include <cmath>

namespace cifar {
namespace {
constexpr double kPi = 3.14159265358979323846;
double cosine(double from, double to, double fraction) {
  return to + (from - to) * 0.5 * (1.0 + std::cos(kPi * std::clamp(fraction, 0.0, 1.0)));
}

// Linear from `from` to `to` as `fraction` goes from 0 to 1.
double linear(double from, double to, double fraction) {
  const double f = std::clamp(fraction, 0.0, 1.0);
  return from * (1 - f) + to * f;
}

// The rate of the schedule's shape, before the floor.
double shape_rate(const ScheduleOptions& o, long step) {
  const long total = std::max(1L, o.shape_steps());
  if (o.kind == ScheduleKind::Triangle) {
    const long up = o.warmup_steps > 0 ? o.warmup_steps : static_cast<long>(0.23 * static_cast<double>(total));
    if (step < up) return o.peak_lr * linear(0.2, 1.0, static_cast<double>(step) / static_cast<double>(up));
    return o.peak_lr *
           linear(1.0, 0.07, static_cast<double>(step - up) / static_cast<double>(std::max(1L, total - up)));
  }
  if (o.kind == ScheduleKind::OneCycle) {
    const long up = o.warmup_steps > 0 ? o.warmup_steps : std::max(1L, static_cast<long>(0.3 * total));
    const double start = o.peak_lr / 25.0;
    if (step < up) return start + (o.peak_lr - start) * static_cast<double>(step) / up;
    return cosine(o.peak_lr, o.peak_lr / 1e4, static_cast<double>(step - up) / std::max(1L, total - up));
  }
  if (o.warmup_steps > 0 && step < o.warmup_steps) {
    return o.peak_lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  }
  if (o.kind == ScheduleKind::Linear) {
    return o.peak_lr *
           linear(1.0, 0.0, static_cast<double>(step - o.warmup_steps) / std::max(1L, total - o.warmup_steps));
  }
  if (o.kind == ScheduleKind::Cosine) {
    return cosine(o.peak_lr, 0.0, static_cast<double>(step - o.warmup_steps) / std::max(1L, total - o.warmup_steps));
  }
  return o.peak_lr;
}

}  // namespace

double learning_rate(const ScheduleOptions& o, long step) {
  const double rate = shape_rate(o, step);
  return o.floor > 0 ? std::max(rate, o.floor * o.peak_lr) : rate;
}

ScheduleOptions make_schedule(const OptimConfig& optim, double lr_scale, long total_steps, long warmup_steps,
                              long steps_per_epoch) {
  const auto tail_steps =
      static_cast<long>(std::ceil(optim.lr_tail_epochs * static_cast<double>(steps_per_epoch)));  // E1: 0.375 x 32 = 12
  return ScheduleOptions{optim.schedule,
                         optim.lr * lr_scale,
                         total_steps,
                         warmup_steps,
                         std::min(tail_steps, std::max(0L, total_steps - 1)),
                         optim.lr_floor};
}

}  // namespace cifar
