// Evaluation reports (see evaluation_report.hpp).
#include "report/evaluation_report.hpp"

#include "util/cifar10.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

using cifar10::kNumClasses;
constexpr int kColumn = 7;  // width of a count column; names are cut to fit

std::string heading(const Evaluation& e, const EvaluationSubject& s) {
  std::string text = strprintf("%s from %s on the test split of %s: %lld images, %d rank(s), %d view(s)%s\n",
                               s.model.c_str(), s.weights.c_str(), s.data.c_str(), static_cast<long long>(e.samples),
                               s.ranks, s.views, s.views > 1 ? " (test-time augmentation, logits averaged)" : "");
  text +=
      strprintf("accuracy %.4f (%lld correct), loss %.4f\n\n", e.accuracy, static_cast<long long>(e.correct()), e.loss);
  return text;
}

std::string name_of(const EvaluationSubject& s, int c) {
  return c < static_cast<int>(s.class_names.size()) ? s.class_names[c] : std::to_string(c);
}

template <typename Item>
std::string json_list(int n, Item item) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? ", " : "") + item(i);
  return out + "]";
}

}  // namespace

std::string evaluation_table(const Evaluation& e, const EvaluationSubject& s) {
  std::string text = heading(e, s) + "confusion matrix (rows: true class, columns: predicted class)\n";
  text += strprintf("%-12s", "");
  for (int p = 0; p < kNumClasses; ++p) text += strprintf("%*.*s", kColumn, kColumn - 1, name_of(s, p).c_str());
  text += strprintf("%*s %9s\n", kColumn, "images", "accuracy");
  for (int t = 0; t < kNumClasses; ++t) {
    text += strprintf("%-12.12s", name_of(s, t).c_str());
    for (int p = 0; p < kNumClasses; ++p) text += strprintf("%*lld", kColumn, static_cast<long long>(e.count(t, p)));
    text += strprintf("%*lld %9.4f\n", kColumn, static_cast<long long>(e.class_count(t)), e.class_accuracy(t));
  }
  return text;
}

std::string evaluation_json(const Evaluation& e, const EvaluationSubject& s) {
  std::string out = "{\"model\": " + json_string(s.model) + ", \"weights\": " + json_string(s.weights) +
                    ", \"data\": " + json_string(s.data) + ", \"split\": \"test\"";
  out += strprintf(", \"views\": %d, \"ranks\": %d, \"samples\": %lld, \"loss\": %.9g, \"accuracy\": %.9g", s.views,
                   s.ranks, static_cast<long long>(e.samples), e.loss, e.accuracy);
  out += ", \"classes\": " + json_list(kNumClasses, [&](int c) { return json_string(name_of(s, c)); });
  out += ", \"class_counts\": " + json_list(kNumClasses, [&](int c) { return std::to_string(e.class_count(c)); });
  out +=
      ", \"class_accuracy\": " + json_list(kNumClasses, [&](int c) { return strprintf("%.9g", e.class_accuracy(c)); });
  out += ", \"confusion\": " + json_list(kNumClasses, [&](int t) {
           return json_list(kNumClasses, [&](int p) { return std::to_string(e.count(t, p)); });
         });
  return out + "}\n";
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += strprintf("\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace cifar
