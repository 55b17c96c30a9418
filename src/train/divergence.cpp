// The divergence guard (see divergence.hpp).
#include "train/divergence.hpp"

#include <algorithm>

#include "comm/agreement.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

// Skipped steps are all counted; only the first few are logged one by one.
constexpr long kSkipsLogged = 10;

[[noreturn]] void stop_run(const std::string& what, const std::string& fix) {
  fail_on_every_rank(Diverged("training diverged: " + what +
                              "; stopped with exit code 5, writing no checkpoint, metrics row or model file after "
                              "the last good step (those on disk are the last good ones); " + fix),
                     std::max(process_rank(), 0));
}

}  // namespace

DivergenceGuard::DivergenceGuard(OnNonFinite policy, bool every_step, torch::Device device)
    : policy_(policy),
      every_step_(every_step || policy == OnNonFinite::Skip),
      first_bad_step_(torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(device))) {}

bool DivergenceGuard::admit(const torch::Tensor& finite, long steps_done) {
  const long step = steps_done + 1;
  if (!every_step_) {  // stop, on an asynchronous device: record on the device, decide later
    torch::NoGradGuard no_grad;
    first_bad_step_.masked_fill_(first_bad_step_.eq(0).logical_and(finite.logical_not()), step);
    return true;
  }
  if (finite.item<bool>()) return true;
  if (policy_ == OnNonFinite::Stop) {
    if (diverged_step_ == 0) diverged_step_ = step;
    return false;
  }
  ++skipped_;
  if (skipped_ <= kSkipsLogged)
    log::info(strprintf("step %ld: the averaged gradient is not finite; update skipped (--on-nonfinite skip, %ld "
                        "skipped so far%s)",
                        step, skipped_, skipped_ == kSkipsLogged ? "; further ones are counted, not logged" : ""));
  return false;
}

void DivergenceGuard::require_finite(bool synchronize) {
  if (policy_ != OnNonFinite::Stop) return;
  if (diverged_step_ == 0 && synchronize && !every_step_) diverged_step_ = first_bad_step_.item<int64_t>();
  if (diverged_step_ != 0)
    stop_run(strprintf("the averaged gradient of optimiser step %ld is not finite (NaN or infinity)", diverged_step_),
             "lower --lr (or warm up with --warmup-epochs), or pass --on-nonfinite skip to skip such steps");
}

void DivergenceGuard::require_finite_parameters(const std::vector<torch::Tensor>& parameters,
                                                long steps_done) const {
  torch::NoGradGuard no_grad;
  for (const auto& p : parameters) {
    if (torch::isfinite(p).all().item<bool>()) continue;
    stop_run(strprintf("the parameters are not finite after optimiser step %ld (an update overflowed)", steps_done),
             "lower --lr or --weight-decay; skipping steps cannot repair the parameters");
  }
}

}  // namespace cifar
