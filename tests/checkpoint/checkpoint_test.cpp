// Checkpoint pieces on known data: the loader's mid-epoch start reproduces an
// uninterrupted epoch's batches (augmentation included), file names sort
// newest first and pruning keeps the newest K, a checkpoint round-trips the
// model, optimiser, loss scaler and generator state exactly, and bad files or
// mismatched runs get errors that name the file and the fix.
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <utility>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpointer.hpp"
#include "data/batch_loader.hpp"
#include "model/model.hpp"
#include "outputs/model_file.hpp"
#include "support/zip_crcs.hpp"
#include "test_files.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

using test::TempDir;

Split random_split(int64_t n) {
  torch::manual_seed(11);
  Split s;
  s.name = "train";
  s.images = torch::randint(0, 256, {n, 3, 32, 32}, torch::kLong).to(torch::kUInt8);
  s.labels = torch::randint(0, 10, {n}, torch::kLong);
  return s;
}

std::vector<int64_t> shuffled_indices(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = (i * 37) % n;
  return v;
}

class LoaderStart : public ::testing::TestWithParam<size_t> {};

TEST_P(LoaderStart, MidEpochStartGivesTheSameBatchesAsAnUninterruptedEpoch) {
  const Split s = random_split(100);
  LoaderOptions o;
  o.augment = true;
  o.seed = 5;
  o.rank = 1;
  o.epoch = 2;
  o.prefetch_depth = GetParam();
  BatchLoader full(s, shuffled_indices(100), 16, o);
  std::vector<Batch> want;
  while (auto b = full.next()) want.push_back(*b);
  ASSERT_EQ(want.size(), 7u);
  for (int64_t start : {1, 3, 6, 7}) {
    o.start_batch = start;
    BatchLoader resumed(s, shuffled_indices(100), 16, o);
    size_t k = static_cast<size_t>(start);
    while (auto b = resumed.next()) {
      ASSERT_LT(k, want.size());
      EXPECT_TRUE(torch::equal(b->images, want[k].images)) << "start " << start << " batch " << k;
      EXPECT_TRUE(torch::equal(b->labels, want[k].labels));
      ++k;
    }
    EXPECT_EQ(k, want.size()) << "start " << start;
  }
}
INSTANTIATE_TEST_SUITE_P(InlineAndPrefetched, LoaderStart, ::testing::Values(0u, 2u));

void touch(const std::string& path, const std::string& text = "x") { std::ofstream(path) << text; }

TEST(CheckpointFiles, NamesSortNewestFirstAndPruningKeepsTheNewest) {
  EXPECT_EQ(checkpoint_file_name({1, 0, 123}), "ckpt-e0001-s000123.pt");
  TempDir dir;
  for (const char* name : {"ckpt-e0000-s000016.pt", "ckpt-e0001-s000016.pt", "ckpt-e0002-s000040.pt",
                           "ckpt-e0001-s000020.pt", ".ckpt-e0003-s000050.pt.tmp-77", "notes.txt"})
    touch(dir.file(name));
  const auto paths = list_checkpoints(dir.file(""));
  ASSERT_EQ(paths.size(), 4u);  // neither the temporary file nor other files
  EXPECT_EQ(paths[0], dir.file("ckpt-e0002-s000040.pt"));
  EXPECT_EQ(paths[1], dir.file("ckpt-e0001-s000020.pt"));
  EXPECT_EQ(paths[2], dir.file("ckpt-e0001-s000016.pt"));  // same step: the later position wins
  EXPECT_EQ(paths[3], dir.file("ckpt-e0000-s000016.pt"));
  // Files without an owner record are nobody's proven files: never pruned.
  EXPECT_EQ(prune_checkpoints(dir.file(""), 2, "run-a"), 4u);
  EXPECT_EQ(list_checkpoints(dir.file("")), paths);
  // Three of run-a's and one of run-b's, newest first: b's, then a's.
  auto own = [&](const char* name, const char* run) {
    OwnerRecord r = owner_record(run, "checkpoint", dir.file(""));
    r.size = 1;  // touch() writes one byte
    write_owner_record(owner_record_path(dir.file(name)), r);
  };
  own("ckpt-e0002-s000040.pt", "run-b");
  own("ckpt-e0001-s000020.pt", "run-a");
  own("ckpt-e0001-s000016.pt", "run-a");
  own("ckpt-e0000-s000016.pt", "run-a");
  EXPECT_EQ(prune_checkpoints(dir.file(""), 1, "run-a"), 1u);  // run-b's is left, and counted
  EXPECT_EQ(list_checkpoints(dir.file("")),
            (std::vector<std::string>{dir.file("ckpt-e0002-s000040.pt"), dir.file("ckpt-e0001-s000020.pt")}));
  EXPECT_FALSE(paths::exists(owner_record_path(dir.file("ckpt-e0000-s000016.pt"))));  // gone with its file
  // A record whose size is not the file's proves nothing.
  touch(dir.file("ckpt-e0001-s000020.pt"), "longer now");
  EXPECT_FALSE(checkpoint_record_of(dir.file("ckpt-e0001-s000020.pt"), "run-a"));
  EXPECT_EQ(prune_checkpoints(dir.file(""), 0, "run-a"), 2u);
  EXPECT_TRUE(paths::exists(dir.file("notes.txt")));
  EXPECT_TRUE(list_checkpoints(dir.file("missing")).empty());
}

// A record's file name stands for its file's, so that a start-up can tell a
// record's partial file (..NAME.run.tmp-PID) from other files.
TEST(Checkpoint, OwnerRecordNamesMapToTheirFilesAndBack) {
  EXPECT_EQ(owner_record_name("model.pth"), ".model.pth.run");
  EXPECT_EQ(paths::file_name(owner_record_path("runs/x/model.pth")), ".model.pth.run");
  EXPECT_EQ(recorded_file_name(".model.pth.run"), "model.pth");
  EXPECT_EQ(recorded_file_name(owner_record_name("ckpt-e0001-s000020.pt")), "ckpt-e0001-s000020.pt");
  for (const char* other : {"model.pth", ".run", ".model.pth", "model.pth.run", ".cifar_mpi.lock"})
    EXPECT_EQ(recorded_file_name(other), "") << other;
}

