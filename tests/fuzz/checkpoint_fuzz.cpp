// Fuzz harness: the checkpoint decoder (read_checkpoint) and what --resume
// does with its result (check_resumable, restore_checkpoint) on a small model.
//
// Input: the bytes of a checkpoint file, written to the scratch folder. The
// contract under test (checkpoint/checkpoint.hpp): a missing, truncated, corrupt
// or foreign file is one CheckpointError naming it; any other exception,
// crash or sanitizer report is a bug. A decoded checkpoint must also hold
// only tensors that lie within their storage, since restoring copies them.
//
// Content damage: an input accepted as it is must have every stored zip
// entry's CRC-32 matching its bytes (the harness repairs them with
// tests/support/zip_crcs.hpp, which counts the mismatches): a changed byte anywhere in a
// tensor, a pickle or the optimiser state is refused, not loaded. Then the
// same input with its CRC-32s repaired goes through the same steps, so that
// the checks behind the CRC-32 check (sizes, pickles, sources, tensors past
// their storage, restoring) are fuzzed as before: most mutations fail the
// CRC-32 check alone.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "config/run_config.hpp"
#include "fuzz_support.hpp"
#include "model/model.hpp"
#include "optim/lookahead.hpp"
#include "optim/optimizer.hpp"
#include "step/precision.hpp"
#include "support/zip_crcs.hpp"
#include "tiny_model.hpp"
#include "util/error.hpp"

namespace cifar::fuzz {
namespace {

using test::TinyModel;

constexpr int kWorldSize = 1;
constexpr int kBatchSize = 2;
constexpr int64_t kTrainSize = 16;

OptimConfig optim_config(const std::string& name) {
  OptimConfig o;
  o.optimizer = name;
  return o;
}

// The run the harness resumes: the tiny model with the checkpoint's optimiser
// when it is one the program knows, else Adam (check_resumable refuses it).
struct Run {
  explicit Run(const std::string& optimizer, int lookahead_every = 0)
      : model(std::make_shared<TinyModel>()),
        optimizer(optim_config(optimizer), model->parameter_groups()),
        lookahead(*model, lookahead_every, 100) {
    identity.model = "tiny";
    identity.optimizer = optimizer;
    identity.world_size = kWorldSize;
    identity.batch_size = kBatchSize;
    identity.accumulate = 1;
    identity.lr_global_batch = kWorldSize * kBatchSize;  // a fresh run's: --lr is for its own global batch
    identity.train_size = kTrainSize;
    identity.data_path = "fuzz.h5";
    identity.config = RunConfig().describe();
  }
  TrainState state() { return {*model, optimizer.torch_optimizer(), scaler, torch::kCPU, &lookahead}; }

  std::shared_ptr<TinyModel> model;
  Optimizer optimizer;
  LossScaler scaler{false};
  Lookahead lookahead;
  RunDefinition identity;
};

bool known_optimizer(const std::string& name) {
  for (const auto& n : optimizer_names())
    if (n == name) return true;
  return false;
}

// Whether every element of `t` lies inside its storage.
bool within_storage(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return true;
  if (!t.has_storage() || t.is_sparse()) return false;
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.stride(d) < 0) return false;
    last += (t.size(d) - 1) * t.stride(d);
  }
  return t.storage_offset() >= 0 && static_cast<uint64_t>(last + 1) * t.element_size() <= t.storage().nbytes();
}

void check_tensors(const c10::IValue& v) {
  if (v.isTensor()) {
    if (!within_storage(v.toTensor())) __builtin_trap();
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) check_tensors(e.value());
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) check_tensors(e);
  }
}

}  // namespace

void write_seeds(const std::string& dir) {
  torch::manual_seed(1);
  for (const std::string& optimizer : {std::string("adam"), std::string("sgd")}) {
    for (const int lookahead : {0, 1}) {
      Run run(optimizer, lookahead);
      // One real optimiser step, so that the optimiser has state to save.
      run.optimizer.zero_grad();
      run.model->forward(torch::randn({kBatchSize, 4})).square().sum().backward();
      run.optimizer.step();
      run.lookahead.after_step(1);
      const TrainingPosition position{1, 3, 11};
      const Checkpoint c = capture_checkpoint(run.identity, position, 12.5, 6, run.state());
      const std::vector<char> bytes = encode_checkpoint(c);
      write_file(dir + "/ckpt-" + optimizer + (lookahead ? "-lookahead" : "") + ".pt", bytes.data(), bytes.size());
    }
  }
}

}  // namespace cifar::fuzz

namespace cifar::fuzz {
namespace {

// read_checkpoint and what --resume does with its result; false when refused.
bool resume_from(const std::string& path) {
  try {
    const cifar::Checkpoint c = cifar::read_checkpoint(path);
    check_tensors(c.model_state);
    check_tensors(c10::IValue(c.parts));  // the optimiser's, lookahead's and generators' entries

    const bool known = known_optimizer(c.run.optimizer);
    const bool lookahead = c.parts.contains(std::string(cifar::Lookahead::kAverageKey));
    Run run(known ? c.run.optimizer : "adam", lookahead ? 1 : 0);
    cifar::check_resumable(c, path, run.identity);
    cifar::TrainState state = run.state();
    cifar::restore_checkpoint(c, path, state);
    return true;
  } catch (const cifar::CheckpointError&) {
    return false;  // the documented failure: one message naming the file and the fix
  }
}

}  // namespace
}  // namespace cifar::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<char> input(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  const std::vector<char> repaired = cifar::test::with_zip_crcs_restored(input);
  std::string path = cifar::fuzz::write_scratch_file("ckpt-e0001-s000011.pt", input.data(), input.size());
  // Accepted with a stored entry whose CRC-32 does not match: damage loaded.
  if (cifar::fuzz::resume_from(path) && cifar::test::zip_crc_mismatches(input) > 0) __builtin_trap();
  if (repaired == input) return 0;
  path = cifar::fuzz::write_scratch_file("ckpt-e0001-s000011.pt", repaired.data(), repaired.size());
  cifar::fuzz::resume_from(path);
  return 0;
}
