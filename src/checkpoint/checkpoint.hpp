// Checkpoints: everything a run needs to continue exactly where it stopped,
// in one file. This header gathers the pieces, one job each:
//   format.hpp       the file format: its keys declared once, encode and read
//   train_state.hpp  capture and restore of a live run (its stateful parts)
//   resume.hpp       whether and how a run continues a checkpoint (elastic resume)
//   checkpointer.hpp the policy: file names, when to write, --resume
//   messages.hpp     how errors about a checkpoint file are phrased
// See docs/checkpoint.md.
#pragma once

#include "checkpoint/checkpointer.hpp"
#include "checkpoint/format.hpp"
#include "checkpoint/resume.hpp"
#include "checkpoint/train_state.hpp"
