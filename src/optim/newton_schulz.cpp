// Quintic Newton-Schulz (see newton_schulz.hpp).
#include "optim/newton_schulz.hpp"

namespace cifar {
namespace {
// Each matrix's Frobenius norm, [B,1,1].
torch::Tensor frobenius(const torch::Tensor& x) { return x.flatten(1).norm(2, {1}, true).unsqueeze(-1); }
}  // namespace

double newton_schulz_polynomial(double s, const NewtonSchulzOptions& o) {
  const double s2 = s * s;
  return o.a * s + o.b * s2 * s + o.c * s2 * s2 * s;
}

torch::Tensor newton_schulz(const torch::Tensor& x, const torch::Tensor& scale, const NewtonSchulzOptions& o) {
  const bool single = x.dim() == 2;
  torch::Tensor X = single ? x.unsqueeze(0) : x;
  // The Hiverge record recipe's two normalisations: to the target magnitude, then to norm 1.
  if (scale.defined()) X = X * (scale / (frobenius(X) + o.eps));
  X = X / (frobenius(X) + o.eps);
  const bool transposed = X.size(1) > X.size(2);
  if (transposed) X = X.transpose(1, 2);
  for (int i = 0; i < o.steps; ++i) {
    const torch::Tensor A = torch::bmm(X, X.transpose(1, 2));
    const torch::Tensor B = torch::baddbmm(A, A, A, o.b, o.c);  // b A + c A A
    X = torch::baddbmm(X, B, X, o.a, 1.0);                      // a X + B X
  }
  if (transposed) X = X.transpose(1, 2);
  X = X.contiguous();
  return single ? X.squeeze(0) : X;
}

}  // namespace cifar
