// Which GPU a rank computes on when its launcher binds GPUs per task:
// `srun --gpus-per-task=1` or `--gpu-bind=single:1` (and Pyxis jobs) leave
// each task one GPU, its cuda:0, hidden from the others by
// CUDA_VISIBLE_DEVICES. Ranks then cannot take cuda:<local rank>; they can
// each take their cuda:0 when no two of them got the same GPU, which only
// the GPUs' PCI bus ids, compared across the node, tell.
#pragma once

#include <string>
#include <vector>

namespace cifar::gpu {

// `single_gpu_ids`: for each rank of one node, the PCI bus id of the one GPU
// it sees, or "" when it sees none or several. True when every rank sees
// exactly one GPU and no two ranks see the same one (bus ids compared
// without regard to case or to the domain's width: "00000000:3B:00.0" is
// "0000:3b:00.0"). An unknown id ("") is never taken for a distinct GPU.
bool one_gpu_per_rank(const std::vector<std::string>& single_gpu_ids);

}  // namespace cifar::gpu
