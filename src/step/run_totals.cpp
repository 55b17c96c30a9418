// The run's totals and the limits of their numbers (see run_totals.hpp).
#include "step/run_totals.hpp"

#include <cmath>
#include <limits>

#include "util/log.hpp"

namespace cifar {

std::string number_problem(const NumberLimits& limits, double x, const std::string& text) {
  const auto& [key, meaning, low, high, none] = limits;
  if (std::isfinite(x) && (x == none || (x >= low && x <= high))) return "";
  return strprintf("holds %s %s, which is not %s (finite, from %g to %g%s)", key, text.c_str(), meaning, low, high,
                   std::isnan(none) ? "" : strprintf(", or %g", none).c_str());
}

const std::vector<TotalsNumber>& totals_numbers() {
  // Times up to 1e9 s (about 31 years), images up to 1e15.
  constexpr double kNoSentinel = std::numeric_limits<double>::quiet_NaN();
  using T = RunTotals;
  static const std::vector<TotalsNumber> numbers = {
      {{"train-seconds", "a time in seconds", 0, 1e9, kNoSentinel},
       [](const T& t) { return t.train_seconds; },
       [](T& t, double x) { t.train_seconds = x; }},
      {{"eval-seconds", "a time in seconds", 0, 1e9, kNoSentinel},
       [](const T& t) { return t.eval_seconds; },
       [](T& t, double x) { t.eval_seconds = x; }},
      {{"images", "a count of images", 0, 1e15, kNoSentinel},
       [](const T& t) { return static_cast<double>(t.images); },
       [](T& t, double x) { t.images = static_cast<int64_t>(x); }},
      {{"test-accuracy", "an accuracy", 0, 1, -1},
       [](const T& t) { return t.test_accuracy; },
       [](T& t, double x) { t.test_accuracy = x; }},
      {{"partial-epoch-row", "a flag", 0, 1, kNoSentinel},
       [](const T& t) { return t.partial_epoch_row ? 1.0 : 0.0; },
       [](T& t, double x) { t.partial_epoch_row = x != 0; }},
      {{"target", "an accuracy", 0, 1, kNoSentinel},
       [](const T& t) { return t.target; },
       [](T& t, double x) { t.target = x; }},
      {{"target-accuracy", "an accuracy", 0, 1, -1},
       [](const T& t) { return t.target_accuracy; },
       [](T& t, double x) { t.target_accuracy = x; }},
      {{"time-to-target", "a time in seconds", 0, 1e9, -1},
       [](const T& t) { return t.time_to_target; },
       [](T& t, double x) { t.time_to_target = x; }},
      {{"target-epochs", "a count of epochs", 0, 2147483647.0, kNoSentinel},
       [](const T& t) { return static_cast<double>(t.target_epochs); },
       [](T& t, double x) { t.target_epochs = static_cast<int>(x); }},
  };
  return numbers;
}

}  // namespace cifar
