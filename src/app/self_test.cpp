// The self-test's recipe (self_test.hpp): place this rank, make its data,
// run the single-rank rows as children, gather every rank's results to rank
// 0, print them, run the multi-rank rows in this job, print the whole table.
#include "app/self_test.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "app/registries.hpp"
#include "app/stack_report.hpp"
#include "comm/agreement.hpp"
#include "comm/backends.hpp"
#include "comm/text_collectives.hpp"
#include "model/model.hpp"
#include "outputs/model_comparison.hpp"
#include "outputs/model_file.hpp"
#include "pack/packer.hpp"
#include "pack/synthetic.hpp"
#include "placement/visible_devices.hpp"
#include "process/child_process.hpp"
#include "process/startup_deadline.hpp"
#include "report/metrics.hpp"
#include "train/trainer.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {

namespace {

// A single-rank row's child gets this long; a hung device call is then a FAIL.
constexpr double kRowTimeLimitSeconds = 90;
// The figure of a failure, one table cell: the first error line, cut here.
constexpr size_t kCellLength = 160;

// How a row runs: a child training run, two of them whose models must be
// equal bit for bit, or one training run over all the job's ranks.
enum class RowKind { Child, ChildPairGraphsOffOn, AllRanks };

struct Row {
  const char* name;
  bool gpu_only;
  RowKind kind;
  const char* options;                // the row's training options, separated by spaces
  const char* figure = "train_loss";  // the metric shown when it passes
  const char* model = "convnet";      // for the models a pair compares
  bool needs_nccl = false;            // a path of the NCCL backend alone
};

// speed94's model and optimiser as config/speed94.ini has them (the installed
// config is not at hand in a build folder), with deterministic cuDNN so that
// graphs off and on must give the same bits.
constexpr const char* kSpeed94Options =
    "--model speed94 --optimizer sgd --lr 1.5 --momentum 0.85 --nesterov true --weight-decay 0.00133043 "
    "--lookahead-every 5 --label-smoothing 0.2 --deterministic true";

// The rows, in the order they run and print, the multi-rank rows last
// (dev/gpu_check.sh's proof runs of these paths as command lines are where
// their options come from).
const std::vector<Row>& rows() {
  static const std::vector<Row> kRows = {
      {"sgd_fp32", false, RowKind::Child, "--optimizer sgd"},
      {"adam", false, RowKind::Child, "--optimizer adam"},
      {"bf16", false, RowKind::Child, "--precision bf16"},
      {"fp16_loss_scaling", true, RowKind::Child, "--precision fp16"},
      {"muon", false, RowKind::Child, "--optimizer muon --muon-matrices true"},
      {"eval_tta", false, RowKind::Child, "--eval true --tta mirror-translate", "test_accuracy"},
      {"host_data", true, RowKind::Child, "--data-on-device false --augment true"},
      {"graphs_fused_adam", true, RowKind::Child, "--optimizer adam --cuda-graphs true --fused-optimizer true"},
      {"graphs_fused_nesterov", true, RowKind::Child,
       "--optimizer sgd --lr 0.05 --momentum 0.9 --nesterov true --cuda-graphs true --fused-optimizer true"},
      {"graphs_bit_for_bit", true, RowKind::ChildPairGraphsOffOn, kSpeed94Options, "train_loss", "speed94"},
      {"allreduce_all_ranks", false, RowKind::AllRanks, "--optimizer sgd"},
      {"nccl_in_cuda_graph", true, RowKind::AllRanks, "--optimizer adam --cuda-graphs true --fused-optimizer true",
       "train_loss", "convnet", true},
  };
  return kRows;
}

// "--a 1 --b 2" as {"--a", "1", "--b", "2"}.
std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

struct RowResult {
  std::string status;  // PASS, FAIL or SKIP
  double seconds = 0;
  std::string text;  // the figure (PASS), the first error line (FAIL), the reason (SKIP)
};

RowResult pass(double seconds, const std::string& figure) { return {"PASS", seconds, figure}; }
RowResult fail(double seconds, const std::string& why) { return {"FAIL", seconds, why}; }
RowResult skip(const std::string& why) { return {"SKIP", 0, why}; }

// What every row of this rank shares: the device, the data, the sizes.
struct Bench {
  std::string program;  // this executable, which each child runs
  std::string folder;   // the rank's private temporary folder
  std::string data;     // its synthetic data file
  World world;
  Placement placement;
  std::string gpu_skip;      // why GPU rows skip here; "" on a GPU
  std::string child_device;  // CUDA_VISIBLE_DEVICES of a child: this rank's GPU alone
  int batch = 32;
  int steps = 4;
  int test_images = 256;
  const RunConfig* options = nullptr;  // the command line's --threads, --comm-timeout, --startup-timeout
  std::string fail_row;                // the test hook's row
};

// The rank's private folder, removed when the self-test ends, also by an
// exception.
class TempFolder {
 public:
  TempFolder() : path_(paths::make_temp_directory("cifar_mpi-self-test-")) {}
  ~TempFolder() { paths::remove_all(path_); }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string one_cell(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\t' || c == '\n' || c == '|'; }, ' ');
  return text.size() > kCellLength ? text.substr(0, kCellLength) : text;
}

// The line of a child's log that says why it failed: the first "error:" (the
// program's, the loader's "symbol lookup error:"), else an uncaught
// exception's "what():", else the last line written.
std::string first_error_line(const std::string& log) {
  std::ifstream in(log);
  std::string line, what, last;
  while (std::getline(in, line)) {
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("error:") != std::string::npos) return one_cell(line);
    if (what.empty() && lower.find("what():") != std::string::npos) what = line;
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return one_cell(!what.empty() ? what : (last.empty() ? "(no output)" : last));
}

// The options of one training run of `row`, its files named `name`.
std::vector<std::string> training_args(const Bench& bench, const Row& row, const std::string& name) {
  const RunConfig& given = *bench.options;
  std::vector<std::string> args =
      words(strprintf("--epochs 1 --max-steps %d --batch-size %d --device %s --log-every 1 --comm-timeout %g "
                      "--startup-timeout %g",
                      bench.steps, bench.batch, bench.placement.device.is_cuda() ? "cuda" : "cpu",
                      given.comm.timeout_seconds, given.comm.startup_timeout_seconds));
  // The paths as words of their own: $TMPDIR may hold a space.
  args.insert(args.end(), {"--data", bench.data, "--output", paths::join(bench.folder, name + ".pth"), "--metrics",
                           paths::join(bench.folder, name + ".jsonl")});
  if (given.runtime.threads > 0) args.insert(args.end(), {"--threads", std::to_string(given.runtime.threads)});
  const std::vector<std::string> own = words(row.options);
  if (std::find(own.begin(), own.end(), "--eval") == own.end()) args.insert(args.end(), {"--eval", "false"});
  args.insert(args.end(), own.begin(), own.end());
  return args;
}

bool is_child_hidden(const std::string& name) {
  // The launcher's (the child is a world of its own) and the test-only fault
  // injections, meant for a rank of the job (the test hook sets one for its row).
  return is_launcher_variable(name) || name == "CIFAR_FAULT_INJECT" || name == "CIFAR_STARTUP_FAULT" ||
         name == kSelfTestFailRowVariable;
}

// A child's environment: this rank's without what it must not see, and on a
// GPU this rank's GPU alone.
std::vector<std::string> child_environment(const Bench& bench) {
  std::vector<std::string> env = environment_without(is_child_hidden);
  if (bench.child_device.empty()) return env;
  const std::string name = "CUDA_VISIBLE_DEVICES=";
  env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(name, 0) == 0; }),
            env.end());
  env.push_back(name + bench.child_device);
  return env;
}