const std::string kData = "source md5 0123, 300 training samples, statistics 0000000000000001";

RunConfig sgd_config() {
  RunConfig c;
  c.model.name = "convnet";
  c.optim.optimizer = "sgd";
  c.training.batch_size = 8;
  return c;
}

// A convnet after two SGD-with-momentum steps (non-zero momentum buffers).
struct Trained {
  std::shared_ptr<Model> model = make_model("convnet");
  torch::optim::SGD optimizer{model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)};
  Trained() {
    for (int i = 0; i < 2; ++i) {
      optimizer.zero_grad();
      model->forward(torch::randn({4, 3, 32, 32})).pow(2).mean().backward();
      optimizer.step();
    }
  }
};

TEST(CheckpointFile, RoundTripRestoresModelOptimiserScalerAndGenerator) {
  torch::manual_seed(1);
  Trained a;
  LossScaler scaler(true);
  scaler.restore(1024.0, 17);
  const RunConfig c = sgd_config();
  const Checkpoint saved = capture_checkpoint(define_run(c, 2, 300, kData), {3, 5, 77}, 12.5, 40,
                                              TrainState{*a.model, a.optimizer, scaler, torch::kCPU});
  const at::Tensor draw_after_capture = torch::rand({5});

  TempDir dir;
  const std::string path = dir.file(checkpoint_file_name(saved.position));
  write_file_atomically(path, encode_checkpoint(saved));
  const Checkpoint read = read_checkpoint(path);
  EXPECT_EQ(read.position.epoch, 3);
  EXPECT_EQ(read.position.batch_in_epoch, 5);
  EXPECT_EQ(read.position.step, 77);
  EXPECT_EQ(read.run.world_size, 2);
  EXPECT_EQ(read.position.order_world_size, 2);  // the run's own order
  EXPECT_EQ(read.global_position, 5 * 8 * 2);    // 5 micro-batches of 8 per rank on 2 ranks
  EXPECT_EQ(read.epoch_loss_sum, 12.5);
  EXPECT_EQ(read.epoch_loss_count, 40);
  EXPECT_EQ(read.run.config, c.describe());

  torch::manual_seed(2);  // a different model and generator state
  Trained b;
  LossScaler other(true);
  TrainState state{*b.model, b.optimizer, other, torch::kCPU};
  restore_checkpoint(read, path, state);
  EXPECT_EQ(other.current_scale(), 1024.0);
  EXPECT_EQ(other.clean_steps(), 17);
  EXPECT_TRUE(torch::equal(torch::rand({5}), draw_after_capture));
  const auto pa = a.model->parameters(), pb = b.model->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
  // The same next step from the same state: momentum buffers were restored.
  for (Trained* t : {&a, &b}) {
    t->optimizer.zero_grad();
    for (auto& p : t->model->parameters()) p.mutable_grad() = torch::ones_like(p);
    t->optimizer.step();
  }
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no CheckpointError";
  } catch (const CheckpointError& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

// A fuzz-found input with its CRC-32s repaired (support/zip_crcs.hpp), in
// `dir`: the fuzzer changed bytes without them, and the CRC-32 check would
// refuse it before the check behind it that the test is about.
std::string repaired_copy(const std::string& name, const TempDir& dir) {
  std::ifstream in(std::string(CIFAR_FUZZ_REGRESSION_DIR) + "/checkpoint/" + name, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(bytes.empty()) << name;
  const std::string path = dir.file(name);
  write_file_atomically(path, test::with_zip_crcs_restored(bytes));
  return path;
}

// A checkpoint whose zip directory points past the file's end: LibTorch
// 1.13's pickle_load read past its buffer (a heap-buffer-overflow under ASan;
// the checkpoint fuzz harness's finding). Read through a bounded adapter, it is
// one CheckpointError naming the file.
TEST(CheckpointFile, ZipDirectoryPastTheEndIsAnErrorNotAnOverRead) {
  const std::string path = std::string(CIFAR_FUZZ_REGRESSION_DIR) + "/checkpoint/crash-zip-read-past-end.pt";
  expect_error([&] { read_checkpoint(path); }, {path, "is not readable (truncated or corrupt?)", "--resume none"});
}

// Two fuzz-found checkpoints whose decoded tensors reach past their storage
// (LibTorch 1.13's unpickler takes sizes, strides and offsets as the file
// says): refused when read, before anything is restored from them. LibTorch
// 2.15's unpickler refuses them itself ("... require a storage of at least N
// bytes, but storage only has M bytes"); either way one CheckpointError names
// the file and the storage.
TEST(CheckpointFile, TensorsPastTheirStorageAreRefused) {
  TempDir tmp;
  for (const char* name : {"crash-tensor-past-its-storage-1.pt", "crash-tensor-past-its-storage-2.pt"}) {
    const std::string path = repaired_copy(name, tmp);
    expect_error([&] { read_checkpoint(path); }, {path, "(truncated or corrupt?)", "storage"});
  }
}

// Sizes LibTorch 1.13 allocates from before reading, damaged: a LONG_BINPUT
// memo index of 0x76696863 (31.8 GB of memo table; the checkpoint fuzz
// harness's finding) and a 4 GB string length (found earlier, kept open until
// now). Refused before LibTorch reads the file, naming it and the size.
TEST(CheckpointFile, SizesPastTheFileAreRefusedBeforeLibTorchAllocatesThem) {
  const std::string dir = std::string(CIFAR_FUZZ_REGRESSION_DIR) + "/checkpoint/";
  // Its zip directory is damaged too (entries after the one the fuzzer grew
  // have no local header where it says): refused before the pickle.
  expect_error([&] { read_checkpoint(dir + "oom-unpickler-memo-index-31GB.pt"); },
               {dir + "oom-unpickler-memo-index-31GB.pt", "is not readable (truncated or corrupt?)",
                "zip entry 'archive/data/8': no local header at byte 11,218", "--resume none"});
  // The same pickle in a well-formed zip: refused at the memo index.
  expect_error([&] { read_checkpoint(dir + "oom-unpickler-memo-index-31GB-rezipped.pt"); },
               {dir + "oom-unpickler-memo-index-31GB-rezipped.pt", "is not readable (truncated or corrupt?)",
                "pickle 'archive/data.pkl' (byte 2,342 of 3,626): memo index 1,986,619,491 stored after only "});
  {
    TempDir fixed;
    const std::string readbytes = repaired_copy("oom-unpickler-readBytes-4GB.pt", fixed);
    expect_error([&] { read_checkpoint(readbytes); },
                 {readbytes, "is not readable (truncated or corrupt?)", "BINUNICODE claims a string of "});
  }

  // A valid checkpoint loads; with its pickle's zip entry claiming 4 GB it is refused.
  torch::manual_seed(1);
  Trained a;
  LossScaler no_scaling(false);
  const std::vector<char> bytes =
      encode_checkpoint(capture_checkpoint(define_run(sgd_config(), 2, 300, kData), {1, 0, 10}, 0, 0,
                                           TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU}));
  TempDir tmp;
  const std::string good = tmp.file("ckpt-e0001-s000010.pt");
  write_file_atomically(good, bytes);
  EXPECT_EQ(read_checkpoint(good).position.step, 10);
  // Its data.pkl's central directory entry, and the one inside the optimiser
  // state (a TorchScript archive within the checkpoint, first in the file).
  const std::string name = "archive/data.pkl";
  const std::string central = "PK\x01\x02";
  const auto inner = std::search(std::search(bytes.begin(), bytes.end(), central.begin(), central.end()), bytes.end(),
                                 name.begin(), name.end()) -
                     46;
  const auto outer = std::find_end(bytes.begin(), bytes.end(), name.begin(), name.end()) - 46;
  ASSERT_LT(inner, outer);
  for (const auto& [entry, what] :
       {std::pair{outer, std::string(" is not readable (truncated or corrupt?): ")},
        std::pair{inner, std::string(": its optimiser state is not readable (corrupt?): ")}}) {
    std::vector<char> damaged = bytes;
    for (size_t field : {20u, 24u})  // compressed and uncompressed size: 0xF0F0F0F0
      for (size_t i = 0; i < 4; ++i) damaged[static_cast<size_t>(entry - bytes.begin()) + field + i] = '\xF0';
    const std::string bad = tmp.file("ckpt-e0001-s000011.pt");
    write_file_atomically(bad, test::with_zip_crcs_restored(damaged));  // the sizes, not the CRC-32s
    expect_error([&] { read_checkpoint(bad); },
                 {bad + "'" + what + "zip entry 'archive/data.pkl' claims 4,042,322,160 bytes at byte ",
                  "past the archive's data", "--resume none"});
  }
}

// A fuzz-found checkpoint whose optimiser state (a TorchScript archive) has
// "__parameters__" damaged into "__annotations_": LibTorch 1.13's script
// compiler read through a null pointer compiling it (SEGV in
// ScriptTypeParser::parseClassConstant). Refused when read, naming the line.
TEST(CheckpointFile, AnOptimiserSourceLineTorchDoesNotWriteIsRefused) {
  TempDir tmp;
  const std::string path = repaired_copy("crash-optimizer-source-constant-without-type.pt", tmp);
  expect_error([&] { read_checkpoint(path); },
               {path,
                "its optimiser state is not readable (corrupt?): source 'archive/code/__torch__/___torch_mangle_1.py' "
                "line 2 is not one torch writes for a module of attributes: '  __annotations_ = []'",
                "--resume none"});
}

// The run's totals travel inside the checkpoint (a copy without its owner
// record keeps them), and a damaged one is refused naming the number.
TEST(CheckpointFile, HoldsTheRunsTotalsAndRefusesDamagedOnes) {
  torch::manual_seed(1);
  Trained a;
  LossScaler no_scaling(false);
  // Seconds trained and evaluated, images, accuracy, a partial row; a target reached: its figures.
  const RunTotals totals{12.25, 1.5, 4096, 0.625, true, 0.6, 0.625, 13.75, 3};
  Checkpoint saved = capture_checkpoint(define_run(sgd_config(), 2, 300, kData), {1, 0, 10}, 0, 0,
                                        TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU}, totals);
  TempDir dir;
  const std::string path = dir.file("ckpt-e0001-s000010.pt");
  write_file_atomically(path, encode_checkpoint(saved));
  const Checkpoint read = read_checkpoint(path);
  ASSERT_TRUE(read.totals.has_value());
  for (const TotalsNumber& n : totals_numbers()) EXPECT_EQ(n.get(*read.totals), n.get(totals)) << n.limits.key;

  for (const auto& [damage, words] : std::vector<std::pair<double, std::string>>{
           {-1e9, "holds train-seconds -1e+09, which is not a time in seconds"},
           {std::nan(""), "holds train-seconds nan, which is not a time in seconds"}}) {
    saved.totals->train_seconds = damage;
    write_file_atomically(path, encode_checkpoint(saved));
    expect_error([&] { read_checkpoint(path); }, {path, words, "in its run_totals (a damaged file)"});
  }
}

