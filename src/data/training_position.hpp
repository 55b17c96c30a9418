// A position in training: the one type for where a run stands, used by the
// data path (which samples of the epoch are left), the Trainer and the
// checkpoint format (where a resumed run continues).
#pragma once

#include <cstdint>

namespace cifar {

// Where the run continues: `batch_in_epoch` batches of `epoch` are done
// (always at an optimiser-step boundary) and `step` optimiser steps in all.
struct TrainingPosition {
  int epoch = 0;
  long batch_in_epoch = 0;
  long step = 0;
  // The run that began this epoch, whose DistributedSampler order (and, with
  // --drop-last, whose end) the epoch follows: its world size (0: this run's
  // own epoch) and per-rank micro-batch. Another run's for the rest of an
  // epoch resumed at another world size or batch (elastic resume).
  int order_world_size = 0;
  int order_batch_size = 0;
  // Where batch 0 of batch_in_epoch's count lies in the epoch's global order:
  // 0, except for the rest of an epoch whose global position is not a whole
  // number of this run's optimiser steps (--elastic-batch per-rank).
  int64_t batch_origin = 0;
};

}  // namespace cifar