// One child training run of `row`; "" when it trained, else why not.
std::string run_training_child(const Bench& bench, const Row& row, const std::string& name,
                               const std::vector<std::string>& extra = {}) {
  ChildSpec spec;
  spec.argv = {bench.program};
  const auto args = training_args(bench, row, name);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
  spec.env = child_environment(bench);
  if (bench.fail_row == row.name) spec.env.emplace_back("CIFAR_FAULT_INJECT=rank=0,step=1,kind=throw");
  spec.log = paths::join(bench.folder, name + ".log");
  spec.time_limit_s = kRowTimeLimitSeconds;
  const ChildOutcome outcome = run_child(spec);
  if (outcome.ok()) return "";
  if (!outcome.start_error.empty()) return outcome.start_error;
  return outcome.text() + ": " + first_error_line(spec.log);
}

// "train_loss 2.26 after 4 steps"; "" when the run wrote no such figure.
std::string figure_of(const Bench& bench, const Row& row, const std::string& name) {
  const auto value = last_metric(paths::join(bench.folder, name + ".jsonl"), row.figure);
  if (!value) return "";
  return strprintf("%s %.4g after %d steps", row.figure, *value, bench.steps);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

RowResult run_child_row(const Bench& bench, const Row& row) {
  const auto start = std::chrono::steady_clock::now();
  const std::string error = run_training_child(bench, row, row.name);
  if (!error.empty()) return fail(seconds_since(start), error);
  const std::string figure = figure_of(bench, row, row.name);
  if (figure.empty()) return fail(seconds_since(start), std::string("the run wrote no finite ") + row.figure);
  return pass(seconds_since(start), figure);
}

// Graphs off, then on, with deterministic kernels: the two models must hold
// the same bits.
RowResult run_graphs_pair(const Bench& bench, const Row& row) {
  const auto start = std::chrono::steady_clock::now();
  const std::string off = std::string(row.name) + "_off", on = std::string(row.name) + "_on";
  for (const auto& [name, graphs] : {std::pair{off, "false"}, std::pair{on, "true"}}) {
    const std::string error = run_training_child(bench, row, name, {"--cuda-graphs", graphs});
    if (!error.empty()) return fail(seconds_since(start), "graphs " + std::string(graphs) + ": " + error);
  }
  ModelComparison comparison;
  try {
    const auto a = make_model(row.model), b = make_model(row.model);
    load_state_dict(*a, paths::join(bench.folder, off + ".pth"));
    load_state_dict(*b, paths::join(bench.folder, on + ".pth"));
    comparison = compare_models(*a, *b);
  } catch (const std::exception& e) {  // a model file the runs wrote that does not load: this row's failure
    return fail(seconds_since(start), e.what());
  }
  if (!comparison.same(0))
    return fail(seconds_since(start),
                strprintf("graphs off and on differ: largest relative difference %g%s", comparison.largest,
                          comparison.finite ? "" : ", and a model holds NaN or infinity"));
  return pass(seconds_since(start), strprintf("equal bit for bit, graphs off and on, %d steps", bench.steps));
}

// Why `row` does not run on this rank, "" when it does.
std::string skip_reason(const Bench& bench, const Row& row) {
  if (row.gpu_only && !bench.gpu_skip.empty()) return bench.gpu_skip;
  if (row.kind == RowKind::AllRanks && bench.world.size < 2) return "needs 2 or more ranks";
  if (row.needs_nccl && bench.placement.backend != "nccl")
    return "needs the NCCL backend (a GPU per rank), not " + bench.placement.backend;
  return "";
}

RowResult run_single_rank_row(const Bench& bench, const Row& row) {
  const std::string why = skip_reason(bench, row);
  if (!why.empty()) return skip(why);
  if (row.kind == RowKind::ChildPairGraphsOffOn) return run_graphs_pair(bench, row);
  return run_child_row(bench, row);
}

// A multi-rank row: one training run over every rank of the job, in this
// process. A failure every rank agrees on (the start-up's) is this row's
// FAIL; a failure of one rank alone ends the job, as in training.
RowResult run_all_ranks_row(const MpiEnvironment& env, const Bench& bench, const Row& row) {
  const std::string why = skip_reason(bench, row);
  if (!why.empty()) return skip(why);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> args = {bench.program};
  const auto options = training_args(bench, row, row.name);
  args.insert(args.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  int code = kExitOk;
  try {
    RunConfig config;
    agree_on_startup(env.comm(),
                     [&] { config = parse_config(static_cast<int>(argv.size()), argv.data(), registered_names()); });
    Trainer trainer(env, config);
    code = trainer.train();
  } catch (const AgreedFailure& e) {
    code = e.exit_code();
  }
  if (code != kExitOk)
    return fail(seconds_since(start), strprintf("exit code %d: the reason is printed above the table", code));
  if (bench.world.rank != 0) return pass(seconds_since(start), "");
  const std::string figure = figure_of(bench, row, row.name);
  if (figure.empty()) return fail(seconds_since(start), std::string("the run wrote no finite ") + row.figure);
  return pass(seconds_since(start), strprintf("%s on %d ranks, backend %s", figure.c_str(), bench.world.size,
                                              bench.placement.backend.c_str()));
}

// ---- every rank's results, on rank 0 -----------------------------------------

std::string serialize(const std::vector<RowResult>& results) {
  std::ostringstream out;
  for (const auto& r : results) out << r.status << '\t' << r.seconds << '\t' << one_cell(r.text) << '\n';
  return out.str();
}

std::vector<RowResult> deserialize(const std::string& text) {
  std::vector<RowResult> results;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    RowResult r;
    std::istringstream fields(line);
    std::string seconds;
    std::getline(fields, r.status, '\t');
    std::getline(fields, seconds, '\t');
    std::getline(fields, r.text);
    r.seconds = std::atof(seconds.c_str());
    results.push_back(r);
  }
  return results;
}

// One row over every rank: FAIL when any rank failed (naming the first, its
// host, and how many more), else PASS with the first passing rank's figure
// (a rank without a GPU skips a GPU row another rank passed), else rank 0's
// SKIP. The seconds are the slowest rank's.
RowResult combine(const std::vector<std::vector<RowResult>>& ranks, const std::vector<std::string>& hosts, size_t row) {
  RowResult combined = ranks[0][row];
  int failures = 0;
  std::optional<RowResult> first_pass, first_fail;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RowResult& one = ranks[r][row];
    combined.seconds = std::max(combined.seconds, one.seconds);
    if (one.status == "FAIL") {
      if (failures++ == 0) first_fail = fail(0, strprintf("rank %zu (%s): %s", r, hosts[r].c_str(), one.text.c_str()));
    } else if (one.status == "PASS" && !first_pass) {
      first_pass = one;
    }
  }
  const double seconds = combined.seconds;
  if (first_fail) {
    combined = *first_fail;
    if (failures > 1) combined.text += strprintf(" (and %d more rank(s))", failures - 1);
  } else if (first_pass) {
    combined = *first_pass;
  }
  combined.seconds = seconds;
  return combined;
}