TEST(CheckpointFile, BadFilesAndMismatchedRunsNameTheFileAndTheFix) {
  torch::manual_seed(1);
  Trained a;
  const RunConfig c = sgd_config();
  LossScaler no_scaling(false);
  const std::vector<char> bytes = encode_checkpoint(capture_checkpoint(
      define_run(c, 2, 300, kData), {1, 0, 10}, 0, 0, TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU}));
  TempDir dir;
  const std::string truncated = dir.file("ckpt-e0001-s000010.pt");
  write_file_atomically(truncated, std::vector<char>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  expect_error([&] { read_checkpoint(truncated); }, {truncated, "truncated or corrupt", "--resume none"});
  expect_error([&] { read_checkpoint(dir.file("nope.pt")); }, {dir.file("nope.pt"), "cannot open"});
  const std::string model_file = dir.file("model.pth");
  save_state_dict(*a.model, model_file);
  expect_error([&] { read_checkpoint(model_file); }, {model_file, "not a cifar_mpi checkpoint"});

  const std::string good = dir.file("good.pt");
  write_file_atomically(good, bytes);
  const Checkpoint ck = read_checkpoint(good);
  RunConfig other = c;
  other.model.name = "resnet18";
  expect_error([&] { check_resumable(ck, good, define_run(other, 2, 300, kData)); },
               {good, "--model convnet there, resnet18 here", "pass the checkpoint's values (--model convnet)"});
  // Another world size keeps the global batch of 16 (8 per rank x 2 ranks) or is refused.
  expect_error([&] { check_resumable(ck, good, define_run(c, 3, 300, kData)); },
               {good,
                "global batch of 16 samples per optimiser step (8 per rank x 2 ranks) does not divide among 3 "
                "ranks",
                "resume on 1, 2, 4, 8, 16 ranks", "--elastic-batch per-rank"});
  check_resumable(ck, good, define_run(c, 4, 300, kData));
  EXPECT_EQ(resumed_step_shape(ck, good, define_run(c, 4, 300, kData)), (StepShape{4, 4, 1}));  // as written
  RunConfig four = c;
  four.training.batch_size = 4;
  EXPECT_EQ(resumed_step_shape(ck, good, define_run(four, 4, 300, kData)), (StepShape{4, 4, 1}));  // already it
  RunConfig five = c;
  five.training.batch_size = 5;
  expect_error([&] { check_resumable(ck, good, define_run(five, 4, 300, kData)); },
               {good,
                "global batch of 16 per optimiser step (8 per rank x 2 ranks); this run asks for 5 per rank x 4 "
                "ranks = 20",
                "pass --batch-size 4 --accumulate 1 (or --global-batch-size 16 --accumulate 1)",
                "(--batch-size 8 --accumulate 1)"});
  expect_error([&] { check_resumable(ck, good, define_run(five, 2, 300, kData)); },
               {good, "--batch-size 8 there, 5 here"});  // the same world size: a changed global batch
  expect_error([&] { check_resumable(ck, good, define_run(c, 2, 301, kData)); }, {good, "300 samples", "301 samples"});
  check_resumable(ck, good, define_run(c, 2, 300, kData));  // the matching run is accepted
  // A state dict of another model is refused before anything is copied.
  auto resnet = make_model("resnet18");
  torch::optim::SGD opt(resnet->parameters(), torch::optim::SGDOptions(0.1));
  LossScaler scaler(false);
  TrainState resnet_state{*resnet, opt, scaler, torch::kCPU};
  expect_error([&] { restore_checkpoint(ck, good, resnet_state); }, {good, "another model"});
}

