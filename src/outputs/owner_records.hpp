// Whole-run identity of the files a run writes. A run with --checkpoint-dir
// has a run id, and every file it writes carries it in a small owner record
// beside the file: ".NAME.run" next to a checkpoint, the model file and the
// metrics file, "DIR/.cifar_mpi.run" in the --tensorboard folder. A record
// is a few text lines (read without opening the file it describes, so
// pruning reads one per checkpoint, not the checkpoints):
//
//   cifar_mpi output
//   run 3f0c9a61d2b8e475
//   kind checkpoint                 (model, metrics, tensorboard)
//   checkpoint-dir /abs/path/ckpt   (where the owner run's checkpoints are)
//   size 1234567                    (checkpoints: the file's size)
//
// The id is made when the run starts, from the checkpoint folder's absolute
// path, the options that define the run and the training data, so a job
// restarted before its first checkpoint is the same run again; a resumed run
// keeps the id of the checkpoint it continues. A file is proven a run's when
// its record names the run (and, for a checkpoint, the file's size): only
// such files are pruned or replaced, and an output whose record names
// another run is refused at start-up. See docs/checkpoint.md ("Whole-run
// identity").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "config/run_config.hpp"
#include "step/run_totals.hpp"

namespace cifar {

struct OwnerRecord {
  std::string run;             // the run id
  std::string kind;            // "checkpoint", "model", "metrics", "tensorboard"
  std::string checkpoint_dir;  // absolute: where the owner run's checkpoints are
  int64_t size = -1;           // a checkpoint's size in bytes
  // The run's totals, which the records of checkpoints of format 3 and
  // before carried (those checkpoints do not hold them); read, never written.
  RunTotals totals;
};

// ".NAME.run" beside the output file `path`.
std::string owner_record_path(const std::string& path);
// The record's file name for the file named `name` (".NAME.run"), and back:
// the file name a record's name stands for ("" when it is not a record's).
std::string owner_record_name(const std::string& name);
std::string recorded_file_name(const std::string& record_name);
// "DIR/.cifar_mpi.run": the record of a folder output (--tensorboard).
std::string folder_record_path(const std::string& folder);
// The file at `record_path` read once: the record, or why it cannot serve
// as one ("is empty", "is a folder, not a file", "is not an owner record
// cifar_mpi wrote", ...). Both empty when the file is absent.
struct RecordRead {
  std::optional<OwnerRecord> record;
  std::string problem;
  bool damaged = false;  // a record of ours whose number is out of the range of its meaning
};
RecordRead examine_owner_record(const std::string& record_path);
// examine_owner_record()'s problem: "" when absent or a record of ours.
std::string owner_record_problem(const std::string& record_path);
// nullopt when the record is absent or not one this program wrote.
std::optional<OwnerRecord> read_owner_record(const std::string& record_path);
// The record as its file holds it, and back (nullopt: not a record). Every
// number is checked against the limits of its meaning (finite; a time from
// 0 to 1e9 s, an accuracy from 0 to 1 or -1 for none, ...): one that does
// not read or lies outside is no record, and `problem` (when given) names
// the key and its value ("holds train-seconds -1e9, which is not a time in
// seconds (finite, from 0 to 1e+09)").
std::string owner_record_text(const OwnerRecord& record);
std::optional<OwnerRecord> parse_owner_record(const std::string& text, std::string* problem = nullptr);
// Before a run continues checkpoint `path` (whose record of an older version
// may carry the run's totals): a record of ours with a number out of range is
// refused (CheckpointError,
// exit code 6, naming the record, the key and the value). An absent record,
// or a file that is no record at all, is left to the callers as before.
void require_sound_owner_record(const std::string& path);
// Atomically (util/atomic_file.hpp).
void write_owner_record(const std::string& record_path, const OwnerRecord& record);

// The record of checkpoint `path` when it proves the file is run `run_id`'s
// (its run and the file's size), else nullopt.
std::optional<OwnerRecord> checkpoint_record_of(const std::string& path, const std::string& run_id);
// The record of checkpoint `path` when its size matches, whatever its run.
std::optional<OwnerRecord> checkpoint_record(const std::string& path);

// Rank 0, at start-up, before anything is written: an output (--output,
// --metrics, --checkpoint-dir, --tensorboard) that holds a file of another
// kind (a checkpoint as --output, a model file as --metrics, checkpoints in
// the --tensorboard folder, ...) is refused, ConfigError naming the option,
// the path, what it holds and what to do.
void check_output_kinds(const RunConfig& config);
// The same for an output whose record names another run than `run_id` (""
// for a run without --checkpoint-dir, which owns nothing): a run never
// replaces or appends to another run's files. A record that cannot be read
// (empty, damaged, a folder) is refused too: a damaged guard never disarms.
// A record of this run that names another checkpoint folder than
// `run_folder` ("" to leave this out), one that still exists, is a copy of
// the run resumed elsewhere (a fork): refused, so that it never replaces the
// files of the run it came from; where that folder is gone (moved), the run
// continues.
void check_output_owners(const RunConfig& config, const std::string& run_id, const std::string& run_folder);
// A record of run `run_id` for an output of `kind`, naming its checkpoint folder.
OwnerRecord owner_record(const std::string& run_id, const std::string& kind, const std::string& checkpoint_dir);
// Writes the owner record of `path` (an output file, or with kind
// "tensorboard" the folder) for run `run_id`; nothing for "" (no identity).
void claim_output(const std::string& path, const std::string& kind, const std::string& run_id,
                  const std::string& checkpoint_dir);
// Runs `write`, which writes the output file `path` whose owner record was
// written before it; when it fails and leaves no file, the record goes too
// (then the failure goes on): no record outlives a failed first write of
// its file.
void write_recorded_file(const std::string& path, const std::function<void()>& write);
// claim_output() for each of a run's outputs (--output, --metrics,
// --tensorboard): each record is written before its file, so a file of the
// run always has one.
void claim_outputs(const OutputConfig& output, const std::string& run_id, const std::string& checkpoint_dir);

}  // namespace cifar
