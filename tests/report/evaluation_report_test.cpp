// The evaluation report's table and JSON for a known confusion matrix.
#include <gtest/gtest.h>

#include "data/cifar_schema.hpp"
#include "report/evaluation_report.hpp"

namespace cifar {
namespace {

// 20 images: class 0 has 4 (3 right, 1 called 1), class 1 has 6 (all right),
// class 9 has 10 (5 right, 5 called 0); the other classes have none.
Evaluation known() {
  Evaluation e;
  e.confusion.assign(schema::kNumClasses * schema::kNumClasses, 0);
  e.confusion[0 * 10 + 0] = 3;
  e.confusion[0 * 10 + 1] = 1;
  e.confusion[1 * 10 + 1] = 6;
  e.confusion[9 * 10 + 9] = 5;
  e.confusion[9 * 10 + 0] = 5;
  e.samples = 20;
  e.accuracy = 14.0 / 20.0;
  e.loss = 0.5;
  return e;
}

EvaluationSubject subject() {
  return {"convnet", "runs/model \"a\".pth", "data/x.h5", schema::default_class_names(), 10, 2};
}

TEST(EvaluationReport, CountsAndClassAccuracy) {
  const Evaluation e = known();
  EXPECT_EQ(e.correct(), 14);
  EXPECT_EQ(e.class_count(9), 10);
  EXPECT_DOUBLE_EQ(e.class_accuracy(0), 0.75);
  EXPECT_DOUBLE_EQ(e.class_accuracy(9), 0.5);
  EXPECT_DOUBLE_EQ(e.class_accuracy(4), 0.0) << "a class without images";
}

TEST(EvaluationReport, JsonHoldsEveryNumber) {
  const std::string json = evaluation_json(known(), subject());
  const std::string zeros = "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]";
  EXPECT_EQ(json,
            "{\"model\": \"convnet\", \"weights\": \"runs/model \\\"a\\\".pth\", \"data\": \"data/x.h5\", "
            "\"split\": \"test\", \"views\": 10, \"ranks\": 2, \"samples\": 20, \"loss\": 0.5, \"accuracy\": 0.7, "
            "\"classes\": [\"airplane\", \"automobile\", \"bird\", \"cat\", \"deer\", \"dog\", \"frog\", \"horse\", "
            "\"ship\", \"truck\"], \"class_counts\": [4, 6, 0, 0, 0, 0, 0, 0, 0, 10], "
            "\"class_accuracy\": [0.75, 1, 0, 0, 0, 0, 0, 0, 0, 0.5], \"confusion\": [[3, 1, 0, 0, 0, 0, 0, 0, 0, 0], "
            "[0, 6, 0, 0, 0, 0, 0, 0, 0, 0], " +
                zeros + ", " + zeros + ", " + zeros + ", " + zeros + ", " + zeros + ", " + zeros + ", " + zeros +
                ", [5, 0, 0, 0, 0, 0, 0, 0, 0, 5]]}\n");
}

TEST(EvaluationReport, TableHasARowPerClass) {
  const std::string table = evaluation_table(known(), subject());
  EXPECT_NE(table.find("convnet from runs/model \"a\".pth on the test split of data/x.h5: 20 images, 2 rank(s), "
                       "10 view(s) (test-time augmentation, logits averaged)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("accuracy 0.7000 (14 correct), loss 0.5000"), std::string::npos) << table;
  // Columns of 7: the class, its ten counts, its images and its accuracy.
  EXPECT_NE(table.find("airplane          3      1      0      0      0      0      0      0      0      0      4"
                       "    0.7500\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("truck             5      0      0      0      0      0      0      0      0      5     10"
                       "    0.5000\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(" airpla automo   bird"), std::string::npos) << "heads: names cut to 6 letters\n" << table;
}

TEST(EvaluationReport, JsonStringsAreEscaped) { EXPECT_EQ(json_string("a\"b\\c\nd"), "\"a\\\"b\\\\c\\u000ad\""); }

}  // namespace
}  // namespace cifar
