// The start-up sequence at several world sizes: a walk passes every stage
// once, in the one order, stops after the stage asked for, and a stage that
// fails on one rank stops every rank alike there (its agreement), with the
// stage known for the failure's report and no later stage walked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/mpi_test_env.hpp"
#include "train/startup.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

int rank() { return test::env().world().rank; }

// Records the stages it is walked through; fails at `fail_at` on the last rank.
class RecordingWalk : public StartupWalk {
 public:
  explicit RecordingWalk(std::string fail_at = "") : fail_at_(std::move(fail_at)) {}
  void configuration() override { enter("configuration"); }
  std::vector<NodeFailure> node_launch() override { return enter_node("node launch"); }
  void device() override { enter("device"); }
  void outputs() override { enter("outputs"); }
  void data() override { enter("data"); }
  void model() override { enter("model"); }
  std::vector<NodeFailure> node_resources() override { return enter_node("node resources"); }
  void communication() override { enter("communication"); }
  void resume() override { enter("resume"); }

  std::string walked;

 private:
  bool failing(const std::string& stage) const { return stage == fail_at_ && rank() == test::env().world().size - 1; }
  void record(const std::string& stage) { walked += (walked.empty() ? "" : ", ") + stage; }
  void enter(const std::string& stage) {
    record(stage);
    if (failing(stage)) throw ConfigError("the " + stage + " stage failed here");
  }
  // A node stage fails by returning this node's failure.
  std::vector<NodeFailure> enter_node(const std::string& stage) {
    record(stage);
    if (!failing(stage)) return {};
    NodeFailure failure;
    failure.check = stage;
    failure.host = "node";
    failure.found = "no room on this node";
    failure.fix = "free some";
    return {failure};
  }
  std::string fail_at_;
};

// The exit code the walk ends every rank with (AgreedFailure's); 0 when it passes.
int exit_code_of(RecordingWalk& walk) {
  try {
    walk_startup(test::env().comm(), "node", walk, false);
  } catch (const AgreedFailure& e) {
    return e.exit_code();
  }
  return 0;
}

TEST(Startup, EveryStageOnceInTheOneOrder) {
  RecordingWalk walk;
  EXPECT_EQ(exit_code_of(walk), 0);
  EXPECT_EQ(walk.walked, startup_stage_list());
  EXPECT_EQ(walk.walked,
            "configuration, node launch, device, outputs, data, model, node resources, communication, resume");
  EXPECT_EQ(walk.stage(), StartupStage::Resume);
}

TEST(Startup, StopsAfterTheStageAskedFor) {
  RecordingWalk walk;
  walk_startup(test::env().comm(), "node", walk, false, StartupStage::NodeLaunch);
  EXPECT_EQ(walk.walked, "configuration, node launch");
}

TEST(Startup, AFailureOnOneRankStopsEveryRankAtItsStage) {
  RecordingWalk walk("data");
  EXPECT_EQ(exit_code_of(walk), kExitUsage) << "the data stage failed on the last rank";
  EXPECT_EQ(walk.walked, "configuration, node launch, device, outputs, data");
  EXPECT_EQ(walk.stage(), StartupStage::Data);
  EXPECT_STREQ(stage_name(walk.stage()), "data");
}

TEST(Startup, ANodeFailureStopsEveryRankWithTheNodesExitCode) {
  RecordingWalk walk("node resources");
  EXPECT_EQ(exit_code_of(walk), kExitNodeCheck) << "the node resources stage failed on the last rank";
  EXPECT_EQ(walk.walked, "configuration, node launch, device, outputs, data, model, node resources");
}

}  // namespace
}  // namespace cifar
