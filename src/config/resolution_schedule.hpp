// ResolutionSchedule: the size training images are resized to, per epoch
// (--resolution-schedule). "24:3,28:3,32" trains epochs 0-2 at 24 px, epochs
// 3-5 at 28 px and every later epoch at 32 px: each entry but the last is
// `size:epochs`, the last a size alone that holds to the end of the run. The
// empty schedule (the default) keeps the stored size. A pure function of the
// epoch, so a resumed run trains each epoch at the size an uninterrupted one
// would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cifar {

// The schedule only downsamples the stored 32 px images; below 16 px the
// speed networks' three poolings leave almost nothing to classify.
inline constexpr int kMinResolution = 16;
inline constexpr int kMaxResolution = 32;

struct ResolutionSchedule {
  struct Stage {
    int size = 0;
    int epochs = 0;
    bool operator==(const Stage& o) const { return size == o.size && epochs == o.epochs; }
  };
  std::vector<Stage> stages;  // the counted entries, in order
  int final_size = 0;         // the last entry; 0: the empty schedule

  // Throws ConfigError saying what in `text` is wrong ("--resolution-schedule: ...").
  // Returns the schedule normalized().
  static ResolutionSchedule parse(const std::string& text);
  // Adjacent stages of one size merged, a last stage of the final size
  // dropped, and 32 px throughout the empty schedule.
  ResolutionSchedule normalized() const;
  // The epochs of the counted stages: the final size starts after them.
  int64_t counted_epochs() const;
  std::string text() const;  // what parse() reads back as this schedule
  bool empty() const { return final_size == 0; }
  // The size of epoch `epoch` (0-based); 0 for the empty schedule (the stored size).
  int size_at(int64_t epoch) const;
  bool operator==(const ResolutionSchedule& o) const { return stages == o.stages && final_size == o.final_size; }
};

}  // namespace cifar