// Every rank's results for rows [0, count), combined, on rank 0 (empty elsewhere).
std::vector<RowResult> gather_results(MPI_Comm comm, const std::vector<RowResult>& mine,
                                      const std::vector<std::string>& hosts) {
  const auto texts = gather_strings(comm, serialize(mine));
  if (texts.empty()) return {};
  std::vector<std::vector<RowResult>> ranks;
  for (const auto& text : texts) ranks.push_back(deserialize(text));
  std::vector<RowResult> combined;
  for (size_t row = 0; row < mine.size(); ++row) combined.push_back(combine(ranks, hosts, row));
  return combined;
}

// A Markdown table: readable as printed, and as a page where a script keeps it.
void print_table(const std::vector<RowResult>& results) {
  log::info(strprintf("| %-22s | %-6s | %6s | %s |", "row", "status", "s", "result"));
  log::info("|---|---|---|---|");
  for (size_t i = 0; i < results.size(); ++i) {
    const RowResult& r = results[i];
    log::info(strprintf("| %-22s | %-6s | %6.1f | %s |", rows()[i].name, r.status.c_str(), r.seconds, r.text.c_str()));
  }
}

// ---- the setting up ---------------------------------------------------------------

// CUDA_VISIBLE_DEVICES for a child on GPU `index` of this rank: that entry of
// the rank's own list (indices or UUIDs), or the index where it has none.
std::string visible_device(int index) {
  const std::vector<std::string> entries = granted_gpu_entries(std::getenv("CUDA_VISIBLE_DEVICES"));
  return index < static_cast<int>(entries.size()) ? entries[static_cast<size_t>(index)] : std::to_string(index);
}

