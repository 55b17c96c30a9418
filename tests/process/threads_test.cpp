// Thread-count policy: the counts follow from the options and the node alone
// (a table of cases), never from OMP_NUM_THREADS and its kin, which are
// named in the log as not used; and both pools are resized as decided.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "process/threads.hpp"
#include "support/scoped_env.hpp"

namespace cifar {
namespace {

using test::ScopedEnv;

struct Case {
  const char* what;
  ThreadInputs in;
  int intra_op;
  int blas;
  const char* intra_op_source;  // the start of the reason
  const char* blas_source;
};

// ThreadInputs{--threads, --blas-threads, bound CPUs, online CPUs, configured CPUs, ranks on the node, environment}
const std::vector<Case> kCases = {
    {"unbound ranks share the node", {0, 0, 8, 8, 8, 2, {}}, 4, 4, "automatic: the node's 8 CPUs / 2", "as intra-op"},
    {"more ranks than CPUs: one each", {0, 0, 2, 2, 2, 4, {}}, 1, 1, "automatic: the node's 2", "as intra-op"},
    {"a bound rank takes its CPUs", {0, 0, 3, 16, 16, 4, {}}, 3, 3, "automatic: the 3 CPU(s) this rank", "as intra-op"},
    {"--threads wins", {5, 0, 8, 8, 8, 2, {}}, 5, 5, "--threads 5", "as intra-op"},
    {"--blas-threads wins", {0, 3, 8, 8, 8, 2, {}}, 4, 3, "automatic", "--blas-threads 3"},
    {"-1: the node's configured CPUs, however bound",
     {0, -1, 1, 16, 16, 8, {}},
     1,
     16,
     "automatic: the 1 CPU",
     "--blas-threads -1: the node's 16 CPUs"},
    {"a launcher's or image's OMP_NUM_THREADS changes nothing",
     {0, -1, 2, 2, 2, 2, {"OMP_NUM_THREADS=1"}},
     1,
     2,
     "automatic: the node's 2",
     "--blas-threads -1"},
    {"nor OPENBLAS_NUM_THREADS or GOTO_NUM_THREADS",
     {0, 0, 8, 8, 8, 1, {"OPENBLAS_NUM_THREADS=1", "GOTO_NUM_THREADS=3"}},
     8,
     8,
     "automatic",
     "as intra-op"},
};

TEST(DecideThreadCounts, FromTheOptionsAndTheNodeAlone) {
  for (const auto& c : kCases) {
    const ThreadCounts counts = decide_thread_counts(c.in);
    EXPECT_EQ(counts.intra_op, c.intra_op) << c.what;
    EXPECT_EQ(counts.blas, c.blas) << c.what;
    EXPECT_EQ(counts.intra_op_source.rfind(c.intra_op_source, 0), 0u) << c.what << ": " << counts.intra_op_source;
    EXPECT_EQ(counts.blas_source.rfind(c.blas_source, 0), 0u) << c.what << ": " << counts.blas_source;
    EXPECT_EQ(counts.unused_environment, c.in.thread_environment) << c.what;
  }
}

TEST(DescribeThreadCounts, NamesTheReasonsAndTheVariablesNotUsed) {
  ThreadInputs in{0, -1, 2, 2, 2, 2, {"OMP_NUM_THREADS=1"}};
  EXPECT_EQ(describe_thread_counts(decide_thread_counts(in)),
            "intra-op 1 (automatic: the node's 2 CPUs / 2 rank(s) on it), OpenBLAS 2 "
            "(--blas-threads -1: the node's 2 CPUs, as the recipe's processes); not used: OMP_NUM_THREADS=1 "
            "(--threads and --blas-threads set the counts)");
  in.thread_environment.clear();
  EXPECT_EQ(describe_thread_counts(decide_thread_counts(in)).find("not used"), std::string::npos);
}

TEST(ProbeThreadInputs, ThisProcessWhateverItsEnvironment) {
  RuntimeConfig runtime;
  runtime.blas_threads = -1;
  World world;
  world.local_size = 2;
  ThreadCounts without, with;
  {
    ScopedEnv env({{"OMP_NUM_THREADS", std::nullopt},
                   {"OPENBLAS_NUM_THREADS", std::nullopt},
                   {"GOTO_NUM_THREADS", std::nullopt}});
    without = decide_thread_counts(probe_thread_inputs(runtime, world));
    EXPECT_TRUE(without.unused_environment.empty());
  }
  {
    ScopedEnv env({{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}, {"GOTO_NUM_THREADS", std::nullopt}});
    with = decide_thread_counts(probe_thread_inputs(runtime, world));
    EXPECT_EQ(with.unused_environment, (std::vector<std::string>{"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1"}));
  }
  EXPECT_EQ(with.intra_op, without.intra_op);
  EXPECT_EQ(with.blas, without.blas);
}

TEST(ApplyThreadCount, SizesTorchsAndOpenBlassPools) {
  using GetThreads = int (*)();
  auto openblas_threads = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!openblas_threads) GTEST_SKIP() << "this process's BLAS is not OpenBLAS";
  apply_thread_count(1, 2);
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_EQ(openblas_threads(), 2) << "OpenBLAS's pool is set apart from the intra-op pool";
  apply_thread_count(1, 1);
  EXPECT_EQ(openblas_threads(), 1);
}

}  // namespace
}  // namespace cifar
