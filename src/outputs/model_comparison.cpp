// Comparing two models tensor by tensor (see model_comparison.hpp).
#include "outputs/model_comparison.hpp"

#include <algorithm>
#include <limits>

#include "util/error.hpp"

namespace cifar {

ModelComparison compare_models(const Model& a, const Model& b) {
  const auto ea = state_entries(a);
  const auto eb = state_entries(b);
  if (ea.size() != eb.size())
    throw ConfigError(
        strprintf("the models have %zu and %zu tensors: not the same architecture", ea.size(), eb.size()));
  ModelComparison result;
  for (size_t i = 0; i < ea.size(); ++i) {
    if (ea[i].first != eb[i].first || !ea[i].second.sizes().equals(eb[i].second.sizes()))
      throw ConfigError("tensor " + std::to_string(i) + " is '" + ea[i].first + "' in one model and '" + eb[i].first +
                        "' in the other, or of another shape: not the same architecture");
    const torch::NoGradGuard no_grad;
    const auto x = ea[i].second.to(torch::kFloat64);
    const auto y = eb[i].second.to(torch::kFloat64);
    TensorDifference d{ea[i].first};
    d.finite = torch::isfinite(x).all().item<bool>() && torch::isfinite(y).all().item<bool>();
    if (d.finite) {
      const double scale = x.numel() > 0 ? std::max(x.abs().max().item<double>(), 1e-12) : 1.0;
      d.relative = x.numel() > 0 ? (x - y).abs().max().item<double>() / scale : 0.0;
      result.largest = std::max(result.largest, d.relative);
    } else {
      d.relative = std::numeric_limits<double>::quiet_NaN();
      result.finite = false;
    }
    result.tensors.push_back(d);
  }
  return result;
}

}  // namespace cifar