// The checkpoint's configuration is compared with the run's: every option
// that defines the run must match (data identity, model, optimiser and its
// hyper-parameters, batch, accumulation, sample order and inputs); the
// refusal names each differing key with both values. Length and speed
// options may change.
TEST(CheckpointFile, AnotherRunIsRefusedNamingEveryDifferingKey) {
  torch::manual_seed(1);
  Trained a;
  const RunConfig c = sgd_config();
  LossScaler no_scaling(false);
  const Checkpoint ck = capture_checkpoint(define_run(c, 2, 300, kData), {1, 3, 10}, 0, 0,
                                           TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU});
  RunConfig other = c;
  other.optim.lr = 0.01;
  other.training.seed = 5;
  expect_error([&] { check_resumable(ck, "p.pt", define_run(other, 2, 300, kData)); },
               {"checkpoint 'p.pt' was written by a different run: --seed 0 there, 5 here; --lr 0.001 there, 0.01 here",
                "(--seed 0 --lr 0.001)", "--resume none with another (empty) --checkpoint-dir"});
  const std::vector<std::pair<std::string, std::function<void(RunConfig&)>>> each = {
      {"--shuffle true there, false here", [](RunConfig& t) { t.data.shuffle = false; }},
      {"--shuffle-seed 0 there, 3 here", [](RunConfig& t) { t.data.shuffle_seed = 3; }},
      {"--augment false there, true here", [](RunConfig& t) { t.data.augment = true; }},
      {"--normalize recipe there, dataset here", [](RunConfig& t) { t.data.normalize = NormalizeKind::Dataset; }},
      {"--drop-last false there, true here", [](RunConfig& t) { t.data.drop_last = true; }},
      {"--batch-size 8 there, 16 here", [](RunConfig& t) { t.training.batch_size = 16; }},
      {"--accumulate 1 there, 2 here", [](RunConfig& t) { t.training.accumulate = 2; }},
      {"--optimizer sgd there, adam here", [](RunConfig& t) { t.optim.optimizer = "adam"; }},
      {"--weight-decay 0 there, 0.0005 here", [](RunConfig& t) { t.optim.weight_decay = 5e-4; }},
      {"--schedule constant there, cosine here", [](RunConfig& t) { t.optim.schedule = ScheduleKind::Cosine; }},
      {"--label-smoothing 0 there, 0.1 here", [](RunConfig& t) { t.training.label_smoothing = 0.1; }},
  };
  for (const auto& [expected, change] : each) {
    RunConfig t = c;
    change(t);
    expect_error([&] { check_resumable(ck, "p.pt", define_run(t, 2, 300, kData)); }, {expected});
  }
  // The same size with other content: refused by the data identity.
  const std::string other_data = "source md5 4567, 300 training samples, statistics 0000000000000002";
  expect_error([&] { check_resumable(ck, "p.pt", define_run(c, 2, 300, other_data)); },
               {"training data of " + kData, other_data, "pass the same --data"});
  // Longer, faster, elsewhere: the same run.
  RunConfig longer = c;
  longer.training.epochs = 30;
  longer.training.max_steps = 1000;
  longer.runtime.threads = 1;
  longer.comm.bucket_mb = 5;
  longer.output.model = "elsewhere.pth";
  longer.data.path = "moved.h5";
  check_resumable(ck, "p.pt", define_run(longer, 2, 300, kData));
  EXPECT_EQ(length_change_note(ck, define_run(longer, 2, 300, kData)), "") << "a constant schedule";
}

// A key the checkpoint does not record (written before the option existed)
// counts as the option's default.
TEST(CheckpointFile, AnUnrecordedKeyCountsAsItsDefault) {
  torch::manual_seed(1);
  Trained a;
  const RunConfig c = sgd_config();
  LossScaler no_scaling(false);
  Checkpoint ck = capture_checkpoint(define_run(c, 2, 300, kData), {1, 0, 10}, 0, 0,
                                     TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU});
  ck.run.config.erase(
      std::remove_if(ck.run.config.begin(), ck.run.config.end(),
                     [](const std::string& l) { return l.find(" label-smoothing ") != std::string::npos; }),
      ck.run.config.end());
  ck.run.data_identity.clear();  // older files have none: the training-set size still counts
  check_resumable(ck, "p.pt", define_run(c, 2, 300, kData));
  RunConfig smoothed = c;
  smoothed.training.label_smoothing = 0.1;
  expect_error([&] { check_resumable(ck, "p.pt", define_run(smoothed, 2, 300, kData)); },
               {"--label-smoothing 0 there, 0.1 here"});
  expect_error([&] { check_resumable(ck, "p.pt", define_run(c, 2, 301, kData)); }, {"300 samples", "301 samples"});
}

