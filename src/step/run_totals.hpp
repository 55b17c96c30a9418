// RunTotals: what a run has done over all its segments (time trained and
// evaluated, images, the last accuracy, a --target-accuracy reached). Every
// checkpoint holds them, so that a resumed run, even from a checkpoint copied
// alone to another folder, counts every segment in its RESULT line,
// train_eval_seconds and TIME_TO_TARGET (report/run_summary.hpp keeps them
// while the run trains).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cifar {

struct RunTotals {
  double train_seconds = 0;
  double eval_seconds = 0;
  int64_t images = 0;              // trained, all ranks
  double test_accuracy = -1;       // the last evaluation's, -1 before one
  bool partial_epoch_row = false;  // a metrics row for the unfinished epoch was written at this step
  // --target-accuracy reached (the run's end): the TIME_TO_TARGET figures.
  double target = 0, target_accuracy = -1, time_to_target = -1;
  int target_epochs = 0;
  bool reached_target() const { return time_to_target >= 0; }
};

// A number read from a file: what it means and the values that mean something.
struct NumberLimits {
  const char* key;
  const char* meaning;
  double low, high;  // the range, both included
  double none;       // the value written for "not yet" (-1), also allowed; NaN when there is none
};
// "" when `x` is a value of `limits` (finite, in range or its "none"), else
// "holds KEY TEXT, which is not MEANING (finite, from LOW to HIGH[, or NONE])";
// `text` is the value as the file holds it.
std::string number_problem(const NumberLimits& limits, double x, const std::string& text);

// Each number of RunTotals, under the name files give it ("train-seconds"),
// with its limits: checked before a number read from a file is used, so that
// a damaged or hand-edited file never reaches the RESULT line.
struct TotalsNumber {
  NumberLimits limits;
  double (*get)(const RunTotals&);
  void (*set)(RunTotals&, double);
};
const std::vector<TotalsNumber>& totals_numbers();

}  // namespace cifar
