// Owner records as guards: a record that cannot be read refuses like another
// run's, a copy of a run resumed elsewhere never replaces the files of the
// run it came from (a moved folder continues), an output that start-up would
// turn into a folder is refused before anything is made, and no record
// outlives a failed first write of its file.
#include "outputs/owner_records.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "outputs/run_outputs.hpp"
#include "support/temp_folder.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

class OwnerRecords : public test::TempFolderTest {
 protected:
  void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  // A run's config with its outputs in the test's folder.
  RunConfig config(const std::string& checkpoint_dir) const {
    RunConfig c;
    c.output.model = at("m.pth");
    c.output.metrics = "";
    c.checkpoint.dir = checkpoint_dir;
    return c;
  }
  // The ConfigError message of `f`, "" when it passes.
  static std::string refusal(const std::function<void()>& f) {
    try {
      f();
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(OwnerRecords, OnlyAnAbsentFileOrARecordOfOursServes) {
  EXPECT_EQ(owner_record_problem(at(".m.pth.run")), "") << "absent";
  write(at(".m.pth.run"), "");
  EXPECT_EQ(owner_record_problem(at(".m.pth.run")), "is empty");
  write(at(".m.pth.run"), "garbage\n");
  EXPECT_EQ(owner_record_problem(at(".m.pth.run")), "is not an owner record cifar_mpi wrote");
  write_owner_record(at(".m.pth.run"), owner_record("run-a", "model", root_));
  EXPECT_EQ(owner_record_problem(at(".m.pth.run")), "");
  paths::create_directories(at(".f.pth.run"));
  EXPECT_NE(owner_record_problem(at(".f.pth.run")), "");
}

// No number of a record is used before it is checked against the limits of
// its meaning: one out of them (negative or huge times, NaN, infinity, an
// accuracy above 1, trailing garbage) makes it no record, and the problem
// names the key and its value. A record holds a checkpoint's size; the
// totals are those an older version's record of a checkpoint carried (read,
// never written: the checkpoint holds them now).
TEST_F(OwnerRecords, ANumberOutsideTheLimitsOfItsMeaningIsNoRecord) {
  OwnerRecord r = owner_record("run-a", "checkpoint", root_);
  r.size = 1234;
  r.totals.train_seconds = 12.5;
  r.totals.test_accuracy = 0.5;
  const std::string sound = owner_record_text(r);
  EXPECT_EQ(sound, "cifar_mpi output\nrun run-a\nkind checkpoint\ncheckpoint-dir " + root_ + "\nsize 1234\n");
  ASSERT_TRUE(parse_owner_record(sound));
  auto with = [&](const std::string& key, const std::string& value) {
    std::string text = sound;
    const size_t at = text.find("\n" + key + " ");
    if (at == std::string::npos) return text + key + " " + value + "\n";
    const size_t end = text.find('\n', at + 1);
    return text.replace(at + 1, end - at - 1, key + " " + value);
  };
  struct Row {
    const char* key;
    const char* value;
    bool sound;
  };
  const Row rows[] = {
      {"train-seconds", "-1e9", false},
      {"train-seconds", "nan", false},
      {"train-seconds", "inf", false},
      {"train-seconds", "2e9", false},
      {"train-seconds", "12abc", false},
      {"train-seconds", "0", true},
      {"train-seconds", "1e9", true},
      {"eval-seconds", "-0.5", false},
      {"eval-seconds", "-nan", false},
      {"images", "-5", false},
      {"images", "1e300", false},
      {"images", "50000", true},
      {"size", "-7", false},
      {"size", "1e400", false},
      {"test-accuracy", "7", false},
      {"test-accuracy", "-0.5", false},
      {"test-accuracy", "-1", true},
      {"test-accuracy", "1", true},
      {"partial-epoch-row", "2", false},
      {"target", "1.5", false},
      {"target-accuracy", "nan", false},
      {"time-to-target", "-3", false},
      {"time-to-target", "-1", true},
      {"target-epochs", "-1", false},
      {"target-epochs", "3e9", false},
  };
  for (const Row& row : rows) {
    const std::string text = with(row.key, row.value);
    EXPECT_EQ(parse_owner_record(text).has_value(), row.sound) << row.key << " " << row.value;
    write(at(".c.pt.run"), text);
    const std::string problem = owner_record_problem(at(".c.pt.run"));
    if (row.sound) EXPECT_EQ(problem, "") << row.key << " " << row.value;
    else
      EXPECT_NE(problem.find(std::string("holds ") + row.key + " " + row.value + ", which is not"), std::string::npos)
          << row.key << " " << row.value << ": " << problem;
  }
}

TEST_F(OwnerRecords, ADamagedRecordRefusesLikeAnotherRunsRecord) {
  const RunConfig c = config(at("ckpt"));
  write(at("m.pth"), "PK\x03\x04 a model");
  for (const std::string damage : {"", "garbage\n", "cifar_mpi output\nrun \n"}) {
    write(at(".m.pth.run"), damage);
    const std::string why = refusal([&] { check_output_owners(c, "run-a", at("ckpt")); });
    EXPECT_NE(why.find("--output " + at("m.pth") + ": its owner record " + at(".m.pth.run")), std::string::npos) << why;
    EXPECT_NE(why.find("whose file it is cannot be told"), std::string::npos) << why;
  }
  ::unlink(at(".m.pth.run").c_str());
  EXPECT_EQ(refusal([&] { check_output_owners(c, "run-a", at("ckpt")); }), "") << "a file without a record";
}

TEST_F(OwnerRecords, ACopyResumedElsewhereNeverReplacesTheOriginalsFiles) {
  paths::create_directories(at("ckpt"));
  paths::create_directories(at("copy"));
  write(at("m.pth"), "PK\x03\x04 a model");
  write_owner_record(at(".m.pth.run"), owner_record("run-a", "model", at("ckpt")));
  const RunConfig original = config(at("ckpt")), copy = config(at("copy"));
  EXPECT_EQ(refusal([&] { check_output_owners(original, "run-a", at("ckpt")); }), "") << "the run itself";
  const std::string why = refusal([&] { check_output_owners(copy, "run-a", at("copy")); });
  EXPECT_NE(why.find("and this run continues a copy of it from " + at("copy") +
                     ": a copy never replaces the files of the run it came from"),
            std::string::npos)
      << why;
  EXPECT_EQ(refusal([&] { check_output_owners(copy, "run-a", ""); }), "") << "no folder to compare";
  // Moved, not copied: the original folder is gone, and the run continues.
  paths::remove_all(at("ckpt"));
  EXPECT_EQ(refusal([&] { check_output_owners(copy, "run-a", at("copy")); }), "");
  EXPECT_NE(refusal([&] { check_output_owners(copy, "run-b", at("copy")); }).find("belongs to another run"),
            std::string::npos);
}

TEST_F(OwnerRecords, AnOutputThatStartUpWouldMakeAFolderIsRefusedBeforeAnythingIsMade) {
  RunConfig c = config(at("y/ck"));
  c.output.model = at("y");
  const std::string why = refusal([&] { RunOutputs outputs(c); });
  EXPECT_NE(why.find("--output " + at("y") + " is a folder that --checkpoint-dir " + at("y/ck") + " needs"),
            std::string::npos)
      << why;
  EXPECT_FALSE(paths::exists(at("y")));
  c = config(at("ck"));
  c.output.metrics = at("m.pth/metrics.jsonl");
  EXPECT_NE(refusal([&] { RunOutputs outputs(c); }).find("is a folder that --metrics"), std::string::npos);
  // The owner record's place taken by a folder: the record could never be written.
  paths::create_directories(at(".m.pth.run"));
  const std::string record = refusal([&] { RunOutputs outputs(config(at("ck"))); });
  EXPECT_NE(record.find("--output " + at("m.pth") + ": its owner record " + at(".m.pth.run") + " is a folder"),
            std::string::npos)
      << record;
}

TEST_F(OwnerRecords, AnOutputNamedLikeACheckpointInTheCheckpointFolderIsRefused) {
  RunConfig c = config(at("ck"));
  c.output.model = at("ck/ckpt-e0001-s000020.pt");
  const std::string why = refusal([&] { RunOutputs outputs(c); });
  EXPECT_NE(why.find("is named like a checkpoint inside --checkpoint-dir " + at("ck") +
                     ", where --resume auto would take it for one"),
            std::string::npos)
      << why;
  EXPECT_FALSE(paths::exists(at("ck")));
  c.output.model = at("ck/model.pth");
  EXPECT_EQ(refusal([&] { RunOutputs outputs(c); }), "") << "another name in the folder";
}

TEST_F(OwnerRecords, NoRecordOutlivesAFailedFirstWriteOfItsFile) {
  write_owner_record(owner_record_path(at("m.pth")), owner_record("run-a", "model", root_));
  auto failing = [] { throw std::runtime_error("no space left on device"); };
  EXPECT_THROW(write_recorded_file(at("m.pth"), failing), std::runtime_error);
  EXPECT_FALSE(paths::exists(owner_record_path(at("m.pth"))));
  // A file written before (an earlier write of the run) keeps its record.
  write(at("m.pth"), "PK\x03\x04 a model");
  write_owner_record(owner_record_path(at("m.pth")), owner_record("run-a", "model", root_));
  EXPECT_THROW(write_recorded_file(at("m.pth"), failing), std::runtime_error);
  EXPECT_TRUE(paths::exists(owner_record_path(at("m.pth"))));
  write_recorded_file(at("n.pth"), [&] { write(at("n.pth"), "x"); });
  EXPECT_TRUE(paths::exists(at("n.pth")));
}

}  // namespace
}  // namespace cifar
