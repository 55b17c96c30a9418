// The run's outputs, settled at start-up by rank 0 before any data is read:
//  * every output path that could fail after hours of training fails now
//    (a folder that cannot be made or written, an output that is a folder,
//    a FIFO or a device, a name the file system refuses: the temporary file
//    each output is written through is created and deleted);
//  * an output never replaces an input (--output or --metrics naming the
//    --data, --config or --resume file), and two outputs are never one file;
//  * each output (model file, metrics file, checkpoint and TensorBoard folders) is locked
//    against a second job for as long as this object lives; the refusal names
//    the holder, and a crashed job's lock is gone with its process;
//  * an output holding a file of another kind (check_output_kinds,
//    owner_records.hpp) is refused;
//  * the folders it makes for them are removed again when this object goes
//    (a start-up refusal, a run that wrote nothing) if they are still empty,
//    so a refused run leaves no trace;
//  * once locked, temporary files that a killed job left beside them
//    (.NAME.tmp-PID) are deleted: no other process can be writing them.
// OutputUse::Check (--check-env) runs the same checks and leaves no trace:
// no folder is made (a missing one is judged by its nearest existing
// parent), the temporary-file probe runs only in folders that exist, a lock
// another job holds is reported but none is taken, and nothing is deleted.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "util/file_lock.hpp"

namespace cifar {

enum class OutputUse { Claim, Check };

class RunOutputs {
 public:
  // Throws ConfigError (exit code 2) naming the option, the path and the fix.
  explicit RunOutputs(const RunConfig& config, OutputUse use = OutputUse::Claim);

 private:
  // The folders missing at start-up, deepest first: on destruction (after
  // the locks, whose files are in them) each one still empty is removed.
  struct MadeFolders {
    std::vector<std::string> folders;
    void note_missing(const std::string& folder);
    ~MadeFolders();
  };
  MadeFolders made_;  // declared before locks_: destroyed after them
  std::vector<FileLock> locks_;
};

// The lock file of a folder output (--checkpoint-dir, --tensorboard).
std::string checkpoint_lock_path(const std::string& checkpoint_dir);

}  // namespace cifar
