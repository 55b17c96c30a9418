// Model files: a model's state dict written in torch.save's format, so that
// Python's `torch.load(path)` followed by `ConvNet().load_state_dict(sd)` works,
// and read back (from this program or from Python's torch.save) with every
// name and shape checked. Files are replaced atomically.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Dict.h>

#include "model/model.hpp"

namespace cifar {

// The model's state_dict (parameters then buffers of each module, in
// PyTorch's order) as CPU contiguous tensors, written atomically to `path`.
void save_state_dict(const Model& model, const std::string& path);

// Reads a state dict written by save_state_dict, or by Python as a plain dict
// (torch.save(dict(model.state_dict()), path)), into `model` (on any device).
// LibTorch cannot read the OrderedDict that torch.save(model.state_dict())
// writes; such a file gets an error that says how to re-save it. Every key
// of the model must be present with the same shape and no key may be extra;
// otherwise throws CheckpointError naming the path and the offending key.
void load_state_dict(Model& model, const std::string& path);

// The name of `model`'s first state entry (state_entries() order) holding a
// NaN or an infinity, "" when every value is finite: a diverged model's
// scores mean nothing.
std::string first_non_finite_entry(const Model& model);

// The two halves of the above, for files that hold a state dict among other
// things (checkpoints): the model's state as CPU copies, and the checked copy
// of a state dict into `model` (`path` names the source in errors).
c10::Dict<std::string, at::Tensor> cpu_state_dict(const Model& model);
void apply_state_dict(Model& model, const c10::Dict<c10::IValue, c10::IValue>& file, const std::string& path);

}  // namespace cifar
