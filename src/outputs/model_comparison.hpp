// Whether two models hold the same parameters and buffers: the largest
// relative difference of each tensor, and whether every value of both is
// finite. What compare_models reports, and what the exact-resume tests rely
// on: a model holding NaN or infinity is never the same as another, whatever
// the tolerance (NaN compares false with everything, so a plain `diff <= rtol`
// would let it pass).
#pragma once

#include <string>
#include <vector>

#include "model/model.hpp"

namespace cifar {

struct TensorDifference {
  std::string name;
  double relative = 0;  // max |a - b| / max |a| (max |a| at least 1e-12); NaN when not finite
  bool finite = true;   // every value of both tensors is finite
};

struct ModelComparison {
  std::vector<TensorDifference> tensors;  // in state_entries() order
  double largest = 0;                     // the largest relative difference of the finite tensors
  bool finite = true;                     // every tensor of both models is finite
  // Equal to within `rtol` (finite, 0 or more), every value finite.
  bool same(double rtol) const { return finite && largest <= rtol; }
};

// `a` and `b` must have the same architecture (state_entries() of each lists
// the same names and shapes): ConfigError otherwise.
ModelComparison compare_models(const Model& a, const Model& b);

}  // namespace cifar
