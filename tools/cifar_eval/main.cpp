// cifar_eval: scores a model file on the test split, distributed over the
// ranks of an MPI job like training (each rank its stride of the split, one
// all-reduce), for any registered model: accuracy, loss, per-class accuracy
// and the confusion matrix as a table; --json writes the same numbers for
// tools/plot_metrics --confusion, which draws them. The model file may be
// cifar_mpi's --output or Python's torch.save(dict(model.state_dict())) for
// the same architecture (a state dict whose every key begins with
// DistributedDataParallel's "module." is read without it, said once); a file
// of another architecture, a damaged one (an entry failing its CRC-32), a
// corrupt one or one LibTorch cannot read (the legacy format, a pickled
// nn.Module, an OrderedDict: each named, with the command that re-saves it)
// is refused with one line before any image is scored.
//
//   mpirun -np 4 cifar_eval --model convnet --weights ddp_model.pth --data data/cifar10.h5 [--tta mirror-translate]
//                           [--json e.json]
#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "comm/agreement.hpp"
#include "comm/backends.hpp"
#include "data/dataset.hpp"
#include "eval/evaluation.hpp"
#include "model/model.hpp"
#include "mpi/mpi_main.hpp"
#include "outputs/model_file.hpp"
#include "outputs/output_policy.hpp"
#include "process/threads.hpp"
#include "report/evaluation_report.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace po = boost::program_options;
using namespace cifar;

namespace {

// What --json writes: evaluation_json()'s text, which begins so.
const OutputFileKind kEvaluationJson{"evaluation JSON of cifar_eval", "{\"model\": "};

struct EvalCommand {
  bool help = false;
  std::string model = "convnet";
  std::string weights;
  DataConfig data;  // dataset, path and normalisation, as cifar_mpi's [data] options
  TtaMode tta = TtaMode::None;
  double tta_fraction = 1.0;
  int64_t batch_size = 1000;
  std::string json;
  DeviceRequest device = DeviceRequest::Auto;
  int threads = 0;
};

struct OptionTexts {  // enum options, parsed after Boost has read them
  std::string normalize = "recipe", device = "auto", tta = "none";
};

po::options_description describe(EvalCommand& c, OptionTexts& t) {
  po::options_description d("cifar_eval --weights FILE [options]; under mpirun each rank scores its share");
  d.add_options()("help,h", po::bool_switch(&c.help), "print this help")(
      "model", po::value(&c.model)->default_value(c.model), "architecture of the file (a name in cifar_mpi --help)")(
      "weights", po::value(&c.weights), "model file: cifar_mpi's --output or Python's torch.save(dict(state_dict))")(
      "data", po::value(&c.data.path)->default_value(c.data.path), "dataset file; its test split is scored")(
      "dataset", po::value(&c.data.dataset)->default_value(c.data.dataset), "dataset kind, as cifar_mpi's --dataset")(
      "normalize", po::value(&t.normalize)->default_value(t.normalize),
      "recipe | dataset: the normalisation the model was trained with")(
      "tta", po::value(&t.tta)->default_value(t.tta),
      "test-time augmentation, as cifar_mpi's --tta: none | mirror | mirror-translate (the image and its mirror, "
      "also shifted one pixel up-left and down-right) | mirror-translate-equal (those six views at equal weights)")(
      "tta-fraction", po::value(&c.tta_fraction)->default_value(c.tta_fraction),
      "as cifar_mpi's: only this fraction of the test split, its least confident images, gets the views")(
      "batch-size", po::value(&c.batch_size)->default_value(c.batch_size), "images per forward pass per rank")(
      "json", po::value(&c.json), "also write the numbers as JSON (tools/plot_metrics --confusion draws it)")(
      "device", po::value(&t.device)->default_value(t.device), "auto | cpu | cuda (cuda:<local rank>)")(
      "threads", po::value(&c.threads)->default_value(c.threads), "threads per rank (0: the cores this rank owns)");
  return d;
}

std::string usage() {
  EvalCommand c;
  OptionTexts t;
  std::ostringstream os;
  os << describe(c, t)
     << "\nExit codes: 0 done, 1 an I/O failure, 2 bad command line (also a --json that would replace an input, a "
        "run's file or a file of another kind), 6 a missing, damaged or unreadable data or model file.\n";
  return os.str();
}

EvalCommand parse_command(int argc, char** argv) {
  EvalCommand c;
  OptionTexts t;
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, describe(c, t)), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + " (run cifar_eval --help)");
  }
  if (c.help) return c;
  CIFAR_CHECK(!c.weights.empty(), ConfigError, "--weights is required: the model file to score");
  CIFAR_CHECK(c.batch_size >= 1, ConfigError, "--batch-size must be at least 1");
  CIFAR_CHECK(c.threads >= 0, ConfigError, "--threads must be 0 (automatic) or positive");
  CIFAR_CHECK(c.tta_fraction > 0 && c.tta_fraction <= 1, ConfigError, "--tta-fraction must be in (0, 1]");
  c.data.normalize = parse_choice<NormalizeKind>("normalize", t.normalize);
  c.device = parse_choice<DeviceRequest>("device", t.device);
  c.tta = parse_choice<TtaMode>("tta", t.tta);
  make_model(c.model);  // a ConfigError listing the registered names
  return c;
}

