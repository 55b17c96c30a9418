// The quintic Newton-Schulz iteration Muon orthogonalises its updates with:
// for a batch of matrices X [B,m,n], each normalised to unit Frobenius norm
// (so every singular value is at most 1), three steps of
//     A = X X^T,  X <- a X + (b A + c A^2) X
// with the coefficients of the Hiverge CIFAR-10 record (hiverge/cifar10-
// speedrun). Each step maps every singular value s to p(s) = a s + b s^3 +
// c s^5 and keeps the singular vectors: the result is U p(p(p(S/|X|))) V^T,
// an approximation of the orthogonal factor U V^T whose singular values lie
// in the band 0.76..1.37 for every normalised input value of at least 0.02.
// Tall matrices are iterated transposed (A is then the smaller Gram matrix).
#pragma once

#include <torch/torch.h>

namespace cifar {

struct NewtonSchulzOptions {
  double a = 3.4576, b = -4.7391, c = 2.0843;
  int steps = 3;
  double eps = 1e-5;  // added to the norm the input is divided by
};

// One application of the scalar map p to `s` (what a step does to a singular value).
double newton_schulz_polynomial(double s, const NewtonSchulzOptions& options = {});

// `x`: [B,m,n] (or [m,n]); the result has its shape and dtype. `scale`, a
// 0-dim tensor (or undefined: 1), multiplies each matrix before the
// normalisation, as the Hiverge record recipe's target magnitude does; it changes the result
// only through `eps`. The arithmetic runs in `x`'s dtype.
torch::Tensor newton_schulz(const torch::Tensor& x, const torch::Tensor& scale = {},
                            const NewtonSchulzOptions& options = {});

}  // namespace cifar