TEST(CheckpointFile, ALongerRunUnderALengthDependentScheduleIsNoted) {
  torch::manual_seed(1);
  Trained a;
  RunConfig c = sgd_config();
  c.optim.schedule = ScheduleKind::Cosine;
  c.training.epochs = 2;
  LossScaler no_scaling(false);
  const Checkpoint ck = capture_checkpoint(define_run(c, 2, 300, kData), {2, 0, 20}, 0, 0,
                                           TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU});
  RunConfig longer = c;
  longer.training.epochs = 4;
  check_resumable(ck, "p.pt", define_run(longer, 2, 300, kData));
  EXPECT_EQ(length_change_note(ck, define_run(longer, 2, 300, kData)),
            "the run's length changes from --epochs 2 --max-steps 0 to --epochs 4 --max-steps 0, and the cosine "
            "schedule depends on it: from the resumed step on, the run follows the new length, so the result "
            "differs from both uninterrupted runs");
}

// Which parts follow the run's length: every one is named when the length
// changes at a resume; a run with none continues exactly.
TEST(CheckpointFile, EveryLengthDependentPartIsNamed) {
  struct Row {
    ScheduleKind schedule;
    const char* optimizer;
    int lookahead_every;
    std::vector<std::string> parts;
  };
  const std::string muon = "Muon's progress (its target magnitude and rescale period)";
  const std::vector<Row> rows = {
      {ScheduleKind::Constant, "sgd", 0, {}},
      {ScheduleKind::Cosine, "sgd", 0, {"the cosine schedule"}},
      {ScheduleKind::OneCycle, "sgd", 0, {"the onecycle schedule"}},
      {ScheduleKind::Linear, "sgd", 0, {"the linear schedule"}},
      {ScheduleKind::Triangle, "sgd", 0, {"the triangle schedule"}},
      {ScheduleKind::Constant, "sgd", 5, {"lookahead's decay"}},
      {ScheduleKind::Constant, "muon", 0, {muon}},
      {ScheduleKind::Triangle, "muon", 5, {"the triangle schedule", "lookahead's decay", muon}},
  };
  for (const Row& row : rows) {
    RunConfig c = sgd_config();
    c.optim.schedule = row.schedule;
    c.optim.optimizer = row.optimizer;
    c.optim.lookahead_every = row.lookahead_every;
    EXPECT_EQ(length_dependent_parts(c.describe()), row.parts) << row.optimizer << " " << to_string(row.schedule);
  }
  RunConfig c = sgd_config();
  c.optim.optimizer = "muon";
  c.optim.schedule = ScheduleKind::Linear;
  c.training.max_steps = 20;
  torch::manual_seed(1);
  Trained a;
  LossScaler no_scaling(false);
  const Checkpoint ck = capture_checkpoint(define_run(c, 2, 300, kData), {1, 0, 10}, 0, 0,
                                           TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU});
  RunConfig to_the_end = c;
  to_the_end.training.max_steps = 0;
  EXPECT_EQ(length_change_note(ck, define_run(to_the_end, 2, 300, kData)),
            "the run's length changes from --epochs " + std::to_string(c.training.epochs) +
                " --max-steps 20 to --epochs " + std::to_string(c.training.epochs) +
                " --max-steps 0, and the linear schedule and " + muon +
                " depend on it: from the resumed step on, the run follows the new length, so the result differs "
                "from both uninterrupted runs");
}

// A checkpoint's position is a number read from a file: checked against the
// run's plan before it is used (300 samples, 2 ranks, batch 8, accumulate 2:
// 19 batches and 10 steps per epoch).
TEST(CheckpointFile, APositionThatNoRunOfThisShapeReachesIsNamed) {
  TrainingConfig t;
  t.epochs = 3;
  t.batch_size = 8;
  t.accumulate = 2;
  const RunPlan plan = make_run_plan(300, 2, t, false, 0);
  ASSERT_EQ(plan.batches_per_epoch, 19);
  ASSERT_EQ(plan.steps_per_epoch, 10);
  EXPECT_EQ(position_problem({0, 0, 0}, plan), "");
  EXPECT_EQ(position_problem({1, 4, 12}, plan), "");
  EXPECT_EQ(position_problem({3, 0, 30}, plan), "") << "the end of the run";
  // Epoch 1's last (short) step done, its end not yet run: what a checkpoint
  // written by a preemption during that step holds.
  EXPECT_EQ(position_problem({1, 19, 20}, plan), "");
  EXPECT_EQ(position_problem({1, 19, 19}, plan), "holds step 19, but epoch 1, batch 19 is step 20 of this run");
  EXPECT_EQ(position_problem({1, 20, 20}, plan),
            "holds the position epoch 1, batch 20, step 20, outside a run of 19 batches per epoch");
  EXPECT_EQ(position_problem({-1, 0, 0}, plan),
            "holds the position epoch -1, batch 0, step 0, outside a run of 19 batches per epoch");
  EXPECT_EQ(position_problem({1, 3, 11}, plan), "holds batch 3, not the end of an optimiser step of 2 batches");
  EXPECT_EQ(position_problem({1, 4, 99}, plan), "holds step 99, but epoch 1, batch 4 is step 12 of this run");
}

TEST(CheckpointFile, DataIdentityAndSkippedStepsRoundTrip) {
  torch::manual_seed(1);
  Trained a;
  LossScaler no_scaling(false);
  const long skipped = 4;
  const Checkpoint saved =
      capture_checkpoint(define_run(sgd_config(), 1, 300, kData), {0, 2, 2}, 0, 0,
                         TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU, nullptr, &skipped});
  TempDir dir;
  const std::string path = dir.file("c.pt");
  write_file_atomically(path, encode_checkpoint(saved));
  const Checkpoint read = read_checkpoint(path);
  EXPECT_EQ(read.run.data_identity, kData);
  EXPECT_EQ(read.skipped_steps, 4);
  // A folder given as a checkpoint is refused before anything opens it.
  expect_error([&] { read_checkpoint(dir.file("")); }, {"is a folder, not a file", "--resume takes a checkpoint file"});
}

}  // namespace
}  // namespace cifar

