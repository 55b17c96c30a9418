// CUDA_VISIBLE_DEVICES as CUDA reads it, and what a node is held to from it.
//
// CUDA takes a comma-separated list of device indices ("0,1") or UUIDs
// ("GPU-8f1c...", "MIG-4b2e...", which Slurm 26.05 may set) and stops at the
// first entry that is neither: "-1", the usual way to hide every GPU, and
// "NoDevFiles", which Slurm sets when it allocated none, grant no GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cifar {

// The entries of `value` that grant a GPU, in order and trimmed: CUDA's
// device i is entry i. Empty for an unset variable too.
std::vector<std::string> granted_gpu_entries(const char* value);
// The GPUs `value` grants; nullopt when the variable is unset (every GPU of
// the node).
std::optional<int> granted_gpu_count(const char* value);

// The GPUs a node check holds this rank's node to (NodeFacts::granted_gpus),
// or -1 for none. Only where the run asked for GPUs (--device cuda) and this
// build's CUDA runs on the node's driver: with --device auto a rank without
// a usable GPU trains on its CPU, and a driver or CUDA stack the build cannot
// use (no driver at all included) is the stack check's or the placement's
// refusal (exit code 2), never the node's fault.
int gpus_held_to(bool cuda_requested, bool driver_runs_build, const char* cuda_visible_devices);

}  // namespace cifar
