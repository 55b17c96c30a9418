// A part of the training state that saves and restores itself (torchtitan's
// Stateful components): the optimiser, the loss scaler, lookahead and the
// default generators each write their own entries into a checkpoint's dict
// and read them back, so the checkpoint knows them only by this interface.
// Here, on the lowest floor, so that optim/ and train/ can implement it.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

namespace cifar {

// Entries by key (string -> tensor, number, list): the parts' share of a
// checkpoint's top-level dict. A c10 dict: copies share the entries.
using StateDict = c10::impl::GenericDict;
inline StateDict make_state_dict() { return StateDict(c10::StringType::get(), c10::AnyType::get()); }

class Stateful {
 public:
  virtual ~Stateful() = default;
  // Adds this part's entries; each key must be one the checkpoint format
  // declares (checkpoint/format.cpp refuses others).
  virtual void save_state(StateDict& state) const = 0;
  // Continues from entries save_state wrote, their types already checked by
  // the reader. Throws (CheckpointError, say) when they do not fit this run;
  // the caller adds the file's name.
  virtual void restore_state(const StateDict& state) = 0;
};

}  // namespace cifar
