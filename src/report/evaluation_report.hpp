// An Evaluation for people and programs: the confusion matrix with per-class
// accuracy as a text table, and the same numbers as one JSON object (the
// input of tools/plot_metrics --confusion). Used by cifar_eval.
#pragma once

#include <string>
#include <vector>

#include "eval/evaluation.hpp"

namespace cifar {

// What was evaluated, for the report's heading and the JSON's fields.
struct EvaluationSubject {
  std::string model;    // registry name
  std::string weights;  // the model file
  std::string data;     // the dataset file
  std::vector<std::string> class_names;
  int views = 1;  // logits averaged over this many views (1: no test-time augmentation)
  int ranks = 1;
};

// Heading, accuracy and loss, then one row per true class: the counts per
// predicted class and the class's accuracy.
std::string evaluation_table(const Evaluation& e, const EvaluationSubject& subject);

// {"model": ..., "weights": ..., "data": ..., "split": "test", "views": V,
//  "ranks": R, "samples": N, "loss": L, "accuracy": A, "classes": [...],
//  "class_counts": [...], "class_accuracy": [...], "confusion": [[...], ...]}
// with confusion[true][predicted]; one line, newline-terminated.
std::string evaluation_json(const Evaluation& e, const EvaluationSubject& subject);

// `text` as a JSON string literal, quotes included.
std::string json_string(const std::string& text);

}  // namespace cifar
