// The names of checkpoint files in a --checkpoint-dir: what the checkpoint
// policy writes and prunes, and what the output checks recognise as a
// checkpoint. Names only: reading one is checkpoint/format.hpp's.
#pragma once

#include <string>
#include <vector>

#include "data/training_position.hpp"

namespace cifar {

// "ckpt-e0001-s000123.pt"
std::string checkpoint_file_name(const TrainingPosition& position);
// Whether `name` (no folder) is such a name.
bool is_checkpoint_file_name(const std::string& name);
// Checkpoint files in `folder` named by checkpoint_file_name(), newest first
// (highest step, then highest epoch). A missing folder has none.
std::vector<std::string> list_checkpoints(const std::string& folder);

}  // namespace cifar
