// The divergence guard (see divergence.hpp).
#include "step/divergence.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "comm/agreement.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

// Skipped steps are all counted; only the first few are logged one by one.
constexpr long kSkipsLogged = 10;

[[noreturn]] void stop_run(const std::string& what, const std::string& after, const std::string& fix) {
  fail_on_every_rank(Diverged("training diverged: " + what + "; stopped with exit code 5, writing no checkpoint, " +
                              "metrics row or model file " + after + "; " + fix),
                     std::max(process_rank(), 0));
}

constexpr const char* kAfterGoodStep = "after the last good step (those on disk are the last good ones)";

}  // namespace

// The rates define the run: a resume with other values is refused as another
// run (docs/checkpoint.md), so the advice is a new run. Muon's own options
// come first where Muon updates the filters: they overflow first.
std::string lower_rate_advice(const OptimConfig& optim) {
  const std::string new_run = "start a new run (without --resume, or with another --checkpoint-dir) with ";
  if (optim.optimizer == "muon")
    return new_run +
           "a lower --muon-lr or --muon-weight-decay (Muon's filters) or --lr (the other parameters), or a "
           "warm-up (--warmup-epochs); a resume keeps the run's rates";
  return new_run + "a lower --lr or a warm-up (--warmup-epochs); a resume keeps the run's --lr";
}

DivergenceGuard::DivergenceGuard(OnNonFinite policy, bool every_step, torch::Device device, std::string rate_advice)
    : rate_advice_(std::move(rate_advice)),
      policy_(policy),
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
    log::info(
        strprintf("step %ld: the averaged gradient is not finite; update skipped (--on-nonfinite skip, %ld "
                  "skipped so far%s)",
                  step, skipped_, skipped_ == kSkipsLogged ? "; further ones are counted, not logged" : ""));
  return false;
}

void DivergenceGuard::require_finite(bool synchronize) {
  if (policy_ != OnNonFinite::Stop) return;
  if (diverged_step_ == 0 && synchronize && !every_step_) diverged_step_ = first_bad_step_.item<int64_t>();
  if (diverged_step_ != 0)
    stop_run(strprintf("the averaged gradient of optimiser step %ld is not finite (NaN or infinity)", diverged_step_),
             kAfterGoodStep, rate_advice_ + ", or resume it with --on-nonfinite skip to skip such steps");
}

void DivergenceGuard::require_finite_parameters(const std::vector<torch::Tensor>& parameters, long steps_done) const {
  torch::NoGradGuard no_grad;
  for (const auto& p : parameters) {
    if (torch::isfinite(p).all().item<bool>()) continue;
    stop_run(strprintf("the model's parameters or BatchNorm statistics are not finite after optimiser step %ld (an "
                       "update overflowed, or a skipped step's forward pass reached the statistics)",
                       steps_done),
             kAfterGoodStep, rate_advice_ + " (or --weight-decay); skipping steps cannot repair the model");
  }
}

void DivergenceGuard::require_finite_state(Model& model, long steps_done) {
  require_finite(/*synchronize=*/true);
  std::vector<torch::Tensor> state;
  for (const auto& p : model.parameters())
    if (p.requires_grad()) state.push_back(p);
  for (const auto& buffer : model.buffers()) state.push_back(buffer);
  require_finite_parameters(state, steps_done);
}

std::string epoch_problem(const TrainingConfig& limits, const EpochOutcome& o) {
  std::vector<std::string> problems;
  auto judge_loss = [&](const char* which, double loss) {
    if (!std::isfinite(loss))
      problems.push_back(strprintf("a mean %s loss that is not finite (%s)", which,
                                   std::isnan(loss) ? "NaN"
                                   : loss > 0       ? "infinity"
                                                    : "-infinity"));
    else if (loss > limits.max_loss)
      problems.push_back(strprintf("a mean %s loss of %.4g, above --max-loss %g", which, loss, limits.max_loss));
  };
  judge_loss("training", o.train_loss);
  if (o.evaluated) judge_loss("test", o.test_loss);
  const double fraction = o.steps > 0 ? static_cast<double>(o.skipped) / static_cast<double>(o.steps) : 0.0;
  if (fraction > limits.max_skipped_fraction)
    problems.push_back(
        strprintf("%ld of the run's %ld optimiser steps so far skipped for a non-finite gradient "
                  "(%.0f%%, more than --max-skipped-fraction %g)",
                  o.skipped, o.steps, 100 * fraction, limits.max_skipped_fraction));
  if (problems.empty()) return "";
  std::string joined = strprintf("epoch %d ended with ", o.epoch);
  for (size_t i = 0; i < problems.size(); ++i) joined += (i == 0 ? "" : ", and ") + problems[i];
  return joined;
}

void DivergenceGuard::require_sound_epoch(const TrainingConfig& limits, const EpochOutcome& outcome) const {
  const std::string problem = epoch_problem(limits, outcome);
  if (problem.empty()) return;
  stop_run(problem, "for this epoch (those on disk are from before it)",
           rate_advice_ +
               "; where such a result is expected, resume with a higher --max-loss "
               "or --max-skipped-fraction (they may change at a resume)");
}

}  // namespace cifar