// This rank's device as training would place it (collective): every rank
// agrees, so a request the node cannot meet (--device cuda without a GPU)
// ends every rank with training's message and exit code.
Placement place_this_rank(const MpiEnvironment& env, const RunConfig& config) {
  Placement placement;
  const Machine machine = probe_machine(env.comm());
  agree_on_startup(env.comm(),
                   [&] { placement = choose_placement(env.world(), "auto", config.runtime.device, machine); });
  return placement;
}

Bench make_bench(const MpiEnvironment& env, const RunConfig& config, const Placement& placement,
                 const std::string& folder) {
  Bench bench;
  bench.program = paths::executable();
  bench.folder = folder;
  bench.world = env.world();
  bench.placement = placement;
  bench.options = &config;
  const char* fail_row = std::getenv(kSelfTestFailRowVariable);
  bench.fail_row = fail_row ? fail_row : "";
  if (placement.device.is_cuda()) {
    bench.child_device = visible_device(placement.device.index());
    // A GPU's steps are cheap: enough of them for a graph's warm-up, capture and replays.
    bench.batch = 128;
    bench.steps = 8;
    bench.test_images = 1024;
  } else {
    bench.gpu_skip = config.runtime.device == DeviceRequest::Cpu ? "needs a GPU (--device cpu)" : "needs a GPU";
  }
  // Enough images for every rank's share of the multi-rank rows' steps; the
  // same seed on every rank gives every rank the same file.
  bench.data = paths::join(folder, "synthetic.h5");
  const int64_t train = static_cast<int64_t>(bench.batch) * bench.steps * bench.world.size;
  pack_cifar_data(make_synthetic_cifar(train, bench.test_images, 1), bench.data);
  return bench;
}

