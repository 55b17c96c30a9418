// cifar::paths, the project's replacement for std::filesystem: path pieces
// with known answers, and folder operations on a real temporary folder.
#include "util/paths.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "support/scoped_env.hpp"
#include "util/error.hpp"

namespace cifar {
namespace {

TEST(Paths, JoinFileNameAndParent) {
  EXPECT_EQ(paths::join("a", "b.h5"), "a/b.h5");
  EXPECT_EQ(paths::join("a/", "b.h5"), "a/b.h5");
  EXPECT_EQ(paths::join("", "b.h5"), "b.h5");
  EXPECT_EQ(paths::join("/", "b.h5"), "/b.h5");
  EXPECT_EQ(paths::file_name("runs/x/model.pth"), "model.pth");
  EXPECT_EQ(paths::file_name("model.pth"), "model.pth");
  EXPECT_EQ(paths::file_name("/model.pth"), "model.pth");
  EXPECT_EQ(paths::parent("runs/x/model.pth"), "runs/x");
  EXPECT_EQ(paths::parent("/model.pth"), "/");
  EXPECT_EQ(paths::parent("model.pth"), "");
}

TEST(Paths, AbsoluteJoinsTheWorkingFolder) {
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(paths::absolute("data/x.h5"), std::string(cwd) + "/data/x.h5");
  EXPECT_EQ(paths::absolute("/data/x.h5"), "/data/x.h5");
}

TEST(Paths, TempDirectoryFollowsTmpdir) {
  {
    test::ScopedEnv env(test::ScopedEnv::Values{{"TMPDIR", "/scratch/job7"}});
    EXPECT_EQ(paths::temp_directory(), "/scratch/job7");
  }
  test::ScopedEnv env(test::ScopedEnv::Values{{"TMPDIR", std::nullopt}});
  EXPECT_EQ(paths::temp_directory(), "/tmp");
}

class PathsOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = paths::make_temp_directory("cifar_paths_test_");
    ASSERT_EQ(paths::parent(root_), paths::temp_directory());
    ASSERT_EQ(paths::file_name(root_).size(), std::string("cifar_paths_test_XXXXXX").size());
    ASSERT_TRUE(paths::is_directory(root_));
    ASSERT_TRUE(paths::list(root_).empty());
  }
  void TearDown() override { paths::remove_all(root_); }
  std::string at(const std::string& rel) const { return paths::join(root_, rel); }
  static void touch(const std::string& path) { std::ofstream(path) << "x"; }

  std::string root_;
};

TEST_F(PathsOnDisk, CreatesNestedFoldersAndListsThemSorted) {
  EXPECT_EQ(paths::create_directories(at("a/b/c")), "");
  EXPECT_EQ(paths::create_directories(at("a/b/c")), "");  // already there: fine
  touch(at("a/zeta.txt"));
  touch(at("a/alpha.txt"));
  EXPECT_TRUE(paths::is_directory(at("a/b/c")));
  EXPECT_TRUE(paths::is_regular_file(at("a/alpha.txt")));
  EXPECT_FALSE(paths::is_regular_file(at("a/b")));
  EXPECT_FALSE(paths::is_directory(at("a/alpha.txt")));
  EXPECT_TRUE(paths::exists(at("a/alpha.txt")));
  EXPECT_FALSE(paths::exists(at("a/missing")));
  EXPECT_EQ(paths::list(at("a")), (std::vector<std::string>{"alpha.txt", "b", "zeta.txt"}));
  EXPECT_TRUE(paths::list(at("a/b/c")).empty());
}

TEST_F(PathsOnDisk, FailuresNameThePathAndTheReason) {
  touch(at("file"));
  // The step that fails is named: here the file standing where a folder must go.
  EXPECT_EQ(paths::create_directories(at("file/sub")), at("file") + ": exists and is not a folder");

  {
    test::ScopedEnv env(test::ScopedEnv::Values{{"TMPDIR", at("file")}});  // a file, not a folder
    EXPECT_THROW(paths::make_temp_directory("x_"), Error);
  }

  try {
    paths::list(at("missing"));
    FAIL() << "listing a missing folder must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(at("missing")), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

// Inputs are classified by stat() before anything opens them: a FIFO would
// block its reader, a device would feed it without end.
TEST_F(PathsOnDisk, CheckRegularFileClassifiesWithoutOpening) {
  touch(at("small"));
  ASSERT_EQ(paths::create_directories(at("folder")), "");
  ASSERT_EQ(mkfifo(at("fifo").c_str(), 0600), 0);
  EXPECT_EQ(paths::check_regular_file(at("small")).problem, paths::FileProblem::None);
  EXPECT_EQ(paths::check_regular_file(at("small")).size, 1);
  EXPECT_TRUE(static_cast<bool>(paths::check_regular_file(at("small"), 1)));
  const auto too_large = paths::check_regular_file(at("small"), 0);
  EXPECT_EQ(too_large.problem, paths::FileProblem::TooLarge);
  EXPECT_EQ(too_large.reason, "has 1 bytes, more than the 0 such a file can have");
  EXPECT_EQ(paths::check_regular_file(at("missing")).reason, "no such file");
  EXPECT_EQ(paths::check_regular_file(at("small/x")).problem, paths::FileProblem::Missing);
  EXPECT_EQ(paths::check_regular_file(at("folder")).reason, "is a folder, not a file");
  EXPECT_EQ(paths::check_regular_file(at("fifo")).problem, paths::FileProblem::NotRegular);
  EXPECT_EQ(paths::check_regular_file("/dev/zero").reason, "is not a regular file (a FIFO, socket or device)");
}

// One folder spelled through a link, with "." and a trailing '/', is one
// path; a missing one is made absolute as given.
TEST_F(PathsOnDisk, ResolvedFollowsLinksAndKeepsMissingPathsAsGiven) {
  ASSERT_EQ(paths::create_directories(at("real/ckpt")), "");
  ASSERT_EQ(::symlink(at("real").c_str(), at("link").c_str()), 0);
  const std::string real = paths::resolved(at("real/ckpt"));
  EXPECT_EQ(paths::file_name(real), "ckpt");
  EXPECT_EQ(paths::resolved(at("link/ckpt")), real);
  EXPECT_EQ(paths::resolved(at("link/./ckpt/")), real);
  EXPECT_EQ(paths::resolved(at("real/missing")), at("real/missing"));
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(paths::resolved("no-such-folder-here"), std::string(cwd) + "/no-such-folder-here");
}

TEST_F(PathsOnDisk, RemoveAllDeletesATreeButNotWhatItsLinksPointTo) {
  ASSERT_EQ(paths::create_directories(at("tree/deep/er")), "");
  ASSERT_EQ(paths::create_directories(at("outside")), "");
  touch(at("tree/deep/er/f1"));
  touch(at("tree/f2"));
  touch(at("outside/keep"));
  ASSERT_EQ(::symlink(at("outside").c_str(), at("tree/link").c_str()), 0);
  EXPECT_EQ(paths::remove_all(at("tree")), "");
  EXPECT_FALSE(paths::exists(at("tree")));
  EXPECT_TRUE(paths::exists(at("outside/keep")));
  EXPECT_EQ(paths::remove_all(at("tree")), "");  // absent: nothing to do
  touch(at("single"));
  EXPECT_EQ(paths::remove_all(at("single")), "");
  EXPECT_FALSE(paths::exists(at("single")));
}

}  // namespace
}  // namespace cifar
