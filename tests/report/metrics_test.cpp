// The metrics file is JSON Lines that any JSON reader accepts: a value that
// is not finite is null, never printf's "nan" or "inf"; resuming keeps the
// earlier epochs' rows and drops lines this program did not write; the RESULT
// line of a run without evaluation has no accuracy.
#include "report/metrics.hpp"
#include "report/run_summary.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "test_files.hpp"

namespace cifar {
namespace {

TEST(Metrics, NonFiniteValuesAreNull) {
  EpochMetrics m;
  m.epoch = 3;
  m.steps = 40;
  m.train_loss = std::numeric_limits<double>::quiet_NaN();
  m.test_loss = -std::numeric_limits<double>::quiet_NaN();
  m.test_accuracy = 0.5;
  m.lr = std::numeric_limits<double>::infinity();
  m.images_per_second = 100;
  m.epoch_seconds = 2;
  m.train_eval_seconds = std::numeric_limits<double>::infinity();
  m.world_size = 2;
  m.skipped_steps = 7;
  EXPECT_EQ(to_json(m),
            "{\"epoch\": 3, \"steps\": 40, \"train_loss\": null, \"test_loss\": null, \"test_accuracy\": 0.500000, "
            "\"lr\": null, \"images_per_second\": 100.0, \"epoch_seconds\": 2.000, \"train_eval_seconds\": null, "
            "\"world_size\": 2, \"skipped_steps\": 7}");
}

TEST(Metrics, ResumeKeepsEarlierRowsAndDropsForeignLines) {
  test::TempDir dir;
  const std::string path = dir.file("m.jsonl");
  EpochMetrics row;
  {
    std::ofstream out(path);
    for (int e = 0; e < 3; ++e) {
      row.epoch = e;
      out << to_json(row) << "\n";
    }
    out << "{\"epoch\": x}\n"
        << "garbage\n";
  }
  MetricsLog log(path);
  log.load_existing(2);  // a resume into epoch 2: rows 0 and 1 stay
  row.epoch = 2;
  log.append(row);
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  row.epoch = 0;
  std::string want = to_json(row) + "\n";
  row.epoch = 1;
  want += to_json(row) + "\n";
  row.epoch = 2;
  want += to_json(row) + "\n";
  EXPECT_EQ(text.str(), want);
}

// What the self-test reads back: the last measured value of a key, the
// unmeasured (null) ones skipped, none for a key no row has.
TEST(Metrics, LastMetricIsTheLastMeasuredValue) {
  test::TempDir dir;
  const std::string path = dir.file("m.jsonl");
  EpochMetrics row;
  {
    std::ofstream out(path);
    row.evaluated = true;
    row.train_loss = 2.5;
    row.test_accuracy = 0.25;
    out << to_json(row) << "\n";
    row.epoch = 1;
    row.evaluated = false;  // test_accuracy: null
    row.train_loss = 1.5;
    out << to_json(row) << "\n";
  }
  EXPECT_EQ(last_metric(path, "train_loss"), 1.5);
  EXPECT_EQ(last_metric(path, "test_accuracy"), 0.25);
  EXPECT_EQ(last_metric(path, "time_to_target"), std::nullopt);
  EXPECT_EQ(last_metric(dir.file("missing.jsonl"), "train_loss"), std::nullopt);
}

// The RESULT line: a run that never evaluated reports no accuracy ("none"),
// never a measured-looking 0.
TEST(Metrics, TheResultLineOfARunWithoutEvaluationSaysNone) {
  RunSummary summary;
  summary.add_training(2.0, 1000);
  EXPECT_EQ(summary.result_line(0.6773), "RESULT train_seconds=2.00 images_per_second=500.0 test_accuracy=0.6773");
  EXPECT_EQ(summary.result_line(0), "RESULT train_seconds=2.00 images_per_second=500.0 test_accuracy=0.0000");
  EXPECT_EQ(summary.result_line(-1), "RESULT train_seconds=2.00 images_per_second=500.0 test_accuracy=none");
}

}  // namespace
}  // namespace cifar