namespace cifar {
namespace {

// The same checkpoint as a version-1 file (no global position, no order world
// size), as a version-2 file (no order batch and origin), as a version-4 file,
// and with a global position that does not fit, or a step shape no run has.
std::vector<char> rewritten(const std::vector<char>& bytes, const std::function<void(c10::impl::GenericDict&)>& edit) {
  c10::IValue value = torch::pickle_load(bytes);
  c10::impl::GenericDict dict = value.toGenericDict();
  edit(dict);
  return torch::pickle_save(c10::IValue(dict));
}

// A checkpoint of a small SGD run on 2 ranks, as bytes, for tests that rewrite its fields.
std::vector<char> sgd_checkpoint_bytes() {
  torch::manual_seed(1);
  Trained a;
  LossScaler no_scaling(false);
  return encode_checkpoint(capture_checkpoint(define_run(sgd_config(), 2, 300, kData), {1, 3, 22}, 0, 0,
                                              TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU}));
}

TEST(CheckpointFile, Version1FilesAreReadWithTheirOwnOrderAndNewerOnesRefusedNamingTheVersion) {
  const std::vector<char> bytes = sgd_checkpoint_bytes();
  TempDir dir;
  const std::string v1 = dir.file("v1.pt");
  write_file_atomically(v1, rewritten(bytes, [](c10::impl::GenericDict& d) {
                          d.insert_or_assign(std::string("format_version"), int64_t{1});
                          // A version-1 file has neither key; both must have been there to remove.
                          EXPECT_EQ(d.erase(std::string("global_position")), 1u);
                          EXPECT_EQ(d.erase(std::string("order_world_size")), 1u);
                        }));
  const Checkpoint old = read_checkpoint(v1);
  EXPECT_EQ(old.position.order_world_size, 2);
  EXPECT_EQ(old.global_position, 3 * 8 * 2);

  // Version 2: no order batch, origin, --lr's global batch or reshaping; they follow from the rest.
  const std::string v2 = dir.file("v2.pt");
  write_file_atomically(v2, rewritten(bytes, [](c10::impl::GenericDict& d) {
                          d.insert_or_assign(std::string("format_version"), int64_t{2});
                          for (const char* key : {"order_batch_size", "batch_origin", "lr_global_batch", "reshaped"})
                            EXPECT_EQ(d.erase(std::string(key)), 1u) << key;
                        }));
  const Checkpoint two = read_checkpoint(v2);
  EXPECT_EQ(two.position.order_batch_size, 8);
  EXPECT_EQ(two.position.batch_origin, 0);
  EXPECT_EQ(two.run.lr_global_batch, 16);
  EXPECT_FALSE(two.run.reshaped);

  const std::string newer = dir.file("v5.pt");
  write_file_atomically(newer, rewritten(bytes, [](c10::impl::GenericDict& d) {
                          d.insert_or_assign(std::string("format_version"), int64_t{5});
                        }));
  expect_error([&] { read_checkpoint(newer); }, {newer, "format version 5", "reads versions 1 to 4"});
  const std::string moved = dir.file("moved.pt");
  write_file_atomically(moved, rewritten(bytes, [](c10::impl::GenericDict& d) {
                          d.insert_or_assign(std::string("global_position"), int64_t{47});
                        }));
  expect_error([&] { read_checkpoint(moved); }, {moved, "global position 47", "make position 48", "damaged"});
  const std::string huge = dir.file("huge.pt");
  write_file_atomically(huge, rewritten(bytes, [](c10::impl::GenericDict& d) {
                          d.insert_or_assign(std::string("accumulate"), int64_t{1} << 40);
                        }));
  expect_error([&] { read_checkpoint(huge); }, {huge, "not a shape any run has", "damaged"});
}

}  // namespace
}  // namespace cifar