// The test split and the checked model, on every rank; one line for a bad file.
std::shared_ptr<Model> load_inputs(const MpiEnvironment& env, const EvalCommand& c, Dataset& data) {
  std::shared_ptr<Model> model = make_model(c.model);
  agree_on_startup(env.comm(), [&] {
    data = load_dataset(c.data, SplitRequest{false, true});
    CIFAR_CHECK(data.test.size() > 0, DataError, c.data.path + " has no test images to score");
    load_state_dict(*model, c.weights);
    const std::string bad = first_non_finite_entry(*model);
    CIFAR_CHECK(bad.empty(), DataError,
                c.weights + " holds NaN or infinity in " + bad +
                    ": a diverged model's scores mean nothing; score a checkpoint from before the divergence");
  });
  return model;
}

void report(const Evaluation& e, const EvaluationSubject& subject, const std::string& json,
            const std::string& replaced) {
  std::istringstream table(evaluation_table(e, subject));
  for (std::string line; std::getline(table, line);) log::info(line);
  if (json.empty()) return;
  const std::string text = evaluation_json(e, subject);
  write_file_atomically(json, std::vector<char>(text.begin(), text.end()));
  log::info(replaced.empty() ? "wrote " + json : replaced);
}

int run(MpiEnvironment& env, int argc, char** argv) {
  EvalCommand c;
  agree_on_startup(env.comm(), [&] { c = parse_command(argc, argv); });
  const World& world = env.world();
  if (c.help) {
    if (world.rank == 0) std::fputs(usage().c_str(), stdout);
    return kExitOk;
  }
  Placement placement;
  std::string replaced;  // rank 0: the line saying --json replaced an earlier evaluation
  agree_on_startup(env.comm(), [&] {
    placement = place_rank(env.comm(), world, "auto", c.device);
    // The rules of every program's outputs (outputs/output_policy.hpp).
    if (world.rank == 0)
      replaced = check_tool_output("cifar_eval", {"json", c.json}, kEvaluationJson,
                                   {{"weights", c.weights}, {"data", c.data.path}});
  });
  const int threads = c.threads > 0 ? c.threads : automatic_thread_count(world);
  apply_thread_count(threads, threads);
  Dataset data;
  const std::shared_ptr<Model> model = load_inputs(env, c, data);
  model->to(placement.device);
  const auto comm = make_communicator(env.comm(), placement, std::chrono::minutes(10));
  EvalOptions options;
  options.batch_size = c.batch_size;
  options.device = placement.device;
  options.views = tta_views(c.tta);
  options.tta_fraction = c.tta_fraction;
  const Evaluation e = evaluate(*model, data.test, data.normalization, *comm, options);
  if (world.rank == 0)
    report(e,
           {c.model, c.weights, c.data.path, data.test.class_names, static_cast<int>(options.views.size()), world.size},
           c.json, replaced);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) { return run_mpi_main(argc, argv, run); }
