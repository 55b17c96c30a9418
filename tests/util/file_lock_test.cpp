// What a job leaves for the next one on shared outputs: a lock that refuses a
// second job naming the holder and is gone with its process however it ends,
// and partial temporary files, deleted once the lock is held.
#include "util/file_lock.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "support/temp_folder.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

class LockFolder : public test::TempFolderTest {
 protected:
  LockFolder() : TempFolderTest("cifar_lock_test_") {}
  static std::string text_of(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
  }
};

TEST_F(LockFolder, ASecondHolderIsRefusedNamingTheFirst) {
  EXPECT_EQ(lock_path_for(at("model.pth")), at(".model.pth.lock"));
  const std::string lock = lock_path_for(at("model.pth"));
  {
    FileLock first(lock, "--output model.pth");
    EXPECT_TRUE(first.held());
    const std::string holder = text_of(lock);
    EXPECT_NE(holder.find("pid " + std::to_string(getpid())), std::string::npos) << holder;
    EXPECT_NE(holder.find("host "), std::string::npos) << holder;
    try {
      FileLock second(lock, "--output model.pth");  // another open file description: flock refuses it
      FAIL() << "a second lock was granted";
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("--output model.pth is in use by another job (host "), std::string::npos) << m;
      EXPECT_NE(m.find("pid " + std::to_string(getpid())), std::string::npos) << m;
      EXPECT_NE(m.find(lock), std::string::npos) << m;
    }
  }
  EXPECT_FALSE(paths::exists(lock)) << "the holder deletes its lock file when it ends";
  FileLock again(lock, "--output model.pth");
  EXPECT_TRUE(again.held());
}

// A holder that dies without cleaning up (SIGKILL, a crash) leaves its lock
// file, but not its lock: the kernel released the flock with the process.
TEST_F(LockFolder, ACrashedHolderLeavesNoStuckLock) {
  const std::string lock = at(".cifar_mpi.lock");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    FileLock held(lock, "--checkpoint-dir x");
    _exit(0);  // no destructor: the lock file stays, as after a kill
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(paths::exists(lock));
  EXPECT_NE(text_of(lock).find("pid " + std::to_string(child)), std::string::npos);
  FileLock next(lock, "--checkpoint-dir x");
  EXPECT_TRUE(next.held());
  EXPECT_NE(text_of(lock).find("pid " + std::to_string(getpid())), std::string::npos) << "the new holder is named";
}

TEST_F(LockFolder, StaleTemporariesOfTheLockedOutputsAreRemovedOthersKept) {
  for (const char* name : {".model.pth.tmp-123", ".model.pth.tmp-99999999", ".other.pth.tmp-5", "model.pth",
                           ".model.pth.lock", "notes.tmp-3"})
    std::ofstream(at(name)) << "x";
  const auto removed =
      remove_stale_temporaries(root_, [](const std::string& final_name) { return final_name == "model.pth"; });
  EXPECT_EQ(removed, (std::vector<std::string>{".model.pth.tmp-123", ".model.pth.tmp-99999999"}));
  EXPECT_EQ(paths::list(root_),
            (std::vector<std::string>{".model.pth.lock", ".other.pth.tmp-5", "model.pth", "notes.tmp-3"}));
  EXPECT_TRUE(remove_stale_temporaries(at("missing"), [](const std::string&) { return true; }).empty());
}

}  // namespace
}  // namespace cifar