namespace cifar {
namespace {

// ---- Resuming with another step shape --------------------------------------
//
// 120 samples; the writing run: 4 ranks x 2 per rank, 3 micro-batches per
// step (24 per step, 5 steps per epoch), checkpointed after 2 steps of epoch
// 0 (6 micro-batches, global position 48).
RunConfig accumulating_config(int batch_size, int accumulate) {
  RunConfig c = sgd_config();
  c.training.batch_size = batch_size;
  c.training.accumulate = accumulate;
  return c;
}

Checkpoint elastic_checkpoint(const RunConfig& c, int world, const TrainingPosition& position) {
  torch::manual_seed(1);
  Trained a;
  LossScaler no_scaling(false);
  return capture_checkpoint(define_run(c, world, 120, kData), position, 0, 0,
                            TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU});
}

RunPlan plan_of(const StepShape& s) {
  TrainingConfig t;
  t.epochs = 2;
  t.batch_size = s.batch_size;
  t.accumulate = s.accumulate;
  return make_run_plan(120, s.world_size, t, false, 0);
}

TEST(ElasticBatch, GlobalKeepsTheStepsBatchWithAccumulationPerRankScalesTheLearningRate) {
  const RunConfig c = accumulating_config(2, 3);
  const Checkpoint ck = elastic_checkpoint(c, 4, {0, 6, 2});
  // The same command line on 3 ranks: 8 per micro-batch does not divide, 24 per step does: 3 x 2 x 4.
  RunDefinition on3 = define_run(c, 3, 120, kData);
  check_resumable(ck, "p.pt", on3);
  EXPECT_EQ(resumed_step_shape(ck, "p.pt", on3), (StepShape{2, 3, 4}));
  // Options that give 24 per step another way are the run's choice (less memory per rank, say).
  RunConfig split = accumulating_config(1, 8);
  RunDefinition on3_split = define_run(split, 3, 120, kData);
  check_resumable(ck, "p.pt", on3_split);
  EXPECT_EQ(resumed_step_shape(ck, "p.pt", on3_split), (StepShape{1, 3, 8}));
  // ... but not options that change it.
  expect_error([&] { check_resumable(ck, "p.pt", define_run(accumulating_config(2, 2), 3, 120, kData)); },
               {"global batch of 24 per optimiser step (2 per rank x 4 ranks x 3 micro-batches); this run asks for 2 "
                "per rank x 3 ranks x 2 micro-batches = 12",
                "pass --batch-size 2 --accumulate 4", "(--batch-size 2 --accumulate 3)"});
  // 5 ranks divide neither 8 nor 24.
  expect_error([&] { check_resumable(ck, "p.pt", define_run(c, 5, 120, kData)); },
               {"global batch of 24 samples per optimiser step (2 per rank x 4 ranks x 3 micro-batches) does not "
                "divide among 5 ranks, with or without gradient accumulation",
                "resume on 1, 2, 3, 4, 6, 8, 12, 24"});

  // --elastic-batch per-rank: 2 per rank x 3 micro-batches on 3 ranks, 18 per step; --lr x 18/24.
  RunConfig per_rank = c;
  per_rank.checkpoint.elastic_batch = ElasticBatch::PerRank;
  const RunDefinition p3 = define_run(per_rank, 3, 120, kData);
  check_resumable(ck, "p.pt", p3);
  EXPECT_EQ(resumed_step_shape(ck, "p.pt", p3), (StepShape{2, 3, 3}));
  EXPECT_EQ(ck.run.lr_global_batch, 24);
  const RunDefinition continued = continued_run(ck, "p.pt", p3);
  EXPECT_DOUBLE_EQ(lr_scale(continued), 0.75);
  EXPECT_TRUE(continued.reshaped);
  EXPECT_FALSE(continued_run(ck, "p.pt", define_run(c, 2, 120, kData)).reshaped) << "the same micro-batch of 8";
  // per-rank keeps the batch options: another --batch-size is another run.
  RunConfig per_rank4 = accumulating_config(4, 3);
  per_rank4.checkpoint.elastic_batch = ElasticBatch::PerRank;
  expect_error([&] { check_resumable(ck, "p.pt", define_run(per_rank4, 3, 120, kData)); },
               {"--batch-size 2 there, 4 here"});
}

TEST(ElasticBatch, TheLogLineNamesBothShapesTheGlobalBatchAndTheLearningRate) {
  const RunConfig c = accumulating_config(2, 3);
  const Checkpoint ck = elastic_checkpoint(c, 4, {0, 6, 2});
  RunConfig per_rank = c;
  per_rank.checkpoint.elastic_batch = ElasticBatch::PerRank;
  const std::vector<std::pair<RunConfig, std::string>> on_3_ranks = {
      {c,
       "elastic resume: written on 4 rank(s) with 2 per rank x 3 micro-batches, continued on 3 rank(s) with 2 per "
       "rank x 4 micro-batches (gradient accumulation): the same global batch of 24 per optimiser step "
       "(--elastic-batch global); the rest of epoch 0 (from its global position 48) is re-sharded among the 3 ranks"},
      {per_rank,
       "elastic resume: written on 4 rank(s) with 2 per rank x 3 micro-batches, continued on 3 rank(s) with 2 per "
       "rank x 3 micro-batches: the global batch per optimiser step changes from 24 to 18 (--elastic-batch "
       "per-rank); the learning rate follows it (linear scaling): --lr 0.05 x 18/24 = 0.0375; the rest of epoch 0 "
       "(from its global position 48) is re-sharded among the 3 ranks"},
  };
  auto optim = [](const RunConfig& config) {
    OptimConfig o = config.optim;
    o.lr = 0.05;
    return o;
  };
  for (const auto& [config, expected] : on_3_ranks)
    EXPECT_EQ(elastic_resume_note(ck, continued_run(ck, "p.pt", define_run(config, 3, 120, kData)), optim(config)),
              expected);
  EXPECT_EQ(elastic_resume_note(ck, define_run(c, 4, 120, kData), optim(c)), "") << "the writing run's shape";
  // Muon's rate is a multiple of --lr's: the line names it too.
  OptimConfig muon = optim(per_rank);
  muon.optimizer = "muon";
  muon.muon_lr = 0.02;
  const std::string note =
      elastic_resume_note(ck, continued_run(ck, "p.pt", define_run(per_rank, 3, 120, kData)), muon);
  EXPECT_NE(note.find("--lr 0.05 x 18/24 = 0.0375, and --muon-lr 0.02 x 18/24 = 0.015; the rest"), std::string::npos)
      << note;
}

// Where each shape continues the checkpoint at global position 48.
TEST(ElasticBatch, TheContinuedPositionKeepsTheGlobalPosition) {
  const RunConfig c = accumulating_config(2, 3);
  const Checkpoint ck = elastic_checkpoint(c, 4, {0, 6, 2});
  ASSERT_EQ(ck.global_position, 48);
  // The writing run's shape: its own epoch, batch 6.
  TrainingPosition p = continued_position(ck, "p.pt", plan_of({2, 4, 3}), 4, false);
  EXPECT_EQ(p.batch_in_epoch, 6);
  EXPECT_EQ(p.order_world_size, 0);
  // 3 ranks x 2 x 4: the 4-rank run's order from 48, 8 micro-batches of 6 done, steps stay on boundaries.
  p = continued_position(ck, "p.pt", plan_of({2, 3, 4}), 3, false);
  EXPECT_EQ(p.batch_in_epoch, 8);
  EXPECT_EQ(p.batch_origin, 0);
  EXPECT_EQ(p.order_world_size, 4);
  EXPECT_EQ(p.order_batch_size, 2);
  EXPECT_EQ(p.step, 2);
  // per-rank, 3 ranks x 2 x 3 (18 per step): 48 = 12 + 2 steps of 18, so counted from origin 12.
  p = continued_position(ck, "p.pt", plan_of({2, 3, 3}), 3, false);
  EXPECT_EQ(p.batch_origin, 12);
  EXPECT_EQ(p.batch_in_epoch, 6);
  EXPECT_EQ(p.batch_in_epoch % 3, 0) << "a step boundary of this run";
  // The epoch's last step done (its end not yet reached): the run ends it.
  const Checkpoint done = elastic_checkpoint(c, 4, {0, 15, 5});
  EXPECT_EQ(continued_position(done, "p.pt", plan_of({2, 3, 4}), 3, false).batch_in_epoch,
            plan_of({2, 3, 4}).batches_per_epoch);
  // Written inside that re-sharded epoch (on 3 ranks, step 3: position 72) and resumed on 4 ranks again.
  const RunDefinition on3 = continued_run(ck, "p.pt", define_run(c, 3, 120, kData));
  ASSERT_EQ(on3.accumulate, 4);
  torch::manual_seed(1);
  Trained a;
  LossScaler no_scaling(false);
  const Checkpoint inside =
      capture_checkpoint(on3, {0, 12, 3, 4, 2, 0}, 0, 0, TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU});
  EXPECT_EQ(inside.global_position, 72);
  p = continued_position(inside, "p.pt", plan_of({2, 4, 3}), 4, false);
  EXPECT_EQ(p.order_world_size, 0) << "the 4-rank run's own epoch again";
  EXPECT_EQ(p.batch_in_epoch, 9);
  // A position that is no step boundary of its writer is a damaged file.
  const Checkpoint odd = elastic_checkpoint(c, 4, {0, 5, 2});
  expect_error(
      [&] {
        continued_position(odd, "p.pt", plan_of({2, 3, 4}), 3, false);
      },
      {"p.pt", "holds batch 5, not the end of an optimiser step of 3 batches", "damaged"});
}

