// cifar_mpi: parse the configuration, start MPI, then check the environment
// or train. The only place that catches: a failure on any rank is logged once
// and ends the whole job with a non-zero exit code, so no rank is left waiting.
#include "comm/factory.hpp"
#include "config/train_config.hpp"
#include "dist/agreement.hpp"
#include "dist/check_env.hpp"
#include "dist/device.hpp"
#include "dist/mpi_main.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace {

// Until the trainer lands: show the world and prove one all-reduce.
int run_demo(const cifar::MpiEnvironment& env, const cifar::TrainConfig& config) {
  using namespace cifar;
  Placement placement;
  agree_on_startup(env.comm(), [&] {
    placement = place_rank(env.world(), parse_backend(config.backend), parse_device(config.device));
  });
  auto comm = make_communicator(env.comm(), placement,
                                std::chrono::milliseconds(static_cast<long>(config.comm_timeout * 1000)));
  const World& w = env.world();
  log::rank_line(strprintf("local_rank=%d/%d node=%d/%d device=%s backend=%s", w.local_rank, w.local_size,
                           w.node_index, w.num_nodes, placement.device.str().c_str(), comm->name().c_str()));
  torch::Tensor t = torch::full({4}, static_cast<double>(w.rank + 1), torch::TensorOptions().device(placement.device));
  comm->all_reduce(t, ReduceOp::Sum);
  const double expected = w.size * (w.size + 1) / 2.0;
  log::info(strprintf("all_reduce(sum of rank+1) = %.0f (expected %.0f) on %d rank(s): %s", t[0].item<double>(),
                      expected, w.size, t[0].item<double>() == expected ? "OK" : "WRONG"));
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cifar;
  return run_mpi_main(argc, argv, [](MpiEnvironment& env, int argc, char** argv) {
    TrainConfig config;
    agree_on_startup(env.comm(), [&] { config = parse_config(argc, argv); });
    if (config.help) {
      if (env.world().rank == 0) std::fputs(config_help().c_str(), stdout);
      return kExitOk;
    }
    if (config.check_env) return run_check_env(env, parse_backend(config.backend), parse_device(config.device));
    return run_demo(env, config);
  });
}
