// allreduce_bench: nccl-tests-style bandwidth table for our Communicator next
// to a raw MPI_Allreduce on the same buffers. busbw = algbw * 2(n-1)/n is the
// figure of merit: it is comparable across world sizes and against the link.
//
//   mpirun -np 2 build/cpu/allreduce_bench [--min-bytes 4] [--max-bytes 256M] [--backend mpi|nccl]
#include <boost/program_options.hpp>

#include <iostream>

#include "comm/agreement.hpp"
#include "comm/backends.hpp"
#include "mpi/mpi_main.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace po = boost::program_options;
using namespace cifar;

namespace {

constexpr int kRounds = 5;

struct Options {
  size_t min_bytes = 4;
  size_t max_bytes = size_t{256} << 20;
  int warmup = 3;
  double seconds_per_size = 0.5;  // iterations are sized to take about this long
  std::string backend = "mpi";
  std::string device = "auto";
};

// Runs `op` `iters` times between barriers; returns the slowest rank's mean seconds.
template <typename Op>
double time_op(MPI_Comm comm, int iters, Op&& op) {
  MPI_CHECK(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) op();
  double elapsed = (MPI_Wtime() - t0) / iters;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm));
  return elapsed;
}

size_t parse_size(const std::string& s) {
  size_t mult = 1;
  std::string digits = s;
  const char last = s.empty() ? '\0' : s.back();
  if (last == 'K' || last == 'k') mult = size_t{1} << 10;
  if (last == 'M' || last == 'm') mult = size_t{1} << 20;
  if (last == 'G' || last == 'g') mult = size_t{1} << 30;
  if (mult != 1) digits.pop_back();
  try {
    return static_cast<size_t>(std::stoull(digits)) * mult;
  } catch (const std::exception&) {
    throw ConfigError("size '" + s + "' is not a number of bytes (e.g. 4, 64K, 256M)");
  }
}

Options parse(int argc, char** argv, bool* help) {
  Options o;
  std::string min_b = "4", max_b = "256M";
  po::options_description desc("allreduce_bench options");
  desc.add_options()("help,h", "print this help")("min-bytes", po::value(&min_b)->default_value(min_b),
                                                  "smallest message")(
      "max-bytes", po::value(&max_b)->default_value(max_b), "largest message (sizes double)")(
      "warmup", po::value(&o.warmup)->default_value(o.warmup), "untimed iterations per size")(
      "seconds", po::value(&o.seconds_per_size)->default_value(o.seconds_per_size), "target time per size")(
      "backend", po::value(&o.backend)->default_value(o.backend), "mpi | nccl")(
      "device", po::value(&o.device)->default_value(o.device), "auto | cpu | cuda");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + " (see --help)");
  }
  *help = vm.count("help") > 0;
  if (*help) std::cout << desc;
  o.min_bytes = std::max<size_t>(4, parse_size(min_b));
  o.max_bytes = parse_size(max_b);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  return run_mpi_main(argc, argv, [](MpiEnvironment& env_ref, int argc, char** argv) {
    MpiEnvironment* env = &env_ref;
    Options opt;
    bool help = false;
    agree_on_startup(env->comm(), [&] { opt = parse(argc, argv, &help); });
    if (help) return 0;
    Placement placement;
    agree_on_startup(env->comm(), [&] {
      placement = place_rank(env->comm(), env->world(), opt.backend, parse_choice<DeviceRequest>("device", opt.device));
    });
    auto comm = make_communicator(env->comm(), placement, std::chrono::minutes(5));
    const MPI_Comm raw = duplicate_comm(env->comm());
    const int n = env->world().size;
    const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;

    log::info(strprintf("# allreduce_bench: %d rank(s) on %d node(s), backend %s, device %s, float32 sum", n,
                        env->world().num_nodes, comm->name().c_str(), placement.device.str().c_str()));
    log::info("#                       ------ cifar Communicator ------   -------- raw MPI_Allreduce -------");
    log::info(
        "#       size     count    time(us)  algbw(GB/s)  busbw(GB/s)    time(us)  algbw(GB/s)  busbw(GB/s)   ratio");
    for (size_t bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= 2) {
      const int64_t count = static_cast<int64_t>(bytes / sizeof(float));
      torch::Tensor ours = torch::ones({count}, torch::TensorOptions().device(placement.device));
      torch::Tensor host = torch::ones({count});
      // Size the iteration count from one probe so every size takes about the target time.
      const double probe = time_op(env->comm(), 1, [&] { comm->all_reduce(ours, ReduceOp::Sum); });
      const int iters = static_cast<int>(std::clamp(opt.seconds_per_size / std::max(probe, 1e-7), 3.0, 2000.0));
      auto ours_once = [&] { comm->all_reduce(ours, ReduceOp::Sum); };
      auto raw_once = [&] {
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, host.data_ptr(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, raw));
      };
      for (int i = 0; i < opt.warmup; ++i) {
        ours_once();
        raw_once();
      }
      // Alternate the two in rounds and keep each one's best round: on a
      // shared machine, noise only ever adds time, and alternating exposes
      // both to the same conditions.
      double t_ours = 1e30, t_raw = 1e30;
      const int per_round = std::max(1, iters / kRounds);
      for (int round = 0; round < kRounds; ++round) {
        t_ours = std::min(t_ours, time_op(env->comm(), per_round, ours_once));
        t_raw = std::min(t_raw, time_op(env->comm(), per_round, raw_once));
      }
      const double alg_ours = static_cast<double>(bytes) / t_ours / 1e9;
      const double alg_raw = static_cast<double>(bytes) / t_raw / 1e9;
      log::info(strprintf("%12zu %9lld  %10.1f  %11.3f  %11.3f  %10.1f  %11.3f  %11.3f  %6.2f", bytes,
                          static_cast<long long>(count), t_ours * 1e6, alg_ours, alg_ours * bus_factor, t_raw * 1e6,
                          alg_raw, alg_raw * bus_factor, alg_ours / alg_raw));
    }
    log::info("# ratio = our busbw / raw MPI busbw");
    MPI_Comm raw_comm = raw;
    MPI_Comm_free(&raw_comm);
    return 0;
  });
}