// 100 samples on 4 ranks x 6: the epoch ends with a micro-batch of 4 (1 per
// rank); from position 48 on 3 ranks x 8 the rest ends with those 4, which do
// not divide among 3: refused, unless --max-steps ends the run before it.
TEST(ElasticBatch, AShortLastMicroBatchThatDoesNotDivideIsRefusedAtStartUp) {
  torch::manual_seed(1);
  Trained a;
  LossScaler no_scaling(false);
  RunConfig c = sgd_config();
  c.training.batch_size = 6;
  const Checkpoint ck = capture_checkpoint(define_run(c, 4, 100, kData), {0, 2, 2}, 0, 0,
                                           TrainState{*a.model, a.optimizer, no_scaling, torch::kCPU});
  TrainingConfig t;
  t.batch_size = 8;
  expect_error(
      [&] { continued_position(ck, "p.pt", make_run_plan(100, 3, t, false, 0), 3, false); },
      {"p.pt", "positions [48, 100)", "ends with a micro-batch of 4 samples, which do not divide among 3 ranks"});
  // From step 2 the rest is 2 full micro-batches of 24 (steps 3 and 4), then the short one (step 5):
  // --max-steps 4 ends the run before it, --max-steps 5 reaches it.
  t.max_steps = 4;
  EXPECT_EQ(continued_position(ck, "p.pt", make_run_plan(100, 3, t, false, 0), 3, false, 4).batch_in_epoch, 2);
  t.max_steps = 5;
  expect_error([&] { continued_position(ck, "p.pt", make_run_plan(100, 3, t, false, 0), 3, false, 5); },
               {"p.pt", "ends with a micro-batch of 4 samples, which do not divide among 3 ranks"});
}

TEST(CheckpointFile, ADamagedGeneratorStateIsRefusedWhenRead) {
  const std::vector<char> bytes = sgd_checkpoint_bytes();
  TempDir dir;
  // The CPU generator's state with no words left in its mt19937 state (the
  // `int left` after the 8-byte initial seed, at byte 8 of LibTorch's
  // CPUGeneratorImplStateLegacy; mt19937 needs 1..624): refused when read,
  // before restoring changes anything. A fuzz finding: LibTorch refused it
  // only inside restore_checkpoint, with a c10::Error that nothing caught.
  const std::string rng = dir.file("rng.pt");
  write_file_atomically(rng, rewritten(bytes, [](c10::impl::GenericDict& d) {
                          at::Tensor state = d.at(std::string("cpu_rng_state")).toTensor().clone();
                          const int32_t none_left = 0;
                          std::memcpy(static_cast<char*>(state.data_ptr()) + 8, &none_left, sizeof none_left);
                          d.insert_or_assign(std::string("cpu_rng_state"), state);
                        }));
  expect_error([&] { read_checkpoint(rng); }, {rng, "CPU random-number state is not valid", "Invalid mt19937 state"});
}

// The checkpoint files a run writes, which the space check counts: the
// steps on --checkpoint-every-steps, the ends of every
// --checkpoint-every-epochs'th epoch and the last step, a step due twice once.
TEST(CheckpointWrites, CountsEachStepThatWritesOnce) {
  struct Row {
    const char* what;
    long every_steps;
    int every_epochs;
    int epochs;
    long steps_per_epoch, total_steps;
    long writes;
  };
  const Row rows[] = {
      {"one epoch, every epoch", 0, 1, 1, 100, 100, 1},
      {"ten epochs, every epoch", 0, 1, 10, 100, 1000, 10},
      {"ten epochs, every third and the last", 0, 3, 10, 100, 1000, 4},
      {"every 30 steps and every epoch of 100", 30, 1, 2, 100, 200, 6 + 1 + 1},  // 30..180, 100, 200
      {"every 50 steps: epoch ends fall on them", 50, 1, 2, 100, 200, 4},
      {"every epoch off, every 7 steps", 7, 0, 1, 20, 20, 2 + 1},
      {"--max-steps mid-epoch", 0, 1, 5, 100, 250, 3},
      {"no steps", 0, 1, 1, 0, 0, 0},
      {"a long run every step", 1, 1, 1000, 1000000, 1000000000, 1000000000},
  };
  for (const Row& r : rows) {
    CheckpointConfig c;
    c.dir = "ck";
    c.every_steps = r.every_steps;
    c.every_epochs = r.every_epochs;
    RunPlan plan;
    plan.epochs = r.epochs;
    plan.steps_per_epoch = r.steps_per_epoch;
    plan.total_steps = r.total_steps;
    EXPECT_EQ(checkpoint_writes(c, plan), r.writes) << r.what;
  }
  CheckpointConfig off;
  off.dir = "";
  RunPlan plan;
  plan.total_steps = 10;
  plan.steps_per_epoch = 10;
  EXPECT_EQ(checkpoint_writes(off, plan), 0) << "no --checkpoint-dir";
}

}  // namespace
}  // namespace cifar
