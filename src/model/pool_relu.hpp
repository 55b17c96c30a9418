// relu(max_pool2d(x, 2)) as one fused operation with its own backward, for
// channels_last float tensors on the CPU.
//
// Why: in the convnet the two pooling layers cost about a fifth of a training
// step on a CPU, almost all of it memory traffic. LibTorch's version reads the
// conv output, writes the pooled tensor and 8-byte indices, reads them again
// for relu; its backward zero-fills the whole conv-sized gradient and then
// scatters into it, and relu's backward is one more pass. Here the forward is
// one read of the input and one write of the output plus 1-byte window
// positions, and the backward writes every element of the input gradient once.
//
// The results are bit-identical to torch::relu(torch::max_pool2d(x, 2)) and
// its autograd backward: the same window scan order and tie rule (the first
// maximum wins; NaN wins), and relu's backward rule (zero where the output is
// <= 0). Any other input (NCHW, CUDA, other dtypes) takes the LibTorch path.
#pragma once

#include <torch/torch.h>

namespace cifar {

// True when max_pool2x2_relu runs the fused kernel for x (else LibTorch ops).
bool fused_pool_relu_applies(const torch::Tensor& x);

// relu(max_pool2d(x, kernel 2, stride 2)) for a [N, C, H, W] tensor; odd H or
// W drop the last row or column, as max_pool2d's floor mode does.
torch::Tensor max_pool2x2_relu(const torch::Tensor& x);

}  // namespace cifar
