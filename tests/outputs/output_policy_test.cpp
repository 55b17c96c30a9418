// The output rules every program follows (outputs/output_policy): an output
// never replaces an input of the command, a file a run owns, a name
// --resume auto takes for a checkpoint or a file of another kind; each
// refusal is one ConfigError (exit code 2) naming the file and why, with
// nothing written; the program's own earlier output is replaced, said in
// one line.
#include "outputs/output_policy.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "outputs/owner_records.hpp"
#include "support/temp_folder.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

const OutputFileKind kJson{"evaluation JSON of cifar_eval", "{\"model\": "};

class OutputPolicy : public test::TempFolderTest {
 protected:
  void write(const std::string& name, const std::string& text) const { std::ofstream(at(name)) << text; }
  std::string contents(const std::string& name) const {
    std::ifstream in(at(name));
    return {std::istreambuf_iterator<char>(in), {}};
  }
  // The refusal's message ("" when it passes) of --json NAME with --data d.h5.
  std::string refusal(const std::string& name) const {
    try {
      check_tool_output("cifar_eval", {"json", at(name)}, kJson, {{"data", at("d.h5")}, {"weights", ""}});
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.exit_code(), kExitUsage);
      return e.what();
    }
    return "";
  }
};

TEST_F(OutputPolicy, NeverAnInputOfTheCommand) {
  write("d.h5", "data");
  EXPECT_NE(refusal("d.h5").find("--json " + at("d.h5") + " is the same file as --data " + at("d.h5") +
                                 ": an output never replaces an input"),
            std::string::npos);
  // Also through a link, and before the input exists.
  ASSERT_EQ(::symlink(at("d.h5").c_str(), at("link.json").c_str()), 0);
  EXPECT_NE(refusal("link.json").find("is the same file as --data"), std::string::npos);
  ::unlink(at("d.h5").c_str());
  EXPECT_NE(refusal("d.h5").find("is the same file as --data"), std::string::npos);
}

TEST_F(OutputPolicy, NeverAFileARunOwns) {
  for (const std::string kind : {"model", "metrics", "checkpoint"}) {
    write("owned.json", "{\"model\": \"a run's file under a JSON name\"}");
    write_owner_record(owner_record_path(at("owned.json")), owner_record("run-a", kind, at("ck")));
    const std::string why = refusal("owned.json");
    EXPECT_NE(why.find("--json " + at("owned.json") + " is a " + kind + " file of run run-a"), std::string::npos)
        << why;
    EXPECT_NE(why.find("no program replaces a file a run owns"), std::string::npos) << why;
  }
  write(".owned.json.run", "cifar_mpi output\nrun \n");  // a damaged record guards too
  EXPECT_NE(refusal("owned.json").find("whose file it is cannot be told"), std::string::npos);
  write(".owned.json.run", "cifar_mpi output\nrun a\nkind checkpoint\ntrain-seconds nan\n");
  EXPECT_NE(refusal("owned.json").find("holds train-seconds nan"), std::string::npos);
  EXPECT_EQ(contents("owned.json"), "{\"model\": \"a run's file under a JSON name\"}");
  // A record whose file is gone guards nothing.
  ::unlink(at("owned.json").c_str());
  EXPECT_EQ(refusal("owned.json"), "");
  // A checkpoint's name, with or without a file.
  EXPECT_NE(refusal("ckpt-e0000-s000006.pt").find("is named like a checkpoint"), std::string::npos);
}

TEST_F(OutputPolicy, NeverAFileOfAnotherKind) {
  write("notes.json", "[1, 2]\n");
  const std::string why = refusal("notes.json");
  EXPECT_NE(why.find("--json " + at("notes.json") +
                     " exists and is not of the kind --json writes (evaluation JSON of cifar_eval)"),
            std::string::npos)
      << why;
  EXPECT_EQ(contents("notes.json"), "[1, 2]\n");
  paths::create_directories(at("folder.json"));
  EXPECT_NE(refusal("folder.json").find("is a folder"), std::string::npos);
  EXPECT_NE(refusal("notes.json/e.json"), "") << "its folder cannot be made: told now, not after scoring";
  EXPECT_EQ(refusal("new/dir/e.json"), "") << "a folder that can be made";
}

TEST_F(OutputPolicy, ItsOwnEarlierOutputIsReplacedAndSaid) {
  EXPECT_EQ(check_tool_output("cifar_eval", {"json", at("e.json")}, kJson, {}), "") << "a new file";
  write("e.json", "{\"model\": \"convnet\"}\n");
  EXPECT_EQ(check_tool_output("cifar_eval", {"json", at("e.json")}, kJson, {}),
            "replaced the earlier evaluation JSON of cifar_eval " + at("e.json") + " (21 bytes)");
  write("empty.json", "");
  EXPECT_NE(check_tool_output("cifar_eval", {"json", at("empty.json")}, kJson, {}), "") << "an empty file";
  EXPECT_EQ(check_tool_output("cifar_eval", {"json", ""}, kJson, {}), "") << "no output";
}

}  // namespace
}  // namespace cifar