void print_header(const MpiEnvironment& env, const Bench& bench) {
  const World& w = env.world();
  const auto devices = gather_strings(
      env.comm(), strprintf("rank %d on %s: %s", w.rank, w.host.c_str(), bench.placement.device.str().c_str()));
  if (w.rank != 0) return;
  log::info(strprintf("self-test: %d rank(s) on %d node(s), %d optimiser steps of batch %d per row (rank 0's)", w.size,
                      w.num_nodes, bench.steps, bench.batch));
  for (const auto& line : cuda_stack_lines()) log::info("  " + line);
  for (const auto& line : devices) log::info("  " + line);
}

}  // namespace

int run_self_test(const MpiEnvironment& env, const RunConfig& config) {
  const World& w = env.world();
  const Placement placement = place_this_rank(env, config);
  std::optional<TempFolder> folder;
  Bench bench;
  agree_on_startup(env.comm(), [&] {
    folder.emplace();
    bench = make_bench(env, config, placement, folder->path());
  });
  // The start-up's clock ends here: the rows' children run under their own
  // limits, and a multi-rank row's training run arms the clock for its own
  // start-up (process/startup_deadline.hpp).
  end_startup();
  print_header(env, bench);
  const auto hosts = gather_strings(env.comm(), w.host);

  std::vector<RowResult> mine;
  for (const Row& row : rows())
    if (row.kind != RowKind::AllRanks) mine.push_back(run_single_rank_row(bench, row));
  std::vector<RowResult> table = gather_results(env.comm(), mine, hosts);

  const bool any_multi_rank = w.size >= 2;
  if (any_multi_rank && w.rank == 0) {
    log::info("the single-rank rows (each a child process of every rank):");
    print_table(table);
    log::info("the multi-rank rows, over all ranks of this job:");
  }
  std::vector<RowResult> multi;
  for (const Row& row : rows())
    if (row.kind == RowKind::AllRanks) multi.push_back(run_all_ranks_row(env, bench, row));
  const std::vector<RowResult> multi_table = gather_results(env.comm(), multi, hosts);
  table.insert(table.end(), multi_table.begin(), multi_table.end());

  int failed = 0;
  if (w.rank == 0) {
    int passed = 0, skipped = 0;
    for (const auto& r : table) (r.status == "PASS" ? passed : r.status == "FAIL" ? failed : skipped)++;
    log::info("self-test table:");
    print_table(table);
    log::info(strprintf("self-test: %d passed, %d failed, %d skipped%s", passed, failed, skipped,
                        failed ? "; each FAIL names the rank, its host and the first error line of its run" : ""));
  }
  MPI_CHECK(MPI_Bcast(&failed, 1, MPI_INT, 0, env.comm()));
  return failed ? kExitSelfTest : kExitOk;
}

}  // namespace cifar
